package delegate

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// Decode reads the blob in r (size bytes): the header, checked in the order
// upstream's Python reader checks it, and the metadata, parsed as strict
// UTF-8 and strict JSON with the Python reader's defaults for absent keys
// (dtype "", shape [], is_input true, kind "kv_cache_update",
// hardware_compatible false, device_id 0, strings "", missing arrays
// empty). Unlike the Python reader, Decode also checks types: a name must
// be a string, is_input and hardware_compatible booleans, device_id and
// shape entries integers that fit in an int64, and so on.
//
// Decode also refuses a few things Python accepts, because they cannot be
// represented faithfully or are not JSON: NaN and Infinity, an unpaired
// UTF-16 surrogate escape, integers outside int64, two aliased_io entries
// for one output (Python keeps only the last), and io_bindings or
// aliased_io that are not arrays.
//
// Only the header and metadata are read. A malformed blob gives a
// *BlobError; failures to read r are returned as they are, wrapped.
func Decode(r io.ReaderAt, size int64) (*Blob, error) {
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
	return decodeWith(r, size, h, md)
}

func decodeWith(r io.ReaderAt, size int64, h *Header, md []byte) (*Blob, error) {
	m, err := decodeMetadata(md, int64(h.MetadataOffset))
	if err != nil {
		return nil, err
	}
	return &Blob{Header: *h, Metadata: *m, MetadataRaw: md, Size: size, r: r}, nil
}

// checkHeader applies the Python reader's header checks, in its order.
func checkHeader(hdr []byte, size int64) (*Header, error) {
	if len(hdr) < HeaderSize {
		return nil, &BlobError{Field: "header", Off: size,
			Msg: fmt.Sprintf("blob is %d bytes, shorter than the %d-byte header", size, HeaderSize)}
	}
	h := parseHeader(hdr)
	if !knownMagic(h.Magic) {
		return nil, &BlobError{Field: "magic", Off: offMagic,
			Msg: fmt.Sprintf("unknown magic %s (want TR01 or TR02)", h.MagicString())}
	}
	if h.EngineOffset%EngineAlignment != 0 {
		return nil, &BlobError{Field: "engine_offset", Off: offEngineOffset,
			Msg: fmt.Sprintf("engine offset %d is not %d-byte aligned", h.EngineOffset, EngineAlignment)}
	}
	if h.MetadataOffset < HeaderSize {
		return nil, &BlobError{Field: "metadata_offset", Off: offMetadataOffset,
			Msg: fmt.Sprintf("metadata offset %d is inside the %d-byte header", h.MetadataOffset, HeaderSize)}
	}
	usize := uint64(size)
	mdEnd := uint64(h.MetadataOffset) + uint64(h.MetadataSize) // cannot overflow: two uint32
	if mdEnd > usize {
		return nil, &BlobError{Field: "metadata_size", Off: offMetadataSize,
			Msg: fmt.Sprintf("metadata [%d, %d) extends past the end of the %d-byte blob", h.MetadataOffset, mdEnd, size)}
	}
	if uint64(h.EngineOffset) > usize || h.EngineSize > usize-uint64(h.EngineOffset) {
		msg := fmt.Sprintf("engine at %d with size %d extends past the end of the %d-byte blob", h.EngineOffset, h.EngineSize, size)
		if uint64(h.EngineOffset)+h.EngineSize < h.EngineSize {
			msg += " (offset + size overflows 64 bits)"
		}
		return nil, &BlobError{Field: "engine_size", Off: offEngineSize, Msg: msg}
	}
	if mdEnd > uint64(h.EngineOffset) {
		return nil, &BlobError{Field: "metadata_size", Off: offMetadataSize,
			Msg: fmt.Sprintf("metadata [%d, %d) overlaps the engine at %d", h.MetadataOffset, mdEnd, h.EngineOffset)}
	}
	return &h, nil
}

// metaDecoder extracts Metadata from parsed JSON, reporting errors with the
// member path and the absolute byte offset (base is metadata_offset).
type metaDecoder struct {
	base int64
}

func (d *metaDecoder) errAt(path string, v *jsonValue, format string, args ...any) error {
	return &BlobError{Field: "metadata" + path, Off: d.base + int64(v.off), Msg: fmt.Sprintf(format, args...)}
}

