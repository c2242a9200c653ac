package delegate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ptekit/ptekit/internal/jsontree"
)

// PyBlob is a blob as upstream's Python reader (deserialize_engine) reads
// it. The engine bytes are not loaded: use Engine to read them.
type PyBlob struct {
	Header      Header     // the header as stored
	Metadata    PyMetadata // the metadata, values as Python holds them
	MetadataRaw []byte     // the metadata bytes as stored
	Size        int64      // size of the whole blob

	r io.ReaderAt
}

// Engine returns the serialized TensorRT engine as a lazy section of the
// blob's reader. For a PyBlob not made by DecodePython every read fails.
func (b *PyBlob) Engine() *io.SectionReader { return engineSection(b.r, &b.Header) }

// PyMetadata is the metadata as upstream's Python reader returns it. That
// reader checks no types, so every value keeps the JSON type it has in the
// blob: nil (null), bool, json.Number, string, []any or map[string]any, as
// encoding/json decodes with UseNumber. A json.Number holds the literal as
// written ("1e2", "-0", "NaN", "Infinity"); Python reads a literal with a
// fraction or an exponent as a float (1e2 is 100.0) and any other as an
// exact integer of any size. A string holding an unpaired UTF-16 surrogate
// escape, which a Go string cannot carry, has U+FFFD in its place.
//
// Absent keys take Python's defaults: dtype "", shape [], is_input true,
// kind "kv_cache_update", hardware_compatible false, device_id 0, strings
// "", missing arrays empty.
type PyMetadata struct {
	IOBindings []PyBinding // in order; see PyBinding.Input for the direction
	// AliasedIO is keyed by output, as Python's dict is: a second entry for
	// an output replaces the first one's input and kind in its place.
	AliasedIO          []PyAliasedIO
	HardwareCompatible any // a bool as written; Python uses its truthiness
	DeviceID           any // an integer as written, of any size
	SerializedMetadata any // a string as written
	TargetPlatform     any // a string as written

	// Refused lists what ptekit's strict reading (Decode) refuses although
	// Python accepts it, in the order found, each as the *BlobError Decode
	// gives: a value of the wrong JSON type (device_id "1", is_input 1, a
	// name that is a number, ...), an integer outside int64, NaN or
	// Infinity, an unpaired surrogate, io_bindings or aliased_io given as
	// an empty object or string rather than an array, and a second
	// aliased_io entry for one output.
	Refused []*BlobError
}

// PyBinding is one binding as Python's reader holds it; see PyMetadata for
// the value types.
type PyBinding struct {
	Name    any // "name": a string as written; the key is required
	DType   any // "dtype": a string as written; "" when absent
	Shape   any // "shape": an array of integers as written; []any{} when absent
	IsInput any // "is_input": a bool as written; true when absent (see Input)
}

// Input reports whether Python treats the binding as an input: is_input is
// truthy (so the string "false" is an input, and null an output).
func (b *PyBinding) Input() bool { return pyTruthy(b.IsInput) }

// PyAliasedIO is one aliased_io entry as Python's reader holds it; see
// PyMetadata for the value types.
type PyAliasedIO struct {
	Output any // "output": the output binding's name as written; required
	Input  any // "input": the input binding's name as written; required
	Kind   any // "kind": a string as written; KindKVCacheUpdate when absent
}

// DecodePython reads the blob in r (size bytes) as upstream's Python reader
// does: the header checks in its order, then the metadata as strict UTF-8
// and as JSON by Python's json.loads (which also takes NaN, Infinity and
// unpaired surrogates), then the fields without type checks. It accepts
// exactly what that reader accepts; a refusal is a *BlobError naming what
// Python's reader fails on (its error would be a ValueError for the
// header, UnicodeDecodeError or JSONDecodeError for the metadata text,
// and KeyError, TypeError or AttributeError for the fields). Metadata
// larger than MaxMetadataSize is refused too, without being read.
func DecodePython(r io.ReaderAt, size int64) (*PyBlob, error) {
	hdr, err := readHeader(r, size)
	if err != nil {
		return nil, err
	}
	h, err := checkHeader(hdr, size)
	if err != nil {
		return nil, err
	}
	md, err := readMetadata(r, h.MetadataOffset, h.MetadataSize)
	if err != nil {
		return nil, err
	}
	py, err := decodePyMetadata(md, int64(h.MetadataOffset))
	if err != nil {
		return nil, err
	}
	return &PyBlob{Header: *h, Metadata: *py, MetadataRaw: md, Size: size, r: r}, nil
}

