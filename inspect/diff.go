package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ptekit/ptekit/internal/jsontree"
	"github.com/ptekit/ptekit/pte"
)

// Kind says how an element differs between the two sides.
type Kind string

// The kinds of Difference.
const (
	Added   Kind = "added"   // present only in the second value
	Removed Kind = "removed" // present only in the first value
	Changed Kind = "changed" // present in both, with different values
)

// Difference is one difference between two JSON forms.
type Difference struct {
	// Path locates the value, e.g. "program.execution_plan[0].values[3].val.sizes[1]".
	Path string `json:"path"`
	// Kind is Added, Removed or Changed.
	Kind Kind `json:"kind"`
	// A and B are the values on each side as JSON text; "" when the member
	// or element is absent on that side.
	A json.RawMessage `json:"a,omitempty"`
	B json.RawMessage `json:"b,omitempty"`
}

// String formats the difference as "PATH: A -> B", with an absent side
// written as "(absent)" and long values shortened; when both values are
// long, they are shown from a little before the first byte where they
// differ.
func (d Difference) String() string {
	from := 0
	if len(d.A) > shortLen && len(d.B) > shortLen {
		n := 0
		for n < len(d.A) && n < len(d.B) && d.A[n] == d.B[n] {
			n++
		}
		from = max(0, n-shortLen/3)
	}
	return d.Path + ": " + short(d.A, from) + " -> " + short(d.B, from)
}

// shortLen is the longest value String writes in full.
const shortLen = 72

// short returns v, or at most shortLen bytes of it starting near byte from,
// with "..." where it was cut.
func short(v json.RawMessage, from int) string {
	if len(v) == 0 {
		return "(absent)"
	}
	s := string(v)
	if len(s) <= shortLen {
		return s
	}
	prefix := ""
	if from > 0 {
		for from < len(s) && !utf8.RuneStart(s[from]) {
			from++
		}
		s, prefix = s[from:], "..."
	}
	if len(prefix)+len(s) <= shortLen {
		return prefix + s
	}
	end := shortLen - 3 - len(prefix)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return prefix + s[:end] + "..."
}

// Diff compares the JSON forms of a and b (any values that encoding/json can
// marshal: Documents, Programs, or decoded JSON) member by member and
// returns every difference, in document order. Numbers are compared by
// value, so 1.0 equals 1; object member order is ignored. An element
// present on one side only is one difference whose other side is absent.
func Diff(a, b any) ([]Difference, error) {
	na, err := toNode(a)
	if err != nil {
		return nil, fmt.Errorf("inspect: diff: first value: %w", err)
	}
	nb, err := toNode(b)
	if err != nil {
		return nil, fmt.Errorf("inspect: diff: second value: %w", err)
	}
	var d differ
	d.walk("", na, nb)
	return d.out, nil
}

// node is a JSON value as the diff compares it, with its object members
// in order.
type node struct {
	// kind is 'o' object, 'a' array, 's' string, 'n' number, 'b' bool,
	// 'z' null, 'm' for a list matched by key: written as an object, its
	// members are compared by key and named "path[key]"; or 'r' for a
	// model value, which stands for the node it opens to.
	kind byte
	// union marks an object holding one union member under its tag name:
	// when the tags differ, the whole value is one difference.
	union bool
	// numbers, in a node of kind 'r', says that a byte vector lists its
	// numbers (pte.SchemaField).
	numbers bool
	keys    []string
	obj     map[string]*node
	arr     []*node
	str     string // string value, number text, "true"/"false"
	// repeats counts the keys setUnique has seen more than once.
	repeats map[string]int
	// then, in a node of kind 'r', rewrites the object or list the node
	// opens to (the view of a method names unions by their member, say).
	then func(*node) *node
	// rv, in a node of kind 'r', is the model value (a table, a list, a
	// union) this node stands for, as mw writes it (modelWriter); the walk
	// opens it (open) only where the two sides differ (sameModel).
	rv reflect.Value
	mw *modelWriter
}

