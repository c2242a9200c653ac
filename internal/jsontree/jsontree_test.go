package jsontree

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// decoderTree is the reference reading: encoding/json's token reader
// (UseNumber), offsets taken from the decoder's input offset past the
// white space and separators it consumes with a token.
func decoderTree(data []byte) (*Value, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	next := func() int {
		off := int(d.InputOffset())
		for off < len(data) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
			off++
		}
		return off
	}
	var read func() (*Value, error)
	read = func() (*Value, error) {
		off := next()
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		v := &Value{Off: off}
		switch t := tok.(type) {
		case nil:
			v.Kind = Null
		case bool:
			v.Kind, v.Bool = Bool, t
		case json.Number:
			v.Kind, v.Text = Number, string(t)
		case string:
			v.Kind, v.Text = String, t
		case json.Delim:
			if t == '[' {
				v.Kind, v.Elems = Array, []*Value{}
				for d.More() {
					e, err := read()
					if err != nil {
						return nil, err
					}
					v.Elems = append(v.Elems, e)
				}
			} else {
				v.Kind, v.Keys, v.KeyOffs, v.Elems = Object, []string{}, []int{}, []*Value{}
				for d.More() {
					koff := next()
					kt, err := d.Token()
					if err != nil {
						return nil, err
					}
					e, err := read()
					if err != nil {
						return nil, err
					}
					k, _ := kt.(string)
					v.Keys, v.KeyOffs, v.Elems = append(v.Keys, k), append(v.KeyOffs, koff), append(v.Elems, e)
				}
			}
			if _, err := d.Token(); err != nil {
				return nil, err
			}
		}
		return v, nil
	}
	v, err := read()
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("data after the value")
	}
	return v, nil
}

// hasDuplicate reports whether an object in v gives a member twice.
func hasDuplicate(v *Value) bool {
	seen := map[string]bool{}
	for _, k := range v.Keys {
		if seen[k] {
			return true
		}
		seen[k] = true
	}
	for _, e := range v.Elems {
		if hasDuplicate(e) {
			return true
		}
	}
	return false
}

// depth is the most arrays and objects nested in v.
func depth(v *Value) int {
	n := 0
	for _, e := range v.Elems {
		n = max(n, depth(e))
	}
	if v.Kind == Array || v.Kind == Object {
		n++
	}
	return n
}

