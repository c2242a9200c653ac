package inspect

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/ptekit/ptekit/pte"
)

// WriteJSON writes the document Build makes of f to w, byte for byte as
// Encode writes it, without holding the document: the program's plans are
// converted and written one at a time, so that a program opened with
// pte.OpenOptions.LazyPlans costs its region, its delegates and one
// method, not a converted program many times the region. (The delegates
// come before the program in the document and are read, with their
// problems, before anything is written: an error reading them leaves w
// untouched, as Build's does.)
//
// It returns the document without its delegates and program: the head,
// the problems and the external data, for the caller to judge. An error
// once writing has begun (w's, in practice) comes with that document too,
// so that a caller can tell that w may hold part of the text; before, the
// document is nil.
func WriteJSON(w io.Writer, f *pte.File, opts *Options) (*Document, error) {
	st, err := newStream(f, opts, nil, true)
	if err != nil {
		return nil, err
	}
	// The delegates, encoded compact as they come: a few hundred bytes
	// each, where their values are several times that.
	jw := newJSONWriter()
	var dels bytes.Buffer
	n := 0
	if err := st.EachDelegate(func(*MethodView) error { return nil }, func(_ *MethodView, d *Delegate) error {
		b, err := jw.compact(d)
		if err != nil {
			return err
		}
		if n > 0 {
			dels.WriteByte(',')
		}
		dels.Write(b)
		n++
		return nil
	}); err != nil {
		return nil, err
	}
	doc := st.Document()
	c := converter{hash: st.b.opts.Hash}
	// The program member, its plans left out (not converted, for an eager
	// File either): they are written between its "execution_plan"
	// brackets as they are converted.
	rest := *f.Program
	rest.ExecutionPlan = nil
	prog := c.program(&rest)
	prog.ExecutionPlan = []*ExecutionPlan{}
	progJSON, err := jw.compact(prog)
	if err != nil {
		return nil, err
	}
	progHead, progTail, err := cutMember(progJSON, `"execution_plan":[]`)
	if err != nil {
		return nil, err
	}
	// The document's other members, encoded once in the Document's own
	// member order; the delegates and the program go between them.
	head := *doc
	head.Delegates, head.Program = nil, nil
	headJSON, err := jw.compact(&head)
	if err != nil {
		return nil, err
	}
	docHead, docTail, err := cutMember(headJSON, `"delegates":null,"program":null`)
	if err != nil {
		return nil, err
	}

	ind := &indenter{w: bufio.NewWriterSize(w, 64<<10)}
	put := func(b []byte) { ind.Write(b) }
	put(docHead)
	put([]byte(`"delegates":[`))
	put(dels.Bytes())
	put([]byte(`],"program":`))
	put(progHead)
	put([]byte(`"execution_plan":[`))
	method := st.b.opts.Method
	first := true
	for i := range f.NumPlans() {
		if method != "" && f.PlanName(i) != method {
			continue // not decoded
		}
		ep := f.Plan(i) // as Build's, whether the File decoded it at open or now
		if ep == nil {
			continue
		}
		b, err := jw.compact(c.plan(ep))
		if err != nil {
			return doc, err
		}
		if !first {
			put([]byte{','})
		}
		first = false
		put(b)
	}
	put([]byte(`]`))
	put(progTail)
	put(docTail)
	put([]byte("\n"))
	if err := ind.w.Flush(); err != nil {
		return doc, err
	}
	return doc, nil
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

// cutMember returns copies of the compact JSON b before and after member,
// the text of a member left empty for the caller to write in its place.
// The member's first occurrence is the one meant: quotes inside strings
// are escaped, so its text can only be a member.
func cutMember(b []byte, member string) (before, after []byte, err error) {
	before, after, ok := bytes.Cut(b, []byte(member))
	if !ok {
		return nil, nil, fmt.Errorf("inspect: internal error: no %s in the JSON %.40q", member, b)
	}
	return bytes.Clone(before), bytes.Clone(after), nil
}