// toNode returns the JSON form of v as a node tree: v itself when it is
// raw JSON (json.RawMessage or []byte), else what json.Marshal makes of it.
func toNode(v any) (*node, error) {
	switch x := v.(type) {
	case json.RawMessage:
		return parse(x)
	case []byte:
		return parse(x)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return parse(data)
}

// parse reads JSON text as nodes; for malformed text the error is
// encoding/json's message.
func parse(data []byte) (*node, error) {
	b := &nodeBuilder{}
	values, names := jsontree.Bounds(data)
	b.nodes.Hint(values)
	b.elems.Hint(values - 1)
	b.keys.Hint(names)
	n, _, err := jsontree.Build[*node](data, jsontree.Options{MaxDepth: maxDepth}, b)
	if err == nil {
		return n, nil
	}
	if _, deep := err.(*jsontree.LimitError); deep && json.Valid(data) {
		return nil, errTooDeep
	}
	var x any
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&x); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("trailing data after JSON value")
}

// maxDepth is the most arrays and objects nested in a JSON form read.
const maxDepth = 200

var errTooDeep = fmt.Errorf("JSON nested deeper than %d", maxDepth)

// nodeBuilder makes nodes as jsontree reads the text, from blocks.
type nodeBuilder struct {
	nodes jsontree.Blocks[node]
	elems jsontree.Slices[*node]
	keys  jsontree.Slices[string]
}

func (b *nodeBuilder) Scalar(kind jsontree.Kind, _ int, text string, v bool) *node {
	n := b.nodes.New()
	n.kind, n.str = "zbns"[kind], text
	if kind == jsontree.Bool {
		n.str = strconv.FormatBool(v)
	}
	return n
}

func (b *nodeBuilder) Array(_ int, elems []*node) *node {
	n := b.nodes.New()
	n.kind, n.arr = 'a', b.elems.Copy(elems)
	return n
}

// Object keeps a member given twice at its first position, with its last
// value.
func (b *nodeBuilder) Object(_ int, keys []string, _ []int, elems []*node) *node {
	n := b.nodes.New()
	n.kind, n.obj = 'o', make(map[string]*node, len(keys))
	if len(keys) > 0 {
		n.keys = b.keys.Copy(keys)[:0]
	}
	for i, k := range keys {
		n.set(k, elems[i])
	}
	return n
}

func (n *node) raw() json.RawMessage {
	if n == nil {
		return nil
	}
	var b bytes.Buffer
	n.write(&b)
	return b.Bytes()
}

func (n *node) write(b *bytes.Buffer) {
	switch n.kind {
	case 'o', 'm':
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(appendString(b.AvailableBuffer(), k))
			b.WriteByte(':')
			n.obj[k].write(b)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, e := range n.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			e.write(b)
		}
		b.WriteByte(']')
	case 's':
		b.Write(appendString(b.AvailableBuffer(), n.str))
	case 'z':
		b.WriteString("null")
	case 'r':
		n.open().write(b)
	default:
		b.WriteString(n.str)
	}
}

// differ walks two node trees and collects their differences.
type differ struct {
	// compact compares lists of scalars that print in full on a line
	// (shortLen bytes) as one value, so that a changed shape is one line.
	compact bool
	out     []Difference
}

func (d *differ) add(path string, a, b *node) {
	kind := Changed
	switch {
	case a == nil:
		kind = Added
	case b == nil:
		kind = Removed
	}
	d.out = append(d.out, Difference{Path: path, Kind: kind, A: a.raw(), B: b.raw()})
}

// child returns the path of member k of n.
func (n *node) child(path, k string) string {
	switch {
	case n.kind == 'm':
		return path + "[" + formatKey(k) + "]"
	case path == "":
		return k
	}
	return path + "." + k
}