// pyReader extracts PyMetadata from parsed JSON, reporting errors with the
// member path and the absolute byte offset (base is metadata_offset).
type pyReader struct {
	base    int64
	refused []*BlobError
}

func (d *pyReader) errAt(path string, v *jsonValue, format string, args ...any) *BlobError {
	return &BlobError{Field: "metadata" + path, Off: d.base + int64(v.Off), Msg: fmt.Sprintf(format, args...)}
}

func (d *pyReader) refuse(path string, v *jsonValue, format string, args ...any) {
	d.refused = append(d.refused, d.errAt(path, v, format, args...))
}

// decodePyMetadata parses metadata bytes found at blob offset base the way
// the Python reader does.
func decodePyMetadata(md []byte, base int64) (*PyMetadata, error) {
	if !utf8.Valid(md) {
		i := 0 // the first byte that is not part of a valid encoding
		for r, n := utf8.DecodeRune(md); r != utf8.RuneError || n > 1; r, n = utf8.DecodeRune(md[i:]) {
			i += n
		}
		return nil, &BlobError{Field: "metadata", Off: base + int64(i), Msg: fmt.Sprintf("invalid UTF-8 (byte 0x%02x)", md[i])}
	}
	// No *jsonValue outlives this call (PyMetadata holds converted
	// values, BlobErrors offsets and text), so the tree's memory goes
	// back to the pool for the next blob.
	a := arenas.Get().(*jsontree.Arena)
	if len(md) <= maxPooledMetadata {
		defer arenas.Put(a)
	}
	root, ext, err := parseJSON(a, md, base)
	if err != nil {
		return nil, err
	}
	d := &pyReader{base: base}
	for _, e := range ext {
		d.refused = append(d.refused, &BlobError{Field: "metadata", Off: base + int64(e.Off), Msg: "invalid JSON: " + e.Msg})
	}
	if root.Kind != jsontree.Object {
		return nil, d.errAt("", root, "want a JSON object, found %s", describe(root))
	}
	m := &PyMetadata{IOBindings: []PyBinding{}, AliasedIO: []PyAliasedIO{}}
	elems, err := d.iterate(".io_bindings", root.Member("io_bindings"))
	if err != nil {
		return nil, err
	}
	for i, e := range elems {
		b, err := d.binding(".io_bindings["+strconv.Itoa(i)+"]", e)
		if err != nil {
			return nil, err
		}
		m.IOBindings = append(m.IOBindings, *b)
	}
	if elems, err = d.iterate(".aliased_io", root.Member("aliased_io")); err != nil {
		return nil, err
	}
	seen := map[string]int{} // Python dict key -> index in m.AliasedIO
	for i, e := range elems {
		path := ".aliased_io[" + strconv.Itoa(i) + "]"
		a, out, err := d.aliased(path, e)
		if err != nil {
			return nil, err
		}
		k, ok := pyKey(out)
		if !ok {
			return nil, d.errAt(path+".output", out, "want a string, found %s (Python fails: unhashable dict key)", describe(out))
		}
		if j, dup := seen[k]; dup {
			d.refuse(path+".output", out, "output %s is already aliased by an earlier entry (Python keeps only this one, in the first one's place)", describe(out))
			m.AliasedIO[j].Input, m.AliasedIO[j].Kind = a.Input, a.Kind
			continue
		}
		seen[k] = len(m.AliasedIO)
		m.AliasedIO = append(m.AliasedIO, *a)
	}
	m.HardwareCompatible = d.member(root, "", "hardware_compatible", jsontree.Bool, false)
	m.DeviceID = json.Number("0")
	if v := root.Member("device_id"); v != nil {
		m.DeviceID = toAny(v)
		if _, err := int64Of(v); err != nil {
			d.refuse(".device_id", v, "%s", err)
		}
	}
	m.SerializedMetadata = d.member(root, "", "serialized_metadata", jsontree.String, "")
	m.TargetPlatform = d.member(root, "", "target_platform", jsontree.String, "")
	m.Refused = d.refused
	return m, nil
}

