package export

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ptekit/ptekit/internal/quote"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/internal/jsontree"
	"github.com/ptekit/ptekit/pte"
)

// Manifest is a program description read from JSON (see the package
// documentation for the schema): the program and the options it sets.
type Manifest struct {
	Program *Program
	// Options holds the options the manifest sets; callers may override
	// them (pteexport's flags do).
	Options Options
}

// ManifestError reports a manifest that cannot be used. Field is the JSON
// path of the offending value, e.g. "methods[0].engines[1].outputs[0].dtype";
// Line and Column locate it in the manifest (1-based; 0 when unknown).
type ManifestError struct {
	File  string
	Field string
	Line  int
	Col   int
	Msg   string
	Err   error
}

// Error formats the error as "manifest FILE:LINE:COL: FIELD: MSG: CAUSE".
func (e *ManifestError) Error() string {
	s := "manifest"
	if e.File != "" {
		s += " " + e.File
	}
	if e.Line > 0 {
		s += fmt.Sprintf(":%d:%d", e.Line, e.Col)
	}
	s += ": "
	if e.Field != "" {
		s += e.Field + ": "
	}
	s += e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying cause.
func (e *ManifestError) Unwrap() error { return e.Err }

// ReadManifest reads a manifest file. Engine and blob paths in it are
// relative to the manifest's directory.
func ReadManifest(path string) (*Manifest, error) {
	f, st, err := openRegular(path)
	if err != nil {
		return nil, &ManifestError{File: path, Msg: "cannot read", Err: err}
	}
	defer f.Close()
	// Read into a buffer of the file's size (and room for the read that
	// finds its end), not one grown by doubling: the bytes of a large
	// manifest are live while it is parsed.
	buf := bytes.NewBuffer(make([]byte, 0, min(max(st.Size(), 0), maxManifestSize+1)+bytes.MinRead))
	_, err = buf.ReadFrom(io.LimitReader(f, maxManifestSize+1))
	data := buf.Bytes()
	if err != nil {
		return nil, &ManifestError{File: path, Msg: "cannot read", Err: err}
	}
	m, err := ParseManifest(data, filepath.Dir(path))
	if err != nil {
		if me, ok := errors.AsType[*ManifestError](err); ok {
			me.File = path
		}
		return nil, err
	}
	return m, nil
}

// maxManifestSize bounds what ParseManifest accepts.
const maxManifestSize = 64 << 20

// maxManifestDepth bounds the nesting of a manifest; the schema needs 6.
const maxManifestDepth = 32

// ParseManifest parses a manifest. Relative engine and blob paths are
// resolved against baseDir. Unknown members, members given twice and values
// of the wrong type are errors that give the member's path, line and
// column. Engine files are not opened.
func ParseManifest(data []byte, baseDir string) (*Manifest, error) {
	if len(data) > maxManifestSize {
		return nil, &ManifestError{Msg: fmt.Sprintf("manifest is larger than %d bytes", maxManifestSize)}
	}
	t, err := parseJSON(data)
	if err != nil {
		return nil, err
	}
	c := &manifestReader{data: data, baseDir: baseDir, t: t}
	return c.manifest(t.root())
}

// mtree is a parsed manifest: every JSON value in one slice (children
// before their container, as jsontree.Build makes them), the elements and
// members of every container in another, member names interned, and the
// text of a scalar found where it is in the manifest's bytes, so that a
// manifest of many engines takes about 28 bytes per JSON value where a
// tree of jsontree.Values takes about 120. It is dropped once the
// manifest is converted.
type mtree struct {
	data  []byte // the manifest, which holds most scalars' text
	nodes []mval
	mems  []mmember
	texts []string          // scalar texts not found in data as they are (escaped strings)
	names []string          // member names by id
	ids   map[string]uint32 // the id of each member name
}

// mval is one JSON value of an mtree.
type mval struct {
	// Off is the offset of the value's first byte in the manifest (at
	// most maxManifestSize).
	Off int32
	// first and n are a container's elements or members:
	// mems[first:first+n]; a scalar's text (a number's literal, a
	// string's decoded value) is data[first:first+n], or texts[first]
	// when spilled.
	first, n uint32
	Kind     jsontree.Kind
	Bool     bool
	spilled  bool
}

// mmember is an element of an array (name noName) or a member of an
// object: its name's id, the offset of the name and the value's index.
type mmember struct {
	name, off, val uint32
}

// noName is the name id of an array's elements.
const noName = ^uint32(0)

// newTree returns an empty tree with room for the values and member names
// data holds if it is JSON (jsontree.Bounds).
func newTree(data []byte) *mtree {
	values, _ := jsontree.Bounds(data)
	values = min(values, len(data)/2+1) // a value and its separator take two bytes
	return &mtree{data: data, nodes: make([]mval, 0, values), mems: make([]mmember, 0, max(values-1, 0)), ids: map[string]uint32{}}
}

// Scalar, Array and Object make t's values as jsontree.Build reads them
// (t is a jsontree.Builder): a value is its index in t.nodes. Scalar
// keeps a text found at the value's place in the manifest as its span,
// as Span does.
func (t *mtree) Scalar(kind jsontree.Kind, off int, text string, b bool) uint32 {
	v := mval{Kind: kind, Off: int32(off), Bool: b}
	start := off
	if kind == jsontree.String {
		start++ // past the quote
	}
	if text != "" {
		if start >= 0 && start <= len(t.data) && len(text) <= len(t.data)-start && string(t.data[start:start+len(text)]) == text {
			v.first, v.n = uint32(start), uint32(len(text))
		} else {
			v.first, v.spilled = uint32(len(t.texts)), true
			t.texts = append(t.texts, text)
		}
	}
	t.nodes = append(t.nodes, v)
	return uint32(len(t.nodes) - 1)
}

// Span makes a number or a plain string whose text is data[start:end]
// (t is a jsontree.SpanBuilder: no string is made for it).
func (t *mtree) Span(kind jsontree.Kind, off, start, end int) uint32 {
	v := mval{Kind: kind, Off: int32(off)}
	if end > start { // an empty text is at 0, as Scalar keeps it
		v.first, v.n = uint32(start), uint32(end-start)
	}
	t.nodes = append(t.nodes, v)
	return uint32(len(t.nodes) - 1)
}

// text returns the text of scalar v: a number's literal, a string's
// decoded value.
func (t *mtree) text(v *mval) string {
	if v.spilled {
		return t.texts[v.first]
	}
	return string(t.data[v.first : v.first+v.n])
}

// parseInt parses the literal of number v as ParseInt does, without
// making a string of it.
func (t *mtree) parseInt(v *mval) (int64, error) {
	if v.spilled {
		return strconv.ParseInt(t.texts[v.first], 10, 64)
	}
	return strconv.ParseInt(string(t.data[v.first:v.first+v.n]), 10, 64)
}

func (t *mtree) Array(off int, elems []uint32) uint32 {
	first := len(t.mems)
	for _, e := range elems {
		t.mems = append(t.mems, mmember{name: noName, val: e})
	}
	t.nodes = append(t.nodes, mval{Kind: jsontree.Array, Off: int32(off), first: uint32(first), n: uint32(len(elems))})
	return uint32(len(t.nodes) - 1)
}

func (t *mtree) Object(off int, keys []string, keyOffs []int, elems []uint32) uint32 {
	first := len(t.mems)
	for i, e := range elems {
		id, ok := t.ids[keys[i]]
		if !ok {
			id = uint32(len(t.names))
			t.names = append(t.names, keys[i])
			t.ids[keys[i]] = id
		}
		t.mems = append(t.mems, mmember{name: id, off: uint32(keyOffs[i]), val: e})
	}
	t.nodes = append(t.nodes, mval{Kind: jsontree.Object, Off: int32(off), first: uint32(first), n: uint32(len(elems))})
	return uint32(len(t.nodes) - 1)
}

// root is the tree's outermost value, made last.
func (t *mtree) root() *mval { return &t.nodes[len(t.nodes)-1] }

// items returns the elements or members of container v.
func (t *mtree) items(v *mval) []mmember { return t.mems[v.first : v.first+v.n] }

// at returns value i.
func (t *mtree) at(i uint32) *mval { return &t.nodes[i] }

// jsonParser builds an mtree from the tokens of a json.Decoder, recording
// where each value starts: it reads the text the scanner gives up on, and
// reports its errors.
type jsonParser struct {
	data []byte
	d    *json.Decoder
	t    *mtree
}

func parseJSON(data []byte) (*mtree, error) {
	if t, ok := scanJSON(data); ok {
		return t, nil
	}
	p := &jsonParser{data: data, d: json.NewDecoder(bytes.NewReader(data)), t: newTree(data)}
	p.d.UseNumber()
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &ManifestError{Msg: "empty manifest"}
	}
	if _, err := p.value(0); err != nil {
		return nil, err
	}
	if _, err := p.d.Token(); err != io.EOF {
		return nil, errAt(data, p.next(), "", "unexpected data after the JSON object", nil)
	}
	return p.t, nil
}