func (d *differ) walk(path string, a, b *node) {
	if (a == nil && b == nil) ||
		a != nil && b != nil && a.kind == 'r' && b.kind == 'r' && sameModel(a, b) {
		return
	}
	a, b = a.open(), b.open()
	if a == nil || b == nil || a.kind != b.kind {
		d.add(path, a, b)
		return
	}
	switch a.kind {
	case 'o', 'm':
		if (a.union || b.union) && (len(a.keys) != 1 || len(b.keys) != 1 || a.keys[0] != b.keys[0]) {
			d.add(path, a, b)
			return
		}
		for _, k := range a.keys {
			d.walk(a.child(path, k), a.obj[k], b.obj[k])
		}
		for _, k := range b.keys {
			if _, ok := a.obj[k]; !ok {
				d.walk(a.child(path, k), nil, b.obj[k])
			}
		}
	case 'a':
		if d.compact && a.shortScalars() && b.shortScalars() {
			if !sameScalars(a.arr, b.arr) {
				d.add(path, a, b)
			}
			return
		}
		for i := range max(len(a.arr), len(b.arr)) {
			d.walk(path+"["+strconv.Itoa(i)+"]", at(a.arr, i), at(b.arr, i))
		}
	default:
		if !sameScalar(a, b) {
			d.add(path, a, b)
		}
	}
}

// at is s[i], or the zero value when i is out of range.
func at[T any](s []T, i int) (v T) {
	if 0 <= i && i < len(s) {
		v = s[i]
	}
	return v
}

// sameScalar compares two scalar nodes of the same kind.
func sameScalar(a, b *node) bool {
	if a.kind == 'n' {
		return sameNumber(a.str, b.str)
	}
	return a.str == b.str
}

// shortScalars reports whether n is an array of scalars that prints in
// full on a line.
func (n *node) shortScalars() bool {
	size := 1
	for _, e := range n.arr {
		if e.kind == 'o' || e.kind == 'm' || e.kind == 'a' || e.kind == 'r' {
			return false
		}
		size += len(e.str) + 3 // separator, and quotes of strings
		if size > shortLen {
			return false
		}
	}
	return len(n.raw()) <= shortLen
}

func sameScalars(a, b []*node) bool {
	return slices.EqualFunc(a, b, func(x, y *node) bool { return x.kind == y.kind && sameScalar(x, y) })
}

// formatKey writes a key of a keyed list as it appears between brackets in
// a path: as it is when that is unambiguous, else as a quoted Go string.
func formatKey(k string) string {
	if k == "" || strings.ContainsFunc(k, func(r rune) bool {
		return r <= ' ' || r == '[' || r == ']' || r == '"' || r == 0x7f || r == utf8.RuneError
	}) {
		return strconv.Quote(k)
	}
	return k
}

// sameNumber compares two JSON numbers by value: integers exactly (of any
// size), others as float64.
func sameNumber(x, y string) bool {
	if x == y {
		return true
	}
	if !strings.ContainsAny(x, ".eE") && !strings.ContainsAny(y, ".eE") {
		var bx, by big.Int
		_, okx := bx.SetString(x, 10)
		_, oky := by.SetString(y, 10)
		return okx && oky && bx.Cmp(&by) == 0
	}
	fx, errx := strconv.ParseFloat(x, 64)
	fy, erry := strconv.ParseFloat(y, 64)
	return errx == nil && erry == nil && fx == fy
}

// remove deletes member key of the object n, if it has one.
func (n *node) remove(key string) {
	if _, ok := n.obj[key]; ok && n.kind == 'o' {
		delete(n.obj, key)
		n.keys = slices.DeleteFunc(n.keys, func(k string) bool { return k == key })
	}
}

// model returns the node of model value v, written as w writes it: a
// scalar opened, anything else a node of kind 'r'.
func (w *modelWriter) model(v reflect.Value, numbers bool) *node {
	n := &node{kind: 'r', rv: v, numbers: numbers, mw: w}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Struct, reflect.Slice:
		return n
	}
	return n.open()
}

// open returns the node a model value n stands for, one level deep, as
// modelWriter writes it. Any other node is its own.
func (n *node) open() *node {
	if n == nil || n.kind != 'r' {
		return n
	}
	o := n.opened()
	if n.then != nil && (o.kind == 'o' || o.kind == 'a') {
		o = n.then(o)
	}
	return o
}