// iterate returns what Python's for loop over a list-valued member yields,
// where each element must then be an object. An absent member is empty. An
// empty object or string iterates as nothing (refused by the strict
// reading); anything else that is not an array fails as in Python.
func (d *pyReader) iterate(path string, v *jsonValue) ([]*jsonValue, error) {
	switch {
	case v == nil:
		return nil, nil
	case v.Kind == jsontree.Array:
		return v.Elems, nil
	case v.Kind == jsontree.Object && len(v.Elems) == 0, v.Kind == jsontree.String && v.Text == "":
		d.refuse(path, v, "want an array, found %s", describe(v))
		return nil, nil
	case v.Kind == jsontree.Object, v.Kind == jsontree.String:
		return nil, d.errAt(path, v, "want an array of objects, found %s (Python iterates it and fails on its first element)", describe(v))
	}
	return nil, d.errAt(path, v, "want an array, found %s (Python fails: not iterable)", describe(v))
}

func (d *pyReader) binding(path string, e *jsonValue) (*PyBinding, error) {
	if e.Kind != jsontree.Object {
		return nil, d.errAt(path, e, "want an object, found %s", describe(e))
	}
	name := e.Member("name")
	if name == nil {
		return nil, d.errAt(path, e, "missing required key %q", "name")
	}
	b := &PyBinding{Name: toAny(name), Shape: []any{}}
	if name.Kind != jsontree.String {
		d.refuse(path+".name", name, "want a string, found %s", describe(name))
	}
	b.DType = d.member(e, path, "dtype", jsontree.String, "")
	if v := e.Member("shape"); v != nil {
		b.Shape = toAny(v)
		if v.Kind != jsontree.Array {
			d.refuse(path+".shape", v, "want an array of integers, found %s", describe(v))
		} else {
			for i, x := range v.Elems {
				if _, err := int64Of(x); err != nil { // the path only when refused: this runs per dimension
					d.refuse(path+".shape["+strconv.Itoa(i)+"]", x, "%s", err)
				}
			}
		}
	}
	b.IsInput = d.member(e, path, "is_input", jsontree.Bool, true)
	return b, nil
}

// aliased reads an aliased_io entry and returns it with its output value.
func (d *pyReader) aliased(path string, e *jsonValue) (*PyAliasedIO, *jsonValue, error) {
	if e.Kind != jsontree.Object {
		return nil, nil, d.errAt(path, e, "want an object, found %s (Python fails: not subscriptable by key)", describe(e))
	}
	out, in := e.Member("output"), e.Member("input")
	for _, kv := range [...]struct {
		key string
		v   *jsonValue
	}{{"output", out}, {"input", in}} {
		if kv.v == nil {
			return nil, nil, d.errAt(path, e, "missing required key %q", kv.key)
		}
		if kv.v.Kind != jsontree.String {
			d.refuse(path+"."+kv.key, kv.v, "want a string, found %s", describe(kv.v))
		}
	}
	a := &PyAliasedIO{Output: toAny(out), Input: toAny(in)}
	a.Kind = d.member(e, path, "kind", jsontree.String, KindKVCacheUpdate)
	return a, out, nil
}

// member returns obj[key] as Python holds it, def when absent, and refuses
// a value whose kind is not want.
func (d *pyReader) member(obj *jsonValue, path, key string, want jsontree.Kind, def any) any {
	v := obj.Member(key)
	if v == nil {
		return def
	}
	if v.Kind != want {
		if want == jsontree.Bool {
			d.refuse(path+"."+key, v, "want true or false, found %s", describe(v))
		} else {
			d.refuse(path+"."+key, v, "want %s, found %s", want, describe(v))
		}
	}
	return toAny(v)
}