// check compares Parse with encoding/json on data, and the options with
// what they promise.
func check(t *testing.T, data []byte) {
	t.Helper()
	got, ext, err := Parse(data, Options{})
	if len(ext) != 0 {
		t.Fatalf("%q: extensions %v without Options.Python", data, ext)
	}
	want, werr := decoderTree(data)
	if (err == nil) != json.Valid(data) || (err == nil) != (werr == nil) {
		t.Fatalf("%q: Parse error %v, json.Valid %t, decoder error %v", data, err, json.Valid(data), werr)
	}
	if err != nil {
		var se *SyntaxError
		if !errors.As(err, &se) || se.Off < 0 || se.Off > len(data) {
			t.Fatalf("%q: error %#v, want a *SyntaxError within the text", data, err)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: Parse and the decoder read different trees", data)
	}
	// An Arena used for every text checked, so that each parse reuses
	// what the texts before it left.
	if av, _, err := checkArena.Parse(data, Options{}); err != nil || !reflect.DeepEqual(av, got) {
		t.Fatalf("%q: Arena.Parse read a different tree (%v)", data, err)
	}
	n, names := countValues(got), countNames(got)
	if b, nb := Bounds(data); b < n || nb < names {
		t.Fatalf("%q: Bounds %d values, %d names, below the %d and %d parsed", data, b, nb, n, names)
	}
	// A SpanBuilder reads the same texts, given as spans.
	if sv, _, err := Build[*Value](data, Options{}, spanValues{&valueBuilder{}, data}); err != nil || !reflect.DeepEqual(sv, got) {
		t.Fatalf("%q: a SpanBuilder read a different tree (%v)", data, err)
	}
	// Python's extensions only add: standard JSON reads the same.
	py, _, err := Parse(data, Options{Python: true})
	if err != nil || !reflect.DeepEqual(py, got) {
		t.Fatalf("%q: with Options.Python: %v", data, err)
	}
	// The limits refuse exactly what goes past them.
	d := depth(got)
	if _, _, err := Parse(data, Options{MaxDepth: d}); err != nil {
		t.Fatalf("%q: depth %d refused at MaxDepth %d: %v", data, d, d, err)
	}
	if d > 1 {
		var le *LimitError
		if _, _, err := Parse(data, Options{MaxDepth: d - 1}); !errors.As(err, &le) || le.Limit != LimitDepth {
			t.Fatalf("%q: depth %d at MaxDepth %d: %v, want a depth LimitError", data, d, d-1, err)
		}
	}
	_, _, err = Parse(data, Options{RefuseDuplicates: true})
	if (err != nil) != hasDuplicate(got) {
		t.Fatalf("%q: RefuseDuplicates: %v", data, err)
	}
}

func TestParseMatchesDecoder(t *testing.T) {
	for _, s := range []string{
		`{}`, `[]`, ` {"a" : [1, -2.5e+3, 0, true, false, null, "x"] } `, `{"a":1,"a":2}`, `0`, `-0.0E-0`, `"é"`,
		`{"a":"\u00e9\ud83d\ude00\n\"q\"\/\b\f\r\t"}`, "{\"a\":\"\xff\"}", "\"\xed\xa0\x80\"", "{\"a\":\"\x01\"}", `{"a":01}`,
		`{"a":1x}`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`, `[1 2]`, `[1,]`, `{"a":1,}`, `{"a"}`, `{"a":1} x`, `"\`, `tru`,
		`nul`, `NaN`, `-Infinity`, `{"a":"\ud800"}`, `{"a":"\ud800\u0041"}`, `{"a":"\ud800\ud800\udc00"}`, `{"a":"\x"}`,
		`{"a":"\u12"}`, "", " ", "\ufeff{}", `{"` + strings.Repeat("k", 40) + `":1}`, `[[[[[]]],[[]]]]`,
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"a":18}`,
	} {
		check(t, []byte(s))
	}
}

// TestErrorOffsets: each error says where reading stopped and, for the
// limits, which limit and where the value that goes past it starts.
func TestErrorOffsets(t *testing.T) {
	for _, c := range []struct {
		text  string
		opt   Options
		off   int
		limit Limit
		msg   string
	}{
		{`[1, 2`, Options{}, 5, 0, "unterminated array"},
		{`{"a" 1}`, Options{}, 5, 0, "expecting ':'"},
		{`{"a":1,"a":2}`, Options{RefuseDuplicates: true}, 7, 0, `member "a" given twice`},
		{`"a\qb"`, Options{}, 2, 0, `invalid escape \q`},
		{"\"a\x01\"", Options{}, 2, 0, "invalid control character"},
		{`[NaN]`, Options{}, 1, 0, "expecting a value, found 'N'"},
		{`[1] 2`, Options{}, 4, 0, "extra data"},
		{`[[[]]]`, Options{MaxDepth: 2}, 2, LimitDepth, "nesting deeper than 2"},
		{`[1,2,3]`, Options{MaxValues: 3}, 5, LimitValues, "more than 3"},
		{`[1.5, 12345]`, Options{MaxIntDigits: 4}, 6, LimitIntDigits, "5 digits"},
	} {
		_, _, err := Parse([]byte(c.text), c.opt)
		var off int
		var limit Limit
		switch e := err.(type) {
		case *SyntaxError:
			off = e.Off
		case *LimitError:
			off, limit = e.Off, e.Limit
		default:
			t.Errorf("%s: error %v, want a *SyntaxError or *LimitError", c.text, err)
			continue
		}
		if off != c.off || limit != c.limit || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v (offset %d, limit %d), want %q at offset %d, limit %d", c.text, err, off, limit, c.msg, c.off, c.limit)
		}
	}
}

// TestPython: Python's extensions are read, each reported where it is,
// and refused without Options.Python.
func TestPython(t *testing.T) {
	text := `[NaN, -Infinity, {"k": Infinity}, "a\udc00b", "\ud83d\ude00"]`
	v, ext, err := Parse([]byte(text), Options{Python: true})
	if err != nil {
		t.Fatal(err)
	}
	var offs []int
	for _, e := range ext {
		offs = append(offs, e.Off)
	}
	want := []int{strings.Index(text, "NaN"), strings.Index(text, "-Inf"), strings.Index(text, " Inf") + 1, strings.Index(text, `\udc00`)}
	if !reflect.DeepEqual(offs, want) {
		t.Errorf("extensions at %v, want %v: %v", offs, want, ext)
	}
	if v.Elems[0].Text != "NaN" || v.Elems[1].Text != "-Infinity" || v.Elems[2].Member("k").Text != "Infinity" ||
		v.Elems[3].Text != "a\uFFFDb" || v.Elems[4].Text != "😀" {
		t.Errorf("read %+v", v.Elems)
	}
	if _, _, err := Parse([]byte(text), Options{}); err == nil {
		t.Error("NaN read without Options.Python")
	}
}

// TestMemberLast: Member takes the last of a member given twice, as
// Python's dict does.
func TestMemberLast(t *testing.T) {
	v, _, err := Parse([]byte(`{"a":1,"b":2,"a":3}`), Options{})
	if err != nil || v.Member("a").Text != "3" || v.Member("c") != nil || len(v.Keys) != 3 {
		t.Fatalf("%v %+v", err, v)
	}
}

// FuzzParse: Parse accepts what encoding/json accepts, reads it to the
// same tree with the same offsets, and its options hold.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,-2.5e+3,"\u00e9",true,null],"b":{"c":false}}`, `[[],{},""]`, "\"\xff\xfe\"", `{"a":1,"a":2}`,
		`"\ud800x"`, `[1,]`, `-0.5E+3`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { check(t, data) })
}

// TestBlocks: every New is a distinct zero value, from blocks that grow.
func TestBlocks(t *testing.T) {
	var b Blocks[Value]
	seen := map[*Value]bool{}
	for i := range 1000 {
		v := b.New()
		if seen[v] || v.Kind != 0 || v.Text != "" {
			t.Fatalf("New %d: %p reused or not zero", i, v)
		}
		seen[v] = true
		v.Text = "used"
	}
	if b.l.size != 256 {
		t.Errorf("block size %d after 1000 values, want 256", b.l.size)
	}
}

// TestSlices: every Copy equals its source, whatever its length (short
// ones cut from blocks, long ones alone), is never nil, and owns its
// capacity: appending to one never changes another, and changing the
// source afterwards changes no copy.
func TestSlices(t *testing.T) {
	for _, hint := range []int{0, 5, 40} {
		testSlices(t, hint)
	}
}

func testSlices(t *testing.T, hint int) {
	var b Slices[int]
	if hint > 0 {
		b.Hint(hint) // a first block of its own size, then the usual ones
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var srcs, copies [][]int
	for i := range 3000 {
		n := rng.IntN(20)
		switch i % 100 {
		case 7:
			n = maxSliceBlock/4 + rng.IntN(3) - 1 // about the largest cut from a block
		case 13:
			n = 3 * maxSliceBlock // alone
		}
		src := make([]int, n)
		for k := range src {
			src[k] = rng.Int()
		}
		c := b.Copy(src)
		if c == nil || len(c) != n || cap(c) != n {
			t.Fatalf("Copy %d of %d: nil %v, len %d, cap %d", i, n, c == nil, len(c), cap(c))
		}
		srcs, copies = append(srcs, slices.Clone(src)), append(copies, c)
		clear(src)
		if n > 0 {
			_ = append(c, -1) // must not land in the next copy
		}
	}
	for i := range copies {
		if !slices.Equal(copies[i], srcs[i]) {
			t.Fatalf("copy %d changed: %v, want %v", i, copies[i], srcs[i])
		}
	}
}

// TestSlicesHint: the members of a text, counted by Hint, take one block
// of their number, below the 16 a block otherwise starts with.
func TestSlicesHint(t *testing.T) {
	var b Slices[string]
	b.Hint(7)
	for _, n := range []int{3, 0, 4} {
		b.Copy(make([]string, n))
	}
	if b.l.size != 7 || len(b.l.free) != 0 {
		t.Errorf("after 7 members hinted as 7: block of %d, %d left", b.l.size, len(b.l.free))
	}
	b.Copy(make([]string, 1))
	if b.l.size != 16 {
		t.Errorf("past the hint: block of %d, want 16", b.l.size)
	}
}

// TestBlocksHint: a hint sizes the first block (no larger than 256), and
// blocks double from there, from 16 on.
func TestBlocksHint(t *testing.T) {
	for _, c := range []struct{ hint, first int }{{0, 16}, {10, 10}, {21, 21}, {88, 88}, {1 << 20, 256}} {
		var b Blocks[Value]
		b.Hint(c.hint)
		b.New()
		if b.l.size != c.first {
			t.Errorf("hint %d: first block %d, want %d", c.hint, b.l.size, c.first)
		}
		for range b.l.size {
			b.New()
		}
		if want := min(256, max(16, 2*c.first)); b.l.size != want {
			t.Errorf("hint %d: second block %d, want %d", c.hint, b.l.size, want)
		}
	}
}

// TestBounds: the bounds are never below the values and names Parse
// makes, and are exact for compact JSON with no commas, openers or colons
// inside strings.
func TestBounds(t *testing.T) {
	for _, c := range []struct {
		text  string
		exact bool
	}{
		{`1`, true}, {`"a"`, true}, {`[]`, false}, {`{}`, false}, {`[1,2,3]`, true},
		{`{"a":[1,2],"b":{"c":3}}`, true}, {` { "a" : [ true , null ] } `, true},
		{`["a,b","[{:"]`, false}, {`[[],[[]],{}]`, false}, {`{"a:":1}`, false},
	} {
		v, _, err := Parse([]byte(c.text), Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		n, names := countValues(v), countNames(v)
		got, gotNames := Bounds([]byte(c.text))
		if got < n || gotNames < names || (c.exact && (got != n || gotNames != names)) {
			t.Errorf("Bounds(%s) = %d, %d; the text has %d values, %d names (exact: %v)", c.text, got, gotNames, n, names, c.exact)
		}
	}
}

// checkArena is the Arena check reuses across texts.
var checkArena Arena

// TestArenaReuse: trees parsed one after another into one Arena are the
// trees Parse makes, whatever the previous text's shape, and once its
// blocks fit, a text of the same shape is parsed with fewer allocations
// than Parse needs.
func TestArenaReuse(t *testing.T) {
	var a Arena
	texts := []string{
		`{"io_bindings":[{"name":"x","dtype":"float16","shape":[1,4096],"is_input":true}],"device_id":0}`,
		`[1,2,3]`, `"s"`, `{"a":{"b":{"c":[[],{},[null,false]]}}}`,
		`{"io_bindings":[{"name":"y","dtype":"float32","shape":[8],"is_input":false}],"device_id":1}`,
	}
	for range 3 {
		for _, text := range texts {
			want, _, err := Parse([]byte(text), Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := a.Parse([]byte(text), Options{})
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: Arena.Parse differs from Parse (%v)", text, err)
			}
		}
	}
	data := []byte(texts[0])
	fresh := testing.AllocsPerRun(100, func() { Parse(data, Options{}) })
	reused := testing.AllocsPerRun(100, func() { a.Parse(data, Options{}) })
	if reused >= fresh {
		t.Errorf("Arena.Parse: %v allocations per text, Parse %v", reused, fresh)
	}
}

func countNames(v *Value) int {
	n := len(v.Keys)
	for _, e := range v.Elems {
		n += countNames(e)
	}
	return n
}

func countValues(v *Value) int {
	n := 1
	for _, e := range v.Elems {
		n += countValues(e)
	}
	return n
}

// spanValues makes Values as Parse does, taking numbers and plain strings
// as spans of data (a SpanBuilder).
type spanValues struct {
	*valueBuilder
	data []byte
}

func (b spanValues) Span(kind Kind, off, start, end int) *Value {
	return b.Scalar(kind, off, string(b.data[start:end]), false)
}

// TestSlicesMake: Make hands out zero slices, never nil, each with its
// own capacity, and a long one too.
func TestSlicesMake(t *testing.T) {
	var s Slices[int32]
	if e := s.Make(0); e == nil || len(e) != 0 {
		t.Fatalf("Make(0) = %#v", e)
	}
	a, b := s.Make(3), s.Make(2)
	if len(a) != 3 || cap(a) != 3 || cap(b) != 2 || a[0] != 0 || b[1] != 0 {
		t.Fatalf("a %v (cap %d), b %v (cap %d)", a, cap(a), b, cap(b))
	}
	a = append(a, 7) // copies: b is not written
	b[0] = 1
	if a[3] != 7 || b[0] != 1 {
		t.Fatalf("a %v, b %v", a, b)
	}
	if long := s.Make(maxSliceBlock); len(long) != maxSliceBlock {
		t.Fatalf("a long slice has %d elements", len(long))
	}
	s.Reset()
	if c := s.Make(2); c[0] != 0 {
		t.Errorf("a slice cut after Reset is not zero: %v", c)
	}
}