// opened is what model value n opens to, before then: a table's members
// and a list's elements as model values in turn; a scalar, an enum, null
// or a byte vector's summary as modelWriter writes it, read back.
func (n *node) opened() *node {
	v, w := n.rv, n.mw
	if !v.Type().Implements(enumType) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				return w.model(v.Elem(), n.numbers).open()
			}
		case reflect.Struct:
			return w.table(v)
		case reflect.Slice:
			if !v.IsNil() && (v.Type().Elem().Kind() != reflect.Uint8 || n.numbers) {
				list := &node{kind: 'a', arr: make([]*node, v.Len())}
				for i := range list.arr {
					list.arr[i] = w.model(v.Index(i), n.numbers)
				}
				return list
			}
		}
	}
	start := len(w.buf)
	w.value(v, n.numbers)
	text := string(w.buf[start:])
	w.buf = w.buf[:start]
	switch text[0] {
	case '"':
		s, _ := strconv.Unquote(text) // appendString's escapes are Go's
		return newString(s)
	case 'n':
		return &node{kind: 'z'}
	case 't', 'f':
		return &node{kind: 'b', str: text}
	case '{':
		sum, _ := parse([]byte(text))
		return sum
	}
	return &node{kind: 'n', str: text}
}

// table opens the model table v: its members as modelWriter.object writes
// them.
func (w *modelWriter) table(v reflect.Value) *node {
	fields := tableFields(v.Type())
	o := newObject()
	for _, f := range fields.list {
		fv := v.Field(f.index)
		switch {
		case f.union:
			tag, m := unionParts(fv)
			t, mn := newString("NONE"), (*node)(nil)
			if tag.IsValid() {
				t = w.model(tag, false)
			}
			if m.IsValid() {
				mn = w.model(m, false)
			}
			o.set(f.name+"_type", t).set(f.name, mn)
		case f.plans:
			var plans *node
			if p := v.Addr().Interface().(*pte.Program); p.HasPlans() {
				plans = &node{kind: 'a', arr: []*node{}}
				for _, ep := range p.Plans() {
					plans.arr = append(plans.arr, w.model(reflect.ValueOf(ep), false))
				}
			}
			o.set(f.name, plans)
		case fields.isNull(v, f):
			o.set(f.name, nil)
		default:
			o.set(f.name, w.model(fv, f.numbers))
		}
	}
	return o
}

// sameModel reports whether the model values of nodes a and b (kind 'r')
// surely have the same JSON form, comparing the values, not their forms: a
// byte vector by its size, and by its digest when hashing. It may say no
// for values whose forms agree (invalid UTF-8), which the walk then
// opens and compares member by member.
func sameModel(a, b *node) bool {
	return sameValue(a.rv, b.rv, a.numbers, a.mw, b.mw)
}

func sameValue(a, b reflect.Value, numbers bool, wa, wb *modelWriter) bool {
	t := a.Type()
	if t != b.Type() {
		return false
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() && b.IsNil()
		}
		return sameValue(a.Elem(), b.Elem(), numbers, wa, wb)
	case reflect.Struct:
		l := tableFields(t)
		if l.absent >= 0 && !slices.Equal(a.Field(l.absent).Interface().([]string), b.Field(l.absent).Interface().([]string)) {
			return false
		}
		for _, f := range l.list {
			if f.plans || !sameValue(a.Field(f.index), b.Field(f.index), f.numbers, wa, wb) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.IsNil() || b.IsNil() || a.Len() != b.Len() {
			return a.IsNil() && b.IsNil()
		}
		if t.Elem().Kind() == reflect.Uint8 && !numbers {
			return wa.hash == wb.hash && (!wa.hash || wa.sum(a.Bytes()) == wb.sum(b.Bytes()))
		}
		for i := range a.Len() {
			if !sameValue(a.Index(i), b.Index(i), numbers, wa, wb) {
				return false
			}
		}
		return true
	case reflect.Float32, reflect.Float64:
		x, y := a.Float(), b.Float()
		return x == y || x != x && y != y // NaN is "nan"
	}
	return a.Equal(b)
}
