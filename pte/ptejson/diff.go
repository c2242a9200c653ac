package ptejson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
)

// Difference is one difference between two JSON forms.
type Difference struct {
	// Path locates the value, e.g. "program.execution_plan[0].values[3].val.sizes[1]".
	Path string `json:"path"`
	// A and B are the values on each side as JSON text; "" when the member
	// or element is absent on that side.
	A json.RawMessage `json:"a,omitempty"`
	B json.RawMessage `json:"b,omitempty"`
}

// String formats the difference as "PATH: A -> B", with long values
// shortened and an absent side written as "(absent)".
func (d Difference) String() string {
	return d.Path + ": " + short(d.A) + " -> " + short(d.B)
}

func short(v json.RawMessage) string {
	if len(v) == 0 {
		return "(absent)"
	}
	const max = 72
	s := string(v)
	if len(s) > max {
		return s[:max-3] + "..."
	}
	return s
}

// Diff compares the JSON forms of a and b (any values that encoding/json can
// marshal: Documents, Programs, or decoded JSON) member by member and
// returns every difference, in document order. Numbers are compared by
// value, so 1.0 equals 1; object member order is ignored. An element
// present on one side only is one difference whose other side is absent.
func Diff(a, b any) ([]Difference, error) {
	na, err := toNode(a)
	if err != nil {
		return nil, fmt.Errorf("ptejson: diff: first value: %w", err)
	}
	nb, err := toNode(b)
	if err != nil {
		return nil, fmt.Errorf("ptejson: diff: second value: %w", err)
	}
	var out []Difference
	diffNodes("", na, nb, &out)
	return out, nil
}

// node is a decoded JSON value that remembers object member order.
type node struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	keys []string
	obj  map[string]*node
	arr  []*node
	str  string // string value, number text, "true"/"false"
}

func toNode(v any) (*node, error) {
	var data []byte
	switch x := v.(type) {
	case json.RawMessage:
		data = x
	case []byte:
		data = x
	default:
		var err error
		if data, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := readNode(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return n, nil
}

const maxDepth = 200

func readNode(dec *json.Decoder, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("JSON nested deeper than %d", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &node{kind: 'o', obj: map[string]*node{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := readNode(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := n.obj[k]; !dup {
					n.keys = append(n.keys, k)
				}
				n.obj[k] = v
			}
			_, err := dec.Token() // '}'
			return n, err
		case '[':
			n := &node{kind: 'a', arr: []*node{}}
			for dec.More() {
				v, err := readNode(dec, depth+1)
				if err != nil {
					return nil, err
				}
				n.arr = append(n.arr, v)
			}
			_, err := dec.Token() // ']'
			return n, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case string:
		return &node{kind: 's', str: t}, nil
	case json.Number:
		return &node{kind: 'n', str: string(t)}, nil
	case bool:
		return &node{kind: 'b', str: strconv.FormatBool(t)}, nil
	case nil:
		return &node{kind: 'z'}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
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
	case 'o':
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

func diffNodes(path string, a, b *node, out *[]Difference) {
	if a == nil || b == nil || a.kind != b.kind {
		if a == nil && b == nil {
			return
		}
		*out = append(*out, Difference{Path: path, A: a.raw(), B: b.raw()})
		return
	}
	switch a.kind {
	case 'o':
		for _, k := range a.keys {
			diffNodes(join(path, k), a.obj[k], b.obj[k], out)
		}
		for _, k := range b.keys {
			if _, ok := a.obj[k]; !ok {
				diffNodes(join(path, k), nil, b.obj[k], out)
			}
		}
	case 'a':
		for i := 0; i < max(len(a.arr), len(b.arr)); i++ {
			var ea, eb *node
			if i < len(a.arr) {
				ea = a.arr[i]
			}
			if i < len(b.arr) {
				eb = b.arr[i]
			}
			diffNodes(path+"["+strconv.Itoa(i)+"]", ea, eb, out)
		}
	case 'n':
		if !sameNumber(a.str, b.str) {
			*out = append(*out, Difference{Path: path, A: a.raw(), B: b.raw()})
		}
	default:
		if a.str != b.str {
			*out = append(*out, Difference{Path: path, A: a.raw(), B: b.raw()})
		}
	}
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

// UpstreamMembers are the members DiffUpstream compares, in order. The
// upstream view calls the program member "raw_program".
var UpstreamMembers = []string{"file", "extended_header", "segments", "delegates", "program"}

// DiffUpstream compares ours, the JSON form of a Document built with
// hashing on, with upstream, the view of the same file printed by the
// ExecuTorch reference tooling around the upstream Python deserializer
// (the NAME.json files of the shared corpus and vectors): its file,
// extended_header, segments, delegates and raw_program members against our
// file, extended_header, segments, delegates and program. Members only we
// have (each delegate's tensorrt) are not compared. Paths in the result use
// our member names.
func DiffUpstream(ours, upstream []byte) ([]Difference, error) {
	a, err := toNode(json.RawMessage(ours))
	if err != nil {
		return nil, fmt.Errorf("ptejson: our document: %w", err)
	}
	b, err := toNode(json.RawMessage(upstream))
	if err != nil {
		return nil, fmt.Errorf("ptejson: upstream document: %w", err)
	}
	if a.kind != 'o' || b.kind != 'o' {
		return nil, fmt.Errorf("ptejson: both documents must be JSON objects")
	}
	if del := a.obj["delegates"]; del != nil && del.kind == 'a' {
		for _, d := range del.arr {
			d.remove("tensorrt")
		}
	}
	var out []Difference
	for _, m := range UpstreamMembers {
		um := m
		if m == "program" {
			um = "raw_program"
		}
		diffNodes(m, a.obj[m], b.obj[um], &out)
	}
	return out, nil
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