// decodeMetadata parses metadata bytes found at blob offset base.
func decodeMetadata(md []byte, base int64) (*Metadata, error) {
	if !utf8.Valid(md) {
		i := 0
		for i < len(md) {
			r, n := utf8.DecodeRune(md[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return nil, &BlobError{Field: "metadata", Off: base + int64(i), Msg: fmt.Sprintf("invalid UTF-8 (byte 0x%02x)", md[i])}
	}
	root, err := parseJSON(md)
	if err != nil {
		var se *jsonSyntaxError
		if errors.As(err, &se) {
			return nil, &BlobError{Field: "metadata", Off: base + int64(se.off), Msg: "invalid JSON: " + se.msg}
		}
		return nil, err
	}
	d := &metaDecoder{base: base}
	if root.kind != jsonObject {
		return nil, d.errAt("", root, "want a JSON object, found %s", root.describe())
	}
	m := &Metadata{IOBindings: []Binding{}, AliasedIO: []AliasedIO{}}
	if v := root.member("io_bindings"); v != nil {
		if v.kind != jsonArray {
			return nil, d.errAt(".io_bindings", v, "want an array, found %s", v.describe())
		}
		for i, e := range v.elems {
			b, err := d.binding(fmt.Sprintf(".io_bindings[%d]", i), e)
			if err != nil {
				return nil, err
			}
			m.IOBindings = append(m.IOBindings, *b)
		}
	}
	if v := root.member("aliased_io"); v != nil {
		if v.kind != jsonArray {
			return nil, d.errAt(".aliased_io", v, "want an array, found %s", v.describe())
		}
		seen := map[string]int{}
		for i, e := range v.elems {
			path := fmt.Sprintf(".aliased_io[%d]", i)
			a, err := d.aliased(path, e)
			if err != nil {
				return nil, err
			}
			if j, dup := seen[a.Output]; dup {
				return nil, d.errAt(path+".output", e.member("output"),
					"output %q is already aliased by aliased_io[%d]", a.Output, j)
			}
			seen[a.Output] = i
			m.AliasedIO = append(m.AliasedIO, *a)
		}
	}
	if m.HardwareCompatible, err = d.boolean(root, "", "hardware_compatible", false); err != nil {
		return nil, err
	}
	if v := root.member("device_id"); v != nil {
		if m.DeviceID, err = d.integer(".device_id", v); err != nil {
			return nil, err
		}
	}
	if m.SerializedMetadata, err = d.str(root, "", "serialized_metadata", false); err != nil {
		return nil, err
	}
	if m.TargetPlatform, err = d.str(root, "", "target_platform", false); err != nil {
		return nil, err
	}
	return m, nil
}

func (d *metaDecoder) binding(path string, e *jsonValue) (*Binding, error) {
	if e.kind != jsonObject {
		return nil, d.errAt(path, e, "want an object, found %s", e.describe())
	}
	var b Binding
	var err error
	if b.Name, err = d.str(e, path, "name", true); err != nil {
		return nil, err
	}
	if b.DType, err = d.str(e, path, "dtype", false); err != nil {
		return nil, err
	}
	b.Shape = []int64{}
	if v := e.member("shape"); v != nil {
		if v.kind != jsonArray {
			return nil, d.errAt(path+".shape", v, "want an array of integers, found %s", v.describe())
		}
		for i, x := range v.elems {
			n, err := d.integer(fmt.Sprintf("%s.shape[%d]", path, i), x)
			if err != nil {
				return nil, err
			}
			b.Shape = append(b.Shape, n)
		}
	}
	if b.IsInput, err = d.boolean(e, path, "is_input", true); err != nil {
		return nil, err
	}
	return &b, nil
}

func (d *metaDecoder) aliased(path string, e *jsonValue) (*AliasedIO, error) {
	if e.kind != jsonObject {
		return nil, d.errAt(path, e, "want an object, found %s", e.describe())
	}
	var a AliasedIO
	var err error
	if a.Output, err = d.str(e, path, "output", true); err != nil {
		return nil, err
	}
	if a.Input, err = d.str(e, path, "input", true); err != nil {
		return nil, err
	}
	if e.member("kind") == nil {
		a.Kind = KindKVCacheUpdate
	} else if a.Kind, err = d.str(e, path, "kind", true); err != nil {
		return nil, err
	}
	return &a, nil
}

// str reads the string member key of obj; absent gives "" unless required.
func (d *metaDecoder) str(obj *jsonValue, path, key string, required bool) (string, error) {
	v := obj.member(key)
	if v == nil {
		if required {
			return "", d.errAt(path, obj, "missing required key %q", key)
		}
		return "", nil
	}
	if v.kind != jsonString {
		return "", d.errAt(path+"."+key, v, "want a string, found %s", v.describe())
	}
	return v.text, nil
}

// boolean reads the boolean member key of obj; absent gives def.
func (d *metaDecoder) boolean(obj *jsonValue, path, key string, def bool) (bool, error) {
	v := obj.member(key)
	if v == nil {
		return def, nil
	}
	if v.kind != jsonBool {
		return false, d.errAt(path+"."+key, v, "want true or false, found %s", v.describe())
	}
	return v.b, nil
}

// integer reads a JSON integer (no fraction, no exponent) that fits an int64.
func (d *metaDecoder) integer(path string, v *jsonValue) (int64, error) {
	if v.kind != jsonNumber {
		return 0, d.errAt(path, v, "want an integer, found %s", v.describe())
	}
	n, err := strconv.ParseInt(v.text, 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, d.errAt(path, v, "integer %s does not fit in 64 bits", v.text)
		}
		return 0, d.errAt(path, v, "want an integer, found %s", v.describe())
	}
	return n, nil
}
