package ptd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/ptekit/ptekit/internal/fbverify"
	"github.com/ptekit/ptekit/pte"
)

// Wire constants of the container (extension/flat_tensor/serialize).
const (
	// Identifier is the FlatBuffers file identifier at bytes 4..8.
	Identifier = "FT01"
	// HeaderMagic opens the header at byte 8.
	HeaderMagic = "FH01"
	// HeaderOffset is where the header starts.
	HeaderOffset = 8
	// MinHeaderLength is the shortest header ExecuTorch accepts: magic,
	// length and four u64 fields.
	MinHeaderLength = 40
	// HeadBytes is what FlatTensorDataMap::load reads first; a shorter file
	// fails with InvalidArgument.
	HeadBytes = 64
)

// Header is the "FH01" header at byte 8, all fields little-endian.
type Header struct {
	// Length is the header length in bytes (at least MinHeaderLength;
	// longer headers are allowed and their extra bytes ignored).
	Length uint32
	// FlatbufferOffset and FlatbufferSize locate the FlatTensor tables;
	// ExecuTorch loads bytes [0, FlatbufferOffset+FlatbufferSize) as the
	// flatbuffer.
	FlatbufferOffset, FlatbufferSize uint64
	// SegmentBaseOffset is where segment offsets count from;
	// SegmentDataSize is the size of the segment area.
	SegmentBaseOffset, SegmentDataSize uint64
}

// Segment is one FlatTensor.segments entry, as stored.
type Segment struct {
	// Offset is relative to Header.SegmentBaseOffset.
	Offset uint64
	// Size is the number of valid bytes.
	Size uint64
}

// TensorLayout is the element type, shape and dim order of named data that
// is a tensor.
type TensorLayout struct {
	ScalarType pte.ScalarType
	Sizes      []int32
	DimOrder   []uint8
}

// NamedData is one FlatTensor.named_data entry.
type NamedData struct {
	// Key is the name programs look the data up by.
	Key string
	// SegmentIndex indexes File.Segments.
	SegmentIndex uint32
	// Layout is nil when the entry has none (upstream's loader then
	// dereferences null if a program asks for it).
	Layout *TensorLayout
	// KeyAbsent is set when the key string itself is absent (it reads as "").
	KeyAbsent bool
}

// File is an open .ptd file. Only the prefix, the header and the flatbuffer
// region are read when it is opened; payloads are read on demand.
//
// A File is safe for concurrent use as long as nobody modifies its fields;
// the reader is used through ReadAt only.
type File struct {
	// Size is the file size in bytes.
	Size int64
	// RootOffset is the u32 at byte 0: the offset of the root table.
	RootOffset uint32
	// Identifier is the file identifier at bytes 4..8 ("FT01").
	Identifier string
	// Header is the "FH01" header.
	Header Header
	// Version is FlatTensor.version (0 in every known file).
	Version uint32
	// Segments is FlatTensor.segments.
	Segments []Segment
	// NamedData is FlatTensor.named_data, in file order (lookups find the
	// first entry with a key). Nil for an older-layout file.
	NamedData []NamedData
	// Legacy is set when the file is written in the FlatTensor layout used
	// before 2025-06 (same identifier and version, different root table).
	// Today's ExecuTorch misreads such a file; see LegacyLayout.
	Legacy *LegacyLayout
	// Findings lists warnings about the file (and the older-layout notice).
	Findings []Finding

	r      io.ReaderAt
	closer io.Closer
	region []byte  // bytes [0, FlatbufferOffset+FlatbufferSize)
	ndPos  []int64 // file offset of each NamedData table
	segPos []int64 // file offset of each DataSegment table
}

// Open opens the named file and reads it; see NewFile. The caller must
// Close the File.
func Open(name string) (*File, error) {
	osf, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := osf.Stat()
	if err != nil {
		osf.Close()
		return nil, err
	}
	f, err := NewFile(osf, fi.Size())
	if err != nil {
		osf.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f.closer = osf
	return f, nil
}

// Close closes the file opened by Open; for NewFile it does nothing.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	err := f.closer.Close()
	f.closer = nil
	return err
}

// ReaderAt returns the reader the File reads from.
func (f *File) ReaderAt() io.ReaderAt { return f.r }

