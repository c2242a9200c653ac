package inspect

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"iter"
	"reflect"
	"strings"

	"github.com/ptekit/ptekit/pte"
)

// WriteJSON writes the document Build makes of f to w, byte for byte as
// Encode writes it, without holding the document: the program's plans are
// fetched and written one at a time. The delegates are read, with their
// problems, before anything is written: an error reading them leaves w
// untouched.
//
// It returns the document without its delegates and program: the head,
// the problems and the external data. An error once writing has begun
// comes with that document too, so that a caller can tell that w may hold
// part of the text; before, the document is nil.
func WriteJSON(w io.Writer, f *pte.File, opts *Options) (*Document, error) {
	st, err := newStream(f, opts, nil, true)
	if err != nil {
		return nil, err
	}
	// The delegates, encoded compact as they come.
	jw := newJSONWriter()
	var dels bytes.Buffer
	if err := st.EachDelegate(func(*MethodView) error { return nil }, func(_ *MethodView, d *Delegate) error {
		b, err := jw.compact(d)
		if err != nil {
			return err
		}
		if dels.Len() > 0 {
			dels.WriteByte(',')
		}
		dels.Write(b)
		return nil
	}); err != nil {
		return nil, err
	}
	doc := st.Document()
	doc.Program = &Program{Program: f.Program, Hash: st.b.opts.Hash}
	method := st.b.opts.Method
	plans := func(yield func(int, *pte.ExecutionPlan) bool) {
		for i := range f.Program.NumPlans() {
			if method != "" && f.Program.PlanName(i) != method {
				continue // not decoded
			}
			if ep := f.Program.Plan(i); ep != nil && !yield(i, ep) {
				return
			}
		}
	}
	// No delegates: [], not doc.Delegates' null.
	err = writeDocument(w, doc, nonNil(dels.Bytes()), plans)
	doc.Program = nil
	return doc, err
}

// writeDocument writes doc to w as Encode does: its members in the order
// of Document's fields, each encoded by encoding/json but the delegates,
// dels (their compact JSON without the brackets) when not nil, and the
// program, written by modelWriter with the plans plans gives (its own when
// nil).
func writeDocument(w io.Writer, doc *Document, dels []byte, plans iter.Seq2[int, *pte.ExecutionPlan]) error {
	ind := &indenter{w: bufio.NewWriterSize(w, 64<<10)}
	jw := newJSONWriter()
	mw := &modelWriter{out: ind, plans: plans}
	if doc.Program != nil {
		mw.hash = doc.Program.Hash
	}
	rv := reflect.ValueOf(doc).Elem()
	rt := rv.Type()
	mw.buf = append(mw.buf, '{')
	n := 0
	for i := range rt.NumField() {
		name, opts, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		fv := rv.Field(i)
		if (opts == "omitempty" || opts == "omitzero") && fv.IsZero() { // Document's are pointers
			continue
		}
		if n > 0 {
			mw.buf = append(mw.buf, ',')
		}
		n++
		mw.buf = appendString(mw.buf, name)
		mw.buf = append(mw.buf, ':')
		switch {
		case name == "delegates" && dels != nil:
			mw.buf = append(mw.buf, '[')
			mw.raw(dels)
			mw.buf = append(mw.buf, ']')
		case name == "program":
			if doc.Program == nil || doc.Program.Program == nil {
				mw.buf = append(mw.buf, "null"...)
			} else {
				mw.value(reflect.ValueOf(doc.Program.Program), false)
			}
		default:
			b, err := jw.compact(fv.Interface())
			if err != nil {
				return err
			}
			mw.raw(b)
		}
		mw.maybeFlush()
	}
	mw.buf = append(mw.buf, "}\n"...)
	if err := mw.flush(); err != nil {
		return err
	}
	return ind.w.Flush()
}

// jsonWriter encodes values compact as Encode does (no HTML escaping),
// one at a time, reusing its buffer.
type jsonWriter struct {
	buf bytes.Buffer
	enc *json.Encoder
}

func newJSONWriter() *jsonWriter {
	jw := &jsonWriter{}
	jw.enc = json.NewEncoder(&jw.buf)
	jw.enc.SetEscapeHTML(false)
	return jw
}

// compact returns v's compact JSON, valid until the next call.
func (jw *jsonWriter) compact(v any) ([]byte, error) {
	jw.buf.Reset()
	if err := jw.enc.Encode(v); err != nil {
		return nil, err
	}
	b := jw.buf.Bytes()
	return b[:len(b)-1], nil // Encode ends the value with a newline
}