// next returns the offset of the next token: the decoder's offset past
// white space and the ',' and ':' separators it consumes with a token.
func (p *jsonParser) next() int64 {
	off := p.d.InputOffset()
	for off < int64(len(p.data)) && strings.IndexByte(" \t\r\n,:", p.data[off]) >= 0 {
		off++
	}
	return off
}

func (p *jsonParser) syntaxError(err error) error {
	me := &ManifestError{Msg: "invalid JSON", Err: err}
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		me.Line, me.Col = lineCol(p.data, se.Offset)
	} else if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		me.Line, me.Col = lineCol(p.data, int64(len(p.data)))
		me.Err = errors.New("unexpected end of the manifest")
	}
	return me
}

// value reads the next value into p.t and returns its index there.
func (p *jsonParser) value(depth int) (uint32, error) {
	off := p.next()
	tok, err := p.d.Token()
	if err != nil {
		return 0, p.syntaxError(err)
	}
	switch t := tok.(type) {
	case nil:
		return p.t.Scalar(jsontree.Null, int(off), "", false), nil
	case bool:
		return p.t.Scalar(jsontree.Bool, int(off), "", t), nil
	case json.Number:
		return p.t.Scalar(jsontree.Number, int(off), string(t), false), nil
	case string:
		return p.t.Scalar(jsontree.String, int(off), t, false), nil
	}
	if depth >= maxManifestDepth {
		return 0, errAt(p.data, off, "", fmt.Sprintf("nested deeper than %d levels", maxManifestDepth), nil)
	}
	object := tok == json.Delim('{')
	var keys []string
	var keyOffs []int
	var elems []uint32
	for p.d.More() {
		if object {
			koff := p.next()
			ktok, err := p.d.Token()
			if err != nil {
				return 0, p.syntaxError(err)
			}
			key, _ := ktok.(string)
			if slices.Contains(keys, key) {
				return 0, errAt(p.data, koff, "", fmt.Sprintf("member %s is given twice", quote.String(key)), nil)
			}
			keys, keyOffs = append(keys, key), append(keyOffs, int(koff))
		}
		item, err := p.value(depth + 1)
		if err != nil {
			return 0, err
		}
		elems = append(elems, item)
	}
	if _, err := p.d.Token(); err != nil { // the closing delimiter
		return 0, p.syntaxError(err)
	}
	if object {
		return p.t.Object(int(off), keys, keyOffs, elems), nil
	}
	return p.t.Array(int(off), elems), nil
}

