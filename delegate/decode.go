package delegate

import (
	"fmt"
	"io"
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
// aliased_io that are not arrays. DecodePython accepts exactly what Python
// accepts; Decode accepts a blob if and only if DecodePython does and its
// PyMetadata.Refused is empty, and then refuses with Refused[0].
//
// Metadata larger than MaxMetadataSize is refused (a *BlobError for
// metadata_size) rather than read.
//
// Only the header, the metadata and the blob's last byte (to confirm that r
// holds size bytes) are read. A malformed blob gives a *BlobError; failures
// to read r, including a reader shorter than size, are returned as they
// are, wrapped.
func Decode(r io.ReaderAt, size int64) (*Blob, error) {
	py, err := DecodePython(r, size)
	if err != nil {
		return nil, err
	}
	return py.strict()
}

// strict applies the strict reading to a blob the Python reading accepted.
func (py *PyBlob) strict() (*Blob, error) {
	if len(py.Metadata.Refused) > 0 {
		return nil, py.Metadata.Refused[0]
	}
	return &Blob{Header: py.Header, Metadata: *py.Metadata.strict(), MetadataRaw: py.MetadataRaw, Size: py.Size, r: py.r}, nil
}

// checkHeader applies the Python reader's header checks, in its order.
func checkHeader(hdr []byte, size int64) (*Header, error) {
	bad := func(field string, off int64, format string, args ...any) (*Header, error) {
		return nil, &BlobError{Field: field, Off: off, Msg: fmt.Sprintf(format, args...)}
	}
	h, ok := ParseHeader(hdr)
	if !ok {
		return bad("header", size, "blob is %d bytes, shorter than the %d-byte header", size, HeaderSize)
	}
	if !knownMagic(h.Magic) {
		return bad("magic", offMagic, "unknown magic %s (want TR01 or TR02)", h.MagicString())
	}
	if h.EngineOffset%EngineAlignment != 0 {
		return bad("engine_offset", offEngineOffset, "engine offset %d is not %d-byte aligned", h.EngineOffset, EngineAlignment)
	}
	if h.MetadataOffset < HeaderSize {
		return bad("metadata_offset", offMetadataOffset, "metadata offset %d is inside the %d-byte header", h.MetadataOffset, HeaderSize)
	}
	usize := uint64(size)
	mdEnd := uint64(h.MetadataOffset) + uint64(h.MetadataSize) // cannot overflow: two uint32
	if mdEnd > usize {
		return bad("metadata_size", offMetadataSize, "metadata [%d, %d) extends past the end of the %d-byte blob", h.MetadataOffset, mdEnd, size)
	}
	if uint64(h.EngineOffset) > usize || h.EngineSize > usize-uint64(h.EngineOffset) {
		wraps := ""
		if uint64(h.EngineOffset)+h.EngineSize < h.EngineSize {
			wraps = " (offset + size overflows 64 bits)"
		}
		return bad("engine_size", offEngineSize, "engine at %d with size %d extends past the end of the %d-byte blob%s",
			h.EngineOffset, h.EngineSize, size, wraps)
	}
	if mdEnd > uint64(h.EngineOffset) {
		return bad("metadata_size", offMetadataSize, "metadata [%d, %d) overlaps the engine at %d", h.MetadataOffset, mdEnd, h.EngineOffset)
	}
	if h.MetadataSize > MaxMetadataSize {
		return bad("metadata_size", offMetadataSize, "metadata of %d bytes is larger than the %d bytes ptekit reads", h.MetadataSize, MaxMetadataSize)
	}
	return &h, nil
}