// NewFile reads a .ptd file from r, which holds size bytes. It applies the
// checks of ExecuTorch's FlatTensorDataMap::load in its order, then verifies
// every byte of the flatbuffer region with ptekit's verifier (upstream runs
// none) before decoding it. The error wraps a *FormatError whose Code is
// what FlatTensorDataMap::load returns; when upstream has no check for the
// problem (it would read out of bounds), FormatError.Undefined is set.
//
// A file in the pre-2025-06 layout opens, with File.Legacy set and a
// finding; its keys are those today's loader sees.
func NewFile(r io.ReaderAt, size int64) (*File, error) {
	if size < 0 {
		return nil, fmt.Errorf("ptd: negative file size %d", size)
	}
	if size < HeadBytes {
		return nil, &FormatError{Off: size, Code: pte.CodeInvalidArgument,
			Msg: fmt.Sprintf("file is %d bytes; ExecuTorch reads %d head bytes first", size, HeadBytes)}
	}
	head := make([]byte, HeadBytes)
	if err := readFullAt(r, head, 0); err != nil {
		return nil, fmt.Errorf("ptd: reading file head: %w", err)
	}
	f := &File{Size: size, r: r,
		RootOffset: binary.LittleEndian.Uint32(head),
		Identifier: string(head[4:8])}
	h, err := parseHeader(head)
	if err != nil {
		return nil, err
	}
	f.Header = h
	// Measured order: the segment area is checked before the flatbuffer
	// range (a file cut inside the flatbuffer gets InvalidExternalData).
	if segEnd := h.SegmentBaseOffset + h.SegmentDataSize; segEnd > uint64(size) {
		return nil, &FormatError{Off: HeaderOffset + 32, Path: "header.segment_data_size", Code: pte.CodeInvalidExternal,
			Msg: fmt.Sprintf("segment_base_offset %d + segment_data_size %d runs past the end of the %d-byte file", h.SegmentBaseOffset, h.SegmentDataSize, size)}
	}
	// ExecuTorch loads [0, flatbuffer_offset + flatbuffer_size) with u64
	// arithmetic; a sum that wraps below the file size passes its check.
	end := h.FlatbufferOffset + h.FlatbufferSize
	if end > uint64(size) {
		return nil, &FormatError{Off: HeaderOffset + 16, Path: "header.flatbuffer_size", Code: pte.CodeInvalidArgument,
			Msg: fmt.Sprintf("flatbuffer_offset %d + flatbuffer_size %d runs past the end of the %d-byte file", h.FlatbufferOffset, h.FlatbufferSize, size)}
	}
	if f.Identifier != Identifier {
		return nil, &FormatError{Off: 4, Path: "file_identifier", Code: pte.CodeInvalidExternal,
			Msg: fmt.Sprintf("file identifier %q, want %q", f.Identifier, Identifier)}
	}
	if end > fbverify.MaxBufferSize {
		return nil, &FormatError{Off: HeaderOffset + 16, Path: "header.flatbuffer_size", Code: pte.CodeInvalidExternal, Undefined: true,
			Msg: fmt.Sprintf("flatbuffer region of %d bytes exceeds the FlatBuffers limit of %d", end, fbverify.MaxBufferSize)}
	}
	f.region = make([]byte, end)
	if err := readFullAt(r, f.region, 0); err != nil {
		return nil, fmt.Errorf("ptd: reading %d-byte flatbuffer region: %w", end, err)
	}
	if err := f.decode(); err != nil {
		return nil, err
	}
	return f, nil
}

// parseHeader checks the header the way FlatTensorHeader::Parse and
// FlatTensorDataMap::load do.
func parseHeader(head []byte) (Header, error) {
	if string(head[HeaderOffset:HeaderOffset+4]) != HeaderMagic {
		// Parse says NotFound; the load reports the file as not external
		// data (measured: InvalidExternalData).
		return Header{}, &FormatError{Off: HeaderOffset, Path: "header.magic", Code: pte.CodeInvalidExternal,
			Msg: fmt.Sprintf("header magic %q, want %q", head[HeaderOffset:HeaderOffset+4], HeaderMagic)}
	}
	le := binary.LittleEndian
	h := Header{
		Length:            le.Uint32(head[HeaderOffset+4:]),
		FlatbufferOffset:  le.Uint64(head[HeaderOffset+8:]),
		FlatbufferSize:    le.Uint64(head[HeaderOffset+16:]),
		SegmentBaseOffset: le.Uint64(head[HeaderOffset+24:]),
		SegmentDataSize:   le.Uint64(head[HeaderOffset+32:]),
	}
	if h.Length < MinHeaderLength {
		return Header{}, &FormatError{Off: HeaderOffset + 4, Path: "header.length", Code: pte.CodeInvalidExternal,
			Msg: fmt.Sprintf("header length %d is shorter than %d", h.Length, MinHeaderLength)}
	}
	return h, nil
}

