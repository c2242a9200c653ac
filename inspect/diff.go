package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ptekit/ptekit/internal/jsontree"
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

// node is a decoded JSON value that remembers object member order.
type node struct {
	// kind is 'o' object, 'a' array, 's' string, 'n' number, 'b' bool,
	// 'z' null, or 'm' for a list matched by key: written as an object, its
	// members are compared by key and named "path[key]".
	kind byte
	// union marks an object holding one union member under its tag name:
	// when the tags differ, the whole value is one difference.
	union bool
	keys  []string
	obj   map[string]*node
	arr   []*node
	str   string // string value, number text, "true"/"false"
	// repeats counts the keys setUnique has seen more than once.
	repeats map[string]int
	// method, in a node of kind 'l', is the method whose view this node
	// stands for: the walk builds it when it gets there and drops it
	// after, so that a diff of many methods holds one method's view at a
	// time.
	method *methodRef
}

// expand returns the node n stands for: n itself unless it is lazy.
func (n *node) expand() (*node, error) {
	if n == nil || n.method == nil {
		return n, nil
	}
	plan, err := n.method.planJSON()
	if err != nil {
		return nil, err
	}
	return n.method.view(plan)
}

// toNode returns the JSON form of v as a node tree: v itself when it is
// raw JSON (json.RawMessage or []byte, checked first), else what
// json.Marshal makes of it.
func toNode(v any) (*node, error) {
	switch x := v.(type) {
	case json.RawMessage:
		return parseNode(x)
	case []byte:
		return parseNode(x)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return parseValid(data)
}

// parseNode parses raw JSON that may be malformed; for malformed input
// the error is the decoder's own message.
func parseNode(data []byte) (*node, error) {
	v, _, err := jsontree.Build[*node](data, jsontree.Options{MaxDepth: maxDepth}, newNodeBuilder(data))
	if err == nil {
		return v, nil
	}
	if _, deep := err.(*jsontree.LimitError); deep && json.Valid(data) {
		return nil, errTooDeep
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("trailing data after JSON value")
}

// maxDepth is the most arrays and objects nested in a JSON form read.
const maxDepth = 200

var errTooDeep = fmt.Errorf("JSON nested deeper than %d", maxDepth)

// parseValid parses JSON that json.Valid accepts (json.Marshal's output)
// into nodes, with internal/jsontree rather than encoding/json's token
// interface, which costs a reflection round-trip per token: this is the
// inner loop of every diff. Numbers keep their text (as
// json.Decoder.UseNumber), strings are decoded as encoding/json decodes
// them, a repeated object member keeps its first position and its last
// value.
func parseValid(data []byte) (*node, error) {
	v, _, err := jsontree.Build[*node](data, jsontree.Options{MaxDepth: maxDepth}, newNodeBuilder(data))
	if err != nil {
		if _, deep := err.(*jsontree.LimitError); deep {
			return nil, errTooDeep
		}
		return nil, err
	}
	return v, nil
}

// nodeBuilder makes nodes as jsontree reads the text: the diff annotates
// them (keyed lists, unions, lazy methods) and looks members up by name.
// Nodes come from blocks (jsontree.Blocks).
type nodeBuilder struct {
	nodes jsontree.Blocks[node]
	elems jsontree.Slices[*node]
	keys  jsontree.Slices[string]
}

// newNodeBuilder returns a builder for the text data.
func newNodeBuilder(data []byte) *nodeBuilder {
	b := &nodeBuilder{}
	values, names := jsontree.Bounds(data)
	b.nodes.Hint(values)
	b.elems.Hint(values - 1)
	b.keys.Hint(names)
	return b
}

func (b *nodeBuilder) newNode(kind byte) *node {
	n := b.nodes.New()
	n.kind = kind
	return n
}

func (b *nodeBuilder) Scalar(kind jsontree.Kind, _ int, text string, v bool) *node {
	switch kind {
	case jsontree.String:
		n := b.newNode('s')
		n.str = text
		return n
	case jsontree.Number:
		n := b.newNode('n')
		n.str = text
		return n
	case jsontree.Bool:
		n := b.newNode('b')
		n.str = strconv.FormatBool(v)
		return n
	}
	return b.newNode('z')
}

func (b *nodeBuilder) Array(_ int, elems []*node) *node {
	n := b.newNode('a')
	n.arr = b.elems.Copy(elems)
	return n
}

// Object keeps a member given twice at its first position, with its last
// value.
func (b *nodeBuilder) Object(_ int, keys []string, _ []int, elems []*node) *node {
	n := b.newNode('o')
	n.obj = make(map[string]*node, len(keys))
	for i, k := range keys {
		n.obj[k] = elems[i]
	}
	switch {
	case len(keys) == 0:
	case len(n.obj) == len(keys):
		n.keys = b.keys.Copy(keys)
	default:
		for _, k := range keys {
			if !slices.Contains(n.keys, k) {
				n.keys = append(n.keys, k)
			}
		}
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
			writeString(b, k)
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
		writeString(b, n.str)
	case 'z':
		b.WriteString("null")
	default:
		b.WriteString(n.str)
	}
}

// writeString writes s as a JSON string without HTML escaping.
func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode appends a newline
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// differ walks two node trees and collects their differences.
type differ struct {
	// compact compares lists of scalars that print in full on a line
	// (shortLen bytes) as one value, so that a changed shape is one line.
	compact bool
	// first stops the walk at the first difference.
	first bool
	out   []Difference
	// err is the first failure to build a lazy node.
	err error
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
	if n.kind == 'm' {
		return path + "[" + formatKey(k) + "]"
	}
	return join(path, k)
}

func (d *differ) walk(path string, a, b *node) {
	if (a == nil && b == nil) || (d.first && len(d.out) > 0) || d.err != nil {
		return
	}
	var err error
	switch {
	case a != nil && b != nil && a.method != nil && b.method != nil:
		a, b, err = expandMethods(a.method, b.method)
	default:
		if a, err = a.expand(); err == nil {
			b, err = b.expand()
		}
	}
	if err != nil {
		d.err = err
		return
	}
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
		for i := 0; i < max(len(a.arr), len(b.arr)); i++ {
			var ea, eb *node
			if i < len(a.arr) {
				ea = a.arr[i]
			}
			if i < len(b.arr) {
				eb = b.arr[i]
			}
			d.walk(path+"["+strconv.Itoa(i)+"]", ea, eb)
		}
	default:
		if !sameScalar(a, b) {
			d.add(path, a, b)
		}
	}
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
		if e.kind == 'o' || e.kind == 'm' || e.kind == 'a' {
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
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].kind != b[i].kind || !sameScalar(a[i], b[i]) {
			return false
		}
	}
	return true
}

// formatKey writes a key of a keyed list as it appears between brackets in
// a path: as it is when that is unambiguous, else as a quoted Go string.
func formatKey(k string) string {
	if k == "" {
		return `""`
	}
	for _, r := range k {
		if r <= ' ' || r == '[' || r == ']' || r == '"' || r == 0x7f || r == utf8.RuneError {
			return strconv.Quote(k)
		}
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

func (n *node) remove(key string) {
	if n.kind != 'o' {
		return
	}
	if _, ok := n.obj[key]; !ok {
		return
	}
	delete(n.obj, key)
	for i, k := range n.keys {
		if k == key {
			n.keys = append(n.keys[:i], n.keys[i+1:]...)
			break
		}
	}
}
