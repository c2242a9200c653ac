package inspect

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"iter"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/ptekit/ptekit/pte"
)

// The JSON form of the Program table is written by one walker over the pte
// model (modelWriter), not by a mirror of the schema's types: a table is an
// object of its Go fields in order (the model keeps the schema's field
// order), named by their schema names (pte.SchemaField). Beyond JSON's own
// kinds the walker knows:
//
//   - an enum (a type with Known and String, package pte's enums) is its
//     member name, or its number when the schema has no name for it;
//   - a float64 is a Float;
//   - a byte vector is summarised as {"size", "sha256"} (sha256 with
//     hashing on), but for a list of numbers (pte.SchemaField), which is
//     written as such;
//   - a string listed in its table's Absent field (and empty) is null;
//     Absent itself is not written;
//   - a union (an interface field NAME) is two members, "NAME_type" (the
//     tag, "NONE" for none) and NAME (the member table, null for NONE,
//     for a tag without its table and for a tag the schema does not know,
//     whose tag is then written as a number).
//
// Slices keep the absent (null) / empty ([]) distinction of package pte.
// The diff opens model values a level at a time (node.opened in diff.go);
// a rule for tables, lists or unions added here goes there too
// (TestModelNodeIsTheJSONForm).

// unknownMembers are the union member types that stand for a tag the
// schema does not know; their Tag field holds it.
var unknownMembers = map[reflect.Type]bool{
	reflect.TypeFor[pte.UnknownValue]():       true,
	reflect.TypeFor[pte.UnknownInstruction](): true,
}

// Program is the JSON form of a pte.Program: its MarshalJSON writes the
// program with modelWriter. Build's document holds the methods it
// selected as its plans; the tables are the File's own, not copies.
type Program struct {
	*pte.Program
	// Hash adds the SHA-256 of each byte vector to its summary.
	Hash bool
}

// MarshalJSON writes the program's JSON form.
func (p Program) MarshalJSON() ([]byte, error) {
	return modelJSON{v: p.Program, hash: p.Hash}.MarshalJSON()
}

// modelJSON is a model value (a table, a vector of them, a scalar) whose
// JSON form is modelWriter's, for the views that show a part of a program;
// numbers says that a byte vector lists its numbers, hash that byte vectors
// carry their SHA-256.
type modelJSON struct {
	v             any
	numbers, hash bool
}

// MarshalJSON implements json.Marshaler.
func (m modelJSON) MarshalJSON() ([]byte, error) {
	if m.v == nil {
		return []byte("null"), nil
	}
	w := &modelWriter{hash: m.hash}
	w.value(reflect.ValueOf(m.v), m.numbers)
	return w.buf, nil
}

// unionMember is the JSON form of a union's member as the program shows
// it: null for none, a tag without its table and a tag the schema does not
// know.
func unionMember(member any) modelJSON {
	v := reflect.ValueOf(member)
	if isNil(member) || unknownMembers[v.Type().Elem()] {
		return modelJSON{}
	}
	return modelJSON{v: member}
}

// modelWriter appends the compact JSON form of model values to buf,
// handing it to out (when set) whenever it grows past flushAt.
type modelWriter struct {
	buf  []byte
	out  io.Writer
	err  error // out's first error
	hash bool
	// plans, when set, gives the plans of the Program written, in place
	// of its own (a document written plan by plan, some left out).
	plans iter.Seq2[int, *pte.ExecutionPlan]
	// sums are the digests of the larger byte vectors hashed, by where
	// their bytes are, so that aliased bytes are hashed once. hashed counts
	// the bytes hashed.
	sums   map[bytesID][sha256.Size]byte
	hashed int64
}

// memoFrom is the size from which modelWriter remembers a vector's digest.
const memoFrom = 4 << 10

const flushAt = 32 << 10

// flush hands buf to out, if any, and returns out's first error.
func (w *modelWriter) flush() error {
	if w.out != nil && len(w.buf) > 0 && w.err == nil {
		_, w.err = w.out.Write(w.buf)
		w.buf = w.buf[:0]
	}
	return w.err
}