// readFullAt fills buf from r at off.
func readFullAt(r io.ReaderAt, buf []byte, off int64) error {
	_, err := io.ReadFull(io.NewSectionReader(r, off, int64(len(buf))), buf)
	return err
}

// The FlatTensor schema, slot by slot, for the verifier.
var (
	fbTensorLayout = &fbverify.Table{Name: "TensorLayout", Fields: []fbverify.Field{
		fbverify.Scalar("scalar_type", 1), fbverify.Vector("sizes", 4), fbverify.Vector("dim_order", 1)}}
	fbDataSegment = &fbverify.Table{Name: "DataSegment", Fields: []fbverify.Field{
		fbverify.Scalar("offset", 8), fbverify.Scalar("size", 8)}}
	fbNamedData = &fbverify.Table{Name: "NamedData", Fields: []fbverify.Field{
		fbverify.String("key"), fbverify.Scalar("segment_index", 4), fbverify.Sub("tensor_layout", fbTensorLayout)}}
	fbFlatTensor = &fbverify.Table{Name: "FlatTensor", Fields: []fbverify.Field{
		fbverify.Scalar("version", 4), fbverify.TableVector("segments", fbDataSegment),
		fbverify.TableVector("named_data", fbNamedData)}}
)

// decode verifies the region and fills the model.
func (f *File) decode() error {
	v, err := fbverify.Verify(f.region, fbFlatTensor)
	legacy := false
	if err != nil || rootHasSlot(f.region, 3) {
		// The current root table has three slots; the older layout's root
		// always has four (segments is slot 3).
		if lv, lerr := fbverify.Verify(f.region, fbLegacyFlatTensor); lerr == nil && rootHasSlot(f.region, 3) {
			v, legacy = lv, true
		} else if e, ok := errors.AsType[*fbverify.Error](err); ok {
			// ExecuTorch does not verify .ptd flatbuffers, so its
			// behaviour on such bytes is undefined.
			return &FormatError{Off: e.Off, Path: e.Path, Code: pte.CodeInvalidExternal, Undefined: true,
				Msg: e.Msg + " (FlatTensor; ExecuTorch does not verify .ptd flatbuffers and would read out of bounds)"}
		} else if err != nil {
			return err
		}
	}
	for _, w := range v.Warnings { // what the verifier accepted but flagged
		f.Findings = append(f.Findings, Finding{Severity: pte.SeverityWarning,
			Err: &FormatError{Off: w.Off, Path: w.Path, Msg: w.Msg, Code: pte.CodeOk}})
	}
	root := flatbuffers.Table{Bytes: f.region, Pos: flatbuffers.GetUOffsetT(f.region)}
	f.Version = root.GetUint32Slot(vo(0), 0)
	if legacy {
		return f.decodeLegacy(root)
	}
	if segs, ok := tables(root, 1); ok {
		f.decodeSegments(segs)
	}
	if nds, ok := tables(root, 2); ok {
		f.decodeNamedData(nds)
	}
	// FlatTensorDataMap::load refuses a root without these vectors.
	if f.NamedData == nil {
		return &FormatError{Off: int64(f.RootOffset), Path: "named_data", Code: pte.CodeInvalidExternal, Msg: "FlatTensor has no named_data"}
	}
	if f.Segments == nil {
		return &FormatError{Off: int64(f.RootOffset), Path: "segments", Code: pte.CodeInvalidExternal, Msg: "FlatTensor has no segments"}
	}
	f.checkNamedData()
	for i := range f.Segments { // each segment that lies outside the file
		if _, _, err := f.segmentRange(i, ""); err != nil {
			f.Findings = append(f.Findings, Finding{Severity: pte.SeverityError, Err: err})
		}
	}
	return nil
}