// errAt is a ManifestError about field located at byte off of data.
func errAt(data []byte, off int64, field, msg string, err error) *ManifestError {
	line, col := lineCol(data, off)
	return &ManifestError{Field: field, Line: line, Col: col, Msg: msg, Err: err}
}

func lineCol(data []byte, off int64) (int, int) {
	if off < 0 || off > int64(len(data)) {
		return 0, 0
	}
	pre := data[:off]
	line := bytes.Count(pre, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(pre, '\n') + 1) + 1
	return line, col
}

// manifestReader converts parsed JSON to a Manifest, locating every error.
type manifestReader struct {
	data    []byte
	baseDir string
	t       *mtree
}

// jobj is an object whose member names were checked, with its path.
// Members are looked up by a scan of its few keys: a map per object cost
// more than the rest of reading a manifest of many engines.
type jobj struct {
	path mpath
	v    *mval
	t    *mtree
}

func (r *manifestReader) fail(v *mval, path mpath, format string, args ...any) *ManifestError {
	return r.failErr(v, path, fmt.Sprintf(format, args...), nil)
}

// failErr is the error msg, caused by err, about v (nil: unlocated) at path.
func (r *manifestReader) failErr(v *mval, path mpath, msg string, err error) *ManifestError {
	if v == nil {
		return &ManifestError{Field: path.String(), Msg: msg, Err: err}
	}
	return errAt(r.data, int64(v.Off), path.String(), msg, err)
}