// raw appends b, JSON text, handing a long one to out as it is rather
// than copying it into buf.
func (w *modelWriter) raw(b []byte) {
	if w.out == nil || len(b) < flushAt {
		w.buf = append(w.buf, b...)
		return
	}
	if w.flush() == nil {
		_, w.err = w.out.Write(b)
	}
}

// maybeFlush flushes once buf holds flushAt bytes.
func (w *modelWriter) maybeFlush() {
	if len(w.buf) >= flushAt {
		w.flush() //nolint:errcheck // kept in err
	}
}

var enumType = reflect.TypeFor[schemaEnum]()

// value appends v; numbers says that a byte vector lists its numbers.
func (w *modelWriter) value(v reflect.Value, numbers bool) {
	t := v.Type()
	if t.Implements(enumType) {
		w.enum(v)
		return
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			w.buf = append(w.buf, "null"...)
			return
		}
		w.value(v.Elem(), numbers)
	case reflect.Struct:
		w.object(v)
	case reflect.Slice:
		if v.IsNil() {
			w.buf = append(w.buf, "null"...)
			return
		}
		if t.Elem().Kind() == reflect.Uint8 && !numbers {
			w.bytes(v.Bytes())
			return
		}
		w.buf = append(w.buf, '[')
		for i := range v.Len() {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			w.value(v.Index(i), numbers)
			w.maybeFlush()
		}
		w.buf = append(w.buf, ']')
	case reflect.String:
		w.buf = appendString(w.buf, v.String())
	case reflect.Bool:
		w.buf = strconv.AppendBool(w.buf, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		w.number(v)
	case reflect.Float32, reflect.Float64:
		w.buf = appendFloat(w.buf, v.Float())
	default:
		panic("inspect: the model has a " + t.String() + ", which the JSON form does not know")
	}
}

// enum appends an enum value: its name, or its number when unknown.
func (w *modelWriter) enum(v reflect.Value) {
	if e := v.Interface().(schemaEnum); e.Known() {
		w.buf = appendString(w.buf, e.String())
		return
	}
	w.number(v)
}

// number appends an integer value in decimal.
func (w *modelWriter) number(v reflect.Value) {
	if v.CanInt() {
		w.buf = strconv.AppendInt(w.buf, v.Int(), 10)
	} else {
		w.buf = strconv.AppendUint(w.buf, v.Uint(), 10)
	}
}

// bytes appends the summary of a byte vector.
func (w *modelWriter) bytes(b []byte) {
	w.buf = append(w.buf, `{"size":`...)
	w.buf = strconv.AppendInt(w.buf, int64(len(b)), 10)
	if w.hash {
		sum := w.sum(b)
		w.buf = append(w.buf, `,"sha256":"`...)
		w.buf = hex.AppendEncode(w.buf, sum[:])
		w.buf = append(w.buf, '"')
	}
	w.buf = append(w.buf, '}')
}

// sum returns the SHA-256 of b, of the larger vectors once for their bytes.
func (w *modelWriter) sum(b []byte) [sha256.Size]byte {
	if len(b) < memoFrom {
		w.hashed += int64(len(b))
		return sha256.Sum256(b)
	}
	id := bytesOf(constSource{inline: true, mem: b, n: int64(len(b))})
	if s, ok := w.sums[id]; ok {
		return s
	}
	if w.sums == nil {
		w.sums = map[bytesID][sha256.Size]byte{}
	}
	w.hashed += int64(len(b))
	s := sha256.Sum256(b)
	w.sums[id] = s
	return s
}

// object appends a table.
func (w *modelWriter) object(v reflect.Value) {
	fields := tableFields(v.Type())
	w.buf = append(w.buf, '{')
	for i, f := range fields.list {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		fv := v.Field(f.index)
		if f.union {
			w.union(f, fv)
			continue
		}
		w.buf = append(w.buf, f.key...)
		switch {
		case f.plans:
			w.planList(v.Addr().Interface().(*pte.Program))
		case fields.isNull(v, f):
			w.buf = append(w.buf, "null"...)
		default:
			w.value(fv, f.numbers)
		}
	}
	w.buf = append(w.buf, '}')
}