// decodeSegments reads the segment tables (DataSegment, the same in both
// layouts).
func (f *File) decodeSegments(segs []flatbuffers.Table) {
	f.Segments = make([]Segment, len(segs))
	f.segPos = make([]int64, len(segs))
	for i, s := range segs {
		f.Segments[i] = Segment{Offset: s.GetUint64Slot(vo(0), 0), Size: s.GetUint64Slot(vo(1), 0)}
		f.segPos[i] = int64(s.Pos)
	}
}

// decodeNamedData reads the named data tables and their tensor layouts.
func (f *File) decodeNamedData(nds []flatbuffers.Table) {
	f.NamedData = make([]NamedData, len(nds))
	f.ndPos = make([]int64, len(nds))
	for i, nd := range nds {
		key, absent := stringAt(nd, 0)
		e := NamedData{Key: key, SegmentIndex: nd.GetUint32Slot(vo(1), 0), KeyAbsent: absent}
		if o := flatbuffers.UOffsetT(nd.Offset(vo(2))); o != 0 {
			l := layoutAt(flatbuffers.Table{Bytes: nd.Bytes, Pos: nd.Indirect(o + nd.Pos)}, 0)
			e.Layout = &l
		}
		f.NamedData[i] = e
		f.ndPos[i] = int64(nd.Pos)
	}
}

// checkNamedData reports what ExecuTorch would trip on in each named data
// entry: an absent key or layout, mismatched dim_order, a bad segment index.
func (f *File) checkNamedData() {
	for i, nd := range f.NamedData {
		add := func(sev pte.Severity, field string, code pte.Code, undefined bool, msg string) {
			f.Findings = append(f.Findings, Finding{Severity: sev, Err: &FormatError{Off: f.ndPos[i],
				Path: fmt.Sprintf("named_data[%d].%s", i, field), Code: code, Undefined: undefined, Msg: msg}})
		}
		if nd.KeyAbsent {
			add(pte.SeverityError, "key", pte.CodeInvalidExternal, true, "key is absent: ExecuTorch dereferences null when it lists or looks up keys")
		}
		if nd.Layout == nil {
			add(pte.SeverityWarning, "tensor_layout", pte.CodeOk, false,
				fmt.Sprintf("key %q has no tensor_layout: ExecuTorch crashes if a program asks for its layout", nd.Key))
		} else if len(nd.Layout.DimOrder) != len(nd.Layout.Sizes) {
			add(pte.SeverityWarning, "tensor_layout.dim_order", pte.CodeOk, false,
				fmt.Sprintf("%d dim_order entries for %d sizes", len(nd.Layout.DimOrder), len(nd.Layout.Sizes)))
		}
		if nd.SegmentIndex >= uint32(len(f.Segments)) {
			add(pte.SeverityError, "segment_index", pte.CodeInvalidExternal, false,
				fmt.Sprintf("segment index %d out of range (%d segments)", nd.SegmentIndex, len(f.Segments)))
		}
	}
}

// rootHasSlot reports whether the root table of a verified-or-not region
// has a non-zero vtable entry for slot; false when anything is out of range.
func rootHasSlot(b []byte, slot int) bool {
	le := binary.LittleEndian
	if len(b) < 8 {
		return false
	}
	root := uint64(le.Uint32(b))
	if root+4 > uint64(len(b)) {
		return false
	}
	vt := int64(root) - int64(int32(le.Uint32(b[root:])))
	if vt < 0 || vt+4 > int64(len(b)) {
		return false
	}
	vo := int64(4 + 2*slot)
	if vo+2 > int64(le.Uint16(b[vt:])) || vt+vo+2 > int64(len(b)) {
		return false
	}
	return le.Uint16(b[vt+vo:]) != 0
}

// Keys returns the keys as ExecuTorch lists them (get_key), in file order.
func (f *File) Keys() []string {
	if f.Legacy != nil {
		keys := make([]string, len(f.Legacy.Tensors))
		for i, t := range f.Legacy.Tensors {
			keys[i] = cString(t.FullyQualifiedName)
		}
		return keys
	}
	keys := make([]string, len(f.NamedData))
	for i, nd := range f.NamedData {
		keys[i] = cString(nd.Key)
	}
	return keys
}

// cString is s as C code sees it: up to the first NUL.
func cString(s string) string {
	s, _, _ = strings.Cut(s, "\x00")
	return s
}