func (r *manifestReader) wrongType(v *mval, path mpath, want string) *ManifestError {
	return r.fail(v, path, "wrong JSON type: want %s, found %s", want, v.Kind)
}

// object checks that v is an object whose members are all in allowed.
func (r *manifestReader) object(v *mval, path mpath, allowed ...string) (jobj, error) {
	if v.Kind != jsontree.Object {
		return jobj{}, r.wrongType(v, path, "an object")
	}
	for _, m := range r.t.items(v) {
		if k := r.t.names[m.name]; !slices.Contains(allowed, k) {
			return jobj{}, errAt(r.data, int64(m.off), path.key(k).String(),
				fmt.Sprintf("unknown member %s (known: %s)", quote.String(k), strings.Join(allowed, ", ")), nil)
		}
	}
	return jobj{path: path, v: v, t: r.t}, nil
}

// mpath is where a value is in the manifest, such as
// "methods[3].engines[0].inputs[1]": member names, each with the index of
// an element under it, formatted only when an error names it (a manifest
// of many engines made a dozen path strings per engine for errors that
// did not happen).
type mpath struct {
	keys [6]string
	idx  [6]int32 // 1 + the element index under keys[i], 0 for none
	n    int
}

// key is the path of member k of the object at p.
func (p mpath) key(k string) mpath {
	if p.n == len(p.keys) {
		p = mpath{keys: [6]string{p.String()}, n: 1} // deeper than any manifest member
	}
	p.keys[p.n], p.idx[p.n] = k, 0
	p.n++
	return p
}

// elem is the path of element i of the array at p.
func (p mpath) elem(i int) mpath {
	if p.n == 0 || p.idx[p.n-1] != 0 || i >= math.MaxInt32 {
		return mpath{keys: [6]string{p.String() + "[" + strconv.Itoa(i) + "]"}, n: 1}
	}
	p.idx[p.n-1] = int32(i) + 1
	return p
}

// String formats p: member names joined by dots, an element's index in
// brackets ("a.Bool[3]").
func (p mpath) String() string {
	var b strings.Builder
	for i, k := range p.keys[:p.n] {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(k)
		if p.idx[i] != 0 {
			b.WriteString("[" + strconv.Itoa(int(p.idx[i]-1)) + "]")
		}
	}
	return b.String()
}

// get returns member k, nil when it is absent or null.
func (o jobj) get(k string) *mval {
	for _, m := range o.t.items(o.v) {
		if o.t.names[m.name] == k {
			if v := o.t.at(m.val); v.Kind != jsontree.Null {
				return v
			}
			return nil
		}
	}
	return nil
}

func (r *manifestReader) str(o jobj, k string) (string, error) {
	v := o.get(k)
	if v == nil {
		return "", nil
	}
	if v.Kind != jsontree.String {
		return "", r.wrongType(v, o.path.key(k), "a string")
	}
	return r.t.text(v), nil
}

func (r *manifestReader) boolean(o jobj, k string) (bool, error) {
	v := o.get(k)
	if v == nil {
		return false, nil
	}
	if v.Kind != jsontree.Bool {
		return false, r.wrongType(v, o.path.key(k), "true or false")
	}
	return v.Bool, nil
}

// integer reads v as a whole number in [lo, hi].
func (r *manifestReader) integer(v *mval, path mpath, lo, hi int64) (int64, error) {
	if v.Kind != jsontree.Number {
		return 0, r.wrongType(v, path, "an integer")
	}
	n, err := r.t.parseInt(v)
	if err != nil || n < lo || n > hi {
		return 0, r.fail(v, path, "%s is not a whole number in [%d, %d]", r.t.text(v), lo, hi)
	}
	return n, nil
}