// planList appends the plans of p, or those w.plans gives (a list that is
// present, maybe empty), handing each to out as it is written.
func (w *modelWriter) planList(p *pte.Program) {
	plans := w.plans
	if plans == nil {
		if !p.HasPlans() {
			w.buf = append(w.buf, "null"...)
			return
		}
		plans = p.Plans()
	}
	w.buf = append(w.buf, '[')
	n := 0
	for _, ep := range plans {
		if n > 0 {
			w.buf = append(w.buf, ',')
		}
		n++
		w.value(reflect.ValueOf(ep), false)
		w.flush() //nolint:errcheck // kept in err
	}
	w.buf = append(w.buf, ']')
}

// union appends the two members of union field f, whose value is v.
func (w *modelWriter) union(f *tableField, v reflect.Value) {
	tag, m := unionParts(v)
	w.buf = append(w.buf, f.typeKey...)
	if tag.IsValid() {
		w.value(tag, false)
	} else {
		w.buf = append(w.buf, `"NONE"`...)
	}
	w.buf = append(w.buf, ',')
	w.buf = append(w.buf, f.key...)
	if !m.IsValid() {
		w.buf = append(w.buf, "null"...)
		return
	}
	w.object(m)
}

// unionParts returns the tag of union value v (an enum; invalid for NONE)
// and its member table (invalid when the JSON form shows null).
func unionParts(v reflect.Value) (tag, member reflect.Value) {
	if v.IsNil() {
		return tag, member
	}
	m := v.Elem() // a pointer to a member type
	switch {
	case unknownMembers[m.Type().Elem()] && m.IsNil():
		return tag, member // a nil unknown member has lost its tag
	case unknownMembers[m.Type().Elem()]:
		return m.Elem().FieldByName("Tag"), member
	case m.IsNil():
		// The member types' tag methods do not read their receiver.
		return v.Method(0).Call(nil)[0], member
	}
	return v.Method(0).Call(nil)[0], m.Elem()
}

// tableField is one written field of a model table.
type tableField struct {
	index   int
	name    string // schema name
	key     string // `"name":`
	typeKey string // `"name_type":` for a union
	union   bool
	numbers bool // a byte vector of numbers
	plans   bool // the Program's plans, read through its methods (or modelWriter.plans)
}

type tableLayout struct {
	list   []*tableField
	absent int // index of the Absent field, -1 when none
}

// isNull reports whether field f of table v is a string its Absent field
// lists (and empty), which is written null.
func (l *tableLayout) isNull(v reflect.Value, f *tableField) bool {
	fv := v.Field(f.index)
	return l.absent >= 0 && fv.Kind() == reflect.String && fv.Len() == 0 &&
		slices.Contains(v.Field(l.absent).Interface().([]string), f.name)
}

var layouts sync.Map // reflect.Type -> *tableLayout

// tableFields returns how the model struct type t is written.
func tableFields(t reflect.Type) *tableLayout {
	if l, ok := layouts.Load(t); ok {
		return l.(*tableLayout)
	}
	l := &tableLayout{absent: -1}
	for i := range t.NumField() {
		name, numbers, ok := pte.SchemaField(t, i)
		if !ok {
			if t.Field(i).Name == "Absent" {
				l.absent = i
			}
			continue
		}
		l.list = append(l.list, &tableField{
			index:   i,
			name:    name,
			key:     strconv.Quote(name) + ":",
			typeKey: strconv.Quote(name+"_type") + ":",
			union:   t.Field(i).Type.Kind() == reflect.Interface,
			numbers: numbers,
			plans:   t == reflect.TypeFor[pte.Program]() && name == "execution_plan",
		})
	}
	layouts.Store(t, l)
	return l
}

// appendString appends s quoted as encoding/json writes it without HTML
// escaping: invalid UTF-8 as U+FFFD, U+2028 and U+2029 escaped.
func appendString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// isNil reports whether a union member is absent: a nil interface or a nil
// pointer of a member type (a damaged file's tag without its table).
func isNil(member any) bool {
	if member == nil {
		return true
	}
	v := reflect.ValueOf(member)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