// int64Of reads an integer value: a JSON integer (no fraction, no
// exponent) within int64.
func int64Of(v *jsonValue) (int64, error) {
	if v.Kind == jsontree.Number {
		n, err := strconv.ParseInt(v.Text, 10, 64)
		if err == nil {
			return n, nil
		}
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("integer %s does not fit in 64 bits", truncate(v.Text, 40))
		}
	}
	return 0, fmt.Errorf("want an integer, found %s", describe(v))
}

// toAny converts a parsed value to the Go value encoding/json would give
// with UseNumber (objects: the last of duplicate keys wins).
func toAny(v *jsonValue) any {
	switch v.Kind {
	case jsontree.Bool:
		return v.Bool
	case jsontree.Number:
		return json.Number(v.Text)
	case jsontree.String:
		return v.Text
	case jsontree.Array:
		out := make([]any, len(v.Elems))
		for i, e := range v.Elems {
			out[i] = toAny(e)
		}
		return out
	case jsontree.Object:
		out := make(map[string]any, len(v.Keys))
		for i, k := range v.Keys {
			out[k] = toAny(v.Elems[i])
		}
		return out
	}
	return nil
}

// pyKey returns a string that is equal for two values exactly when Python
// takes them for the same dict key (1, 1.0 and true are one key; each NaN
// is its own), or false when Python cannot hash the value (a list or dict).
func pyKey(v *jsonValue) (string, bool) {
	switch v.Kind {
	case jsontree.Null:
		return "None", true
	case jsontree.String:
		return "s" + v.Text, true
	case jsontree.Bool:
		if v.Bool {
			return "n1", true
		}
		return "n0", true
	case jsontree.Number:
		if !strings.ContainsAny(v.Text, ".eEIN") {
			r, _ := new(big.Rat).SetString(v.Text)
			return "n" + r.RatString(), true
		}
		f, _ := strconv.ParseFloat(v.Text, 64) // ±Inf on overflow, as in Python
		switch {
		case math.IsNaN(f):
			return fmt.Sprintf("nan@%d", v.Off), true
		case math.IsInf(f, 0):
			return fmt.Sprintf("inf%v", f), true
		}
		return "n" + new(big.Rat).SetFloat64(f).RatString(), true
	}
	return "", false
}

// pyTruthy is Python's bool() of a JSON value as PyMetadata holds it.
func pyTruthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case json.Number:
		if x == "NaN" {
			return true
		}
		f, err := strconv.ParseFloat(string(x), 64)
		return err != nil || f != 0 // a float that overflows is ±Inf: truthy
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// strict converts metadata without refusals to the typed Metadata.
func (m *PyMetadata) strict() *Metadata {
	out := &Metadata{IOBindings: make([]Binding, 0, len(m.IOBindings)), AliasedIO: make([]AliasedIO, 0, len(m.AliasedIO))}
	for _, b := range m.IOBindings {
		sb := Binding{Name: b.Name.(string), DType: b.DType.(string), IsInput: b.IsInput.(bool), Shape: []int64{}}
		for _, x := range b.Shape.([]any) {
			n, _ := x.(json.Number).Int64()
			sb.Shape = append(sb.Shape, n)
		}
		out.IOBindings = append(out.IOBindings, sb)
	}
	for _, a := range m.AliasedIO {
		out.AliasedIO = append(out.AliasedIO, AliasedIO{Output: a.Output.(string), Input: a.Input.(string), Kind: a.Kind.(string)})
	}
	out.HardwareCompatible = m.HardwareCompatible.(bool)
	out.DeviceID, _ = m.DeviceID.(json.Number).Int64()
	out.SerializedMetadata = m.SerializedMetadata.(string)
	out.TargetPlatform = m.TargetPlatform.(string)
	return out
}