// array returns the items of member k (nil when absent or null); item
// i is r.t.at(items[i].val).
func (r *manifestReader) array(o jobj, k string) ([]mmember, error) {
	v := o.get(k)
	if v == nil {
		return nil, nil
	}
	if v.Kind != jsontree.Array {
		return nil, r.wrongType(v, o.path.key(k), "an array")
	}
	if items := r.t.items(v); items != nil {
		return items, nil
	}
	return []mmember{}, nil // present, so not nil
}

func (r *manifestReader) dims(o jobj, k string) ([]int64, error) {
	items, err := r.array(o, k)
	if err != nil || items == nil {
		return nil, err
	}
	out := make([]int64, len(items))
	for i, item := range items {
		it := r.t.at(item.val)
		if it.Kind == jsontree.Number {
			// The common case, without building the element's path.
			if n, err := r.t.parseInt(it); err == nil {
				out[i] = n
				continue
			}
		}
		if out[i], err = r.integer(it, o.path.key(k).elem(i), math.MinInt64, math.MaxInt64); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (r *manifestReader) dtype(o jobj) (DType, error) {
	s, err := r.str(o, "dtype")
	if err != nil || s == "" {
		return "", err
	}
	dt := DType(s)
	if _, err := dt.ScalarType(); err != nil {
		return "", r.failErr(o.get("dtype"), o.path.key("dtype"), "bad dtype", err)
	}
	return dt, nil
}

func (r *manifestReader) manifest(root *mval) (*Manifest, error) {
	o, err := r.object(root, mpath{}, "methods", "compile_specs", "weight_streaming_budget_per_engine",
		"target_device", "inline_delegate_data", "segment_alignment")
	if err != nil {
		return nil, err
	}
	m := &Manifest{Program: &Program{}}
	methods, err := r.array(o, "methods")
	if err != nil {
		return nil, err
	}
	if len(methods) == 0 {
		return nil, r.fail(o.get("methods"), o.path.key("methods"), "at least one method is required")
	}
	if m.Options.CompileSpecs, err = each(r, o, "compile_specs", r.spec); err != nil {
		return nil, err
	}
	if v := o.get("weight_streaming_budget_per_engine"); v != nil {
		if m.Options.WeightStreamingBudget, err = r.budget(v, o.path.key("weight_streaming_budget_per_engine")); err != nil {
			return nil, err
		}
	}
	if m.Options.TargetDevice, err = r.str(o, "target_device"); err != nil {
		return nil, err
	}
	if m.Options.TargetDevice != "" {
		if err := checkTargetDevice([]byte(m.Options.TargetDevice)); err != nil {
			return nil, r.failErr(o.get("target_device"), o.path.key("target_device"), "bad target device", err)
		}
	}
	if m.Options.InlineDelegateData, err = r.boolean(o, "inline_delegate_data"); err != nil {
		return nil, err
	}
	if v := o.get("segment_alignment"); v != nil {
		n, err := r.integer(v, o.path.key("segment_alignment"), 1, MaxSegmentAlignment)
		if err != nil {
			return nil, err
		}
		m.Options.SegmentAlignment = uint64(n)
	}
	if m.Program.Methods, err = each(r, o, "methods", r.method); err != nil {
		return nil, err
	}
	return m, nil
}

func (r *manifestReader) method(v *mval, path mpath) (*Method, error) {
	o, err := r.object(v, path, "name", "inputs", "outputs", "engines", "compile_specs")
	if err != nil {
		return nil, err
	}
	meth := &Method{}
	if meth.Name, err = r.str(o, "name"); err != nil {
		return nil, err
	}
	if meth.Name == "" {
		return nil, r.fail(v, path.key("name"), "method name is required")
	}
	if meth.CompileSpecs, err = each(r, o, "compile_specs", r.spec); err != nil {
		return nil, err
	}
	if meth.Inputs, err = each(r, o, "inputs", func(v *mval, path mpath) (*Tensor, error) {
		t, err := r.tensor(v, path)
		if err == nil && (t.DType == "" || t.Shape == nil) {
			return nil, r.fail(v, path, "input %s needs \"dtype\" and \"shape\"", quote.String(t.Name))
		}
		return t, err
	}); err != nil {
		return nil, err
	}
	if meth.Outputs, err = each(r, o, "outputs", r.tensor); err != nil {
		return nil, err
	}
	if meth.Calls, err = each(r, o, "engines", r.engine); err != nil {
		return nil, err
	}
	return meth, nil
}

// tensor reads a tensor object or a bare tensor name.
func (r *manifestReader) tensor(v *mval, path mpath) (*Tensor, error) {
	if v.Kind == jsontree.String {
		if v.n == 0 && !v.spilled {
			return nil, r.fail(v, path, "tensor name is empty")
		}
		return &Tensor{Name: r.t.text(v)}, nil
	}
	if v.Kind != jsontree.Object {
		return nil, r.wrongType(v, path, "a tensor object or a tensor name")
	}
	o, err := r.object(v, path, "name", "dtype", "shape", "max_shape")
	if err != nil {
		return nil, err
	}
	t := &Tensor{}
	if t.Name, err = r.str(o, "name"); err != nil {
		return nil, err
	}
	if t.Name == "" {
		return nil, r.fail(v, path.key("name"), "tensor name is required")
	}
	if t.DType, err = r.dtype(o); err != nil {
		return nil, err
	}
	if t.Shape, err = r.dims(o, "shape"); err != nil {
		return nil, err
	}
	if t.MaxShape, err = r.dims(o, "max_shape"); err != nil {
		return nil, err
	}
	return t, nil
}

// binding reads a binding object or a bare name (binding and tensor named
// alike).
func (r *manifestReader) binding(v *mval, path mpath) (*Binding, error) {
	if v.Kind == jsontree.String {
		return &Binding{Name: r.t.text(v)}, nil
	}
	if v.Kind != jsontree.Object {
		return nil, r.wrongType(v, path, "a binding object or a binding name")
	}
	o, err := r.object(v, path, "binding", "tensor", "dtype", "shape", "max_shape")
	if err != nil {
		return nil, err
	}
	b := &Binding{}
	if b.Name, err = r.str(o, "binding"); err != nil {
		return nil, err
	}
	if b.Tensor, err = r.str(o, "tensor"); err != nil {
		return nil, err
	}
	if b.DType, err = r.dtype(o); err != nil {
		return nil, err
	}
	if b.Shape, err = r.dims(o, "shape"); err != nil {
		return nil, err
	}
	if b.MaxShape, err = r.dims(o, "max_shape"); err != nil {
		return nil, err
	}
	return b, nil
}

func (r *manifestReader) engine(v *mval, path mpath) (*EngineCall, error) {
	o, err := r.object(v, path, "name", "engine", "blob", "device_id", "hardware_compatible",
		"inputs", "outputs", "aliased_io", "serialized_metadata", "target_platform")
	if err != nil {
		return nil, err
	}
	c := &EngineCall{}
	var engine, blob string
	for _, f := range []struct {
		key string
		dst *string
	}{{"name", &c.Name}, {"engine", &engine}, {"blob", &blob},
		{"serialized_metadata", &c.SerializedMetadata}, {"target_platform", &c.TargetPlatform}} {
		if *f.dst, err = r.str(o, f.key); err != nil {
			return nil, err
		}
	}
	if c.HardwareCompatible, err = r.boolean(o, "hardware_compatible"); err != nil {
		return nil, err
	}
	if err := r.engineSource(v, path, c, engine, blob); err != nil {
		return nil, err
	}
	if dv := o.get("device_id"); dv != nil {
		if blob != "" {
			return nil, r.fail(dv, path.key("device_id"), "a blob carries its own device_id")
		}
		n, err := r.integer(dv, path.key("device_id"), 0, maxDeviceIndex)
		if err != nil {
			return nil, err
		}
		c.DeviceID = int(n)
	}
	if c.Inputs, err = each(r, o, "inputs", r.binding); err != nil {
		return nil, err
	}
	if c.Outputs, err = each(r, o, "outputs", r.binding); err != nil {
		return nil, err
	}
	if c.AliasedIO, err = each(r, o, "aliased_io", r.alias); err != nil {
		return nil, err
	}
	return c, nil
}

// engineSource sets c.Engine from the call's "engine" or "blob" path
// (relative to the manifest's directory), and its default name.
func (r *manifestReader) engineSource(v *mval, path mpath, c *EngineCall, engine, blob string) error {
	resolvePath := func(p string) string {
		if filepath.IsAbs(p) || r.baseDir == "" {
			return p
		}
		return filepath.Join(r.baseDir, p)
	}
	switch {
	case engine != "" && blob != "":
		return r.fail(v, path, "give \"engine\" or \"blob\", not both")
	case engine != "":
		c.Engine = EngineFile(resolvePath(engine))
		c.Name = cmp.Or(c.Name, filepath.Base(engine))
	case blob != "":
		c.Engine = BlobFile(resolvePath(blob))
		c.Name = cmp.Or(c.Name, filepath.Base(blob))
	default:
		return r.fail(v, path, "\"engine\" (a serialized TensorRT engine) or \"blob\" (an existing TensorRT delegate blob) is required")
	}
	return nil
}

// each reads the elements of array member k of o (nil when it is absent,
// null or empty) with read, each at its own path.
func each[T any](r *manifestReader, o jobj, k string, read func(*mval, mpath) (T, error)) ([]T, error) {
	items, err := r.array(o, k)
	if err != nil {
		return nil, err
	}
	var out []T
	for i, item := range items {
		v, err := read(r.t.at(item.val), o.path.key(k).elem(i))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// alias reads an element of a call's "aliased_io"; a missing kind is
// kv_cache_update.
func (r *manifestReader) alias(v *mval, path mpath) (AliasedIO, error) {
	var a AliasedIO
	o, err := r.object(v, path, "output", "input", "kind")
	if err != nil {
		return a, err
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"output", &a.Output}, {"input", &a.Input}, {"kind", &a.Kind}} {
		if *f.dst, err = r.str(o, f.key); err != nil {
			return AliasedIO{}, err
		}
	}
	a.Kind = cmp.Or(a.Kind, "kv_cache_update")
	return a, nil
}

// spec reads an element of a "compile_specs" array.
func (r *manifestReader) spec(sv *mval, path mpath) (*pte.CompileSpec, error) {
	so, err := r.object(sv, path, "key", "value", "value_hex")
	if err != nil {
		return nil, err
	}
	key, err := r.str(so, "key")
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, r.fail(sv, path, "compile spec needs a non-empty \"key\"")
	}
	val, hexVal := so.get("value"), so.get("value_hex")
	var v []byte
	switch {
	case val != nil && hexVal != nil:
		return nil, r.fail(sv, path, "give \"value\" or \"value_hex\", not both")
	case val != nil:
		s, err := r.str(so, "value")
		if err != nil {
			return nil, err
		}
		v = []byte(s)
	case hexVal != nil:
		s, err := r.str(so, "value_hex")
		if err != nil {
			return nil, err
		}
		if v, err = hex.DecodeString(s); err != nil {
			return nil, r.failErr(hexVal, path.key("value_hex"), "not hex", err)
		}
	default:
		return nil, r.fail(sv, path, "compile spec needs \"value\" or \"value_hex\"")
	}
	if v == nil {
		v = []byte{}
	}
	return &pte.CompileSpec{Key: key, Value: v}, nil
}

// budget reads a budget given as a JSON integer (bytes) or as a size
// string ("4GiB", "auto"). "auto" yields compilespec.AutoBudget.
func (r *manifestReader) budget(v *mval, path mpath) (compilespec.Budget, error) {
	var s string
	switch v.Kind {
	case jsontree.String:
		s = r.t.text(v)
	case jsontree.Number:
		s = r.t.text(v)
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			return compilespec.AutoBudget, r.fail(v, path, "bad budget: %s is not a whole number of bytes below 2^63", s)
		}
	default:
		return compilespec.AutoBudget, r.fail(v, path, "bad budget: want a byte count or a size string such as \"4GiB\" or \"auto\", found %s", v.Kind)
	}
	b, err := compilespec.ParseBudgetSize(s)
	if err != nil {
		return compilespec.AutoBudget, r.failErr(v, path, "bad budget", err)
	}
	return b, nil
}
