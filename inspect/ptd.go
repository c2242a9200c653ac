package inspect

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// PTDDocument is the JSON form of a .ptd file: what `pteinspect
// --json FILE.ptd` prints (docs/json.md). Its member names and values are
// those of the upstream Python view of a .ptd wherever the two describe
// the same thing.
type PTDDocument struct {
	File   File      `json:"file"`
	Header PTDHeader `json:"header"`
	// FlatTensor is null when the flatbuffer is in the pre-2025-06 layout,
	// which upstream's tooling cannot decode; FlatTensorError then says so
	// and Legacy holds what ptekit reads from it.
	FlatTensor      *PTDFlatTensor `json:"flat_tensor"`
	FlatTensorError *string        `json:"flat_tensor_error"`
	Legacy          *PTDLegacy     `json:"legacy"`
	Segments        []*PTDSegment  `json:"segments"`
	NamedData       []*PTDKey      `json:"named_data"`
	// Findings are what the reader accepted but reports (ptd.File.Findings).
	Findings []Problem `json:"findings"`
}

// PTDHeader is the "FH01" header.
type PTDHeader struct {
	Magic             string `json:"magic"`
	Length            uint32 `json:"length"`
	FlatbufferOffset  uint64 `json:"flatbuffer_offset"`
	FlatbufferSize    uint64 `json:"flatbuffer_size"`
	SegmentBaseOffset uint64 `json:"segment_base_offset"`
	SegmentDataSize   uint64 `json:"segment_data_size"`
	// Valid is always true: a file whose header ExecuTorch refuses does
	// not open.
	Valid bool `json:"valid"`
}

// PTDFlatTensor is the FlatTensor root in brief.
type PTDFlatTensor struct {
	Version      uint32 `json:"version"`
	NumSegments  int    `json:"num_segments"`
	NumNamedData int    `json:"num_named_data"`
}

// PTDLegacy is a pre-2025-06 FlatTensor: tensors with their own metadata.
type PTDLegacy struct {
	TensorAlignment uint32             `json:"tensor_alignment"`
	Tensors         []*PTDLegacyTensor `json:"tensors"`
}

// PTDLegacyTensor is one tensor of the older layout.
type PTDLegacyTensor struct {
	FullyQualifiedName string     `json:"fully_qualified_name"`
	TensorLayout       *PTDLayout `json:"tensor_layout"`
	SegmentIndex       uint32     `json:"segment_index"`
	Offset             uint64     `json:"offset"`
}

// PTDSegment is one FlatTensor.segments entry and where its bytes are.
type PTDSegment struct {
	Index  int    `json:"index"`
	Offset uint64 `json:"offset"` // relative to segment_base_offset
	Size   uint64 `json:"size"`
	// FileOffset is segment_base_offset + offset (wrapping as u64).
	FileOffset uint64 `json:"file_offset"`
	// EndWithinSegmentData is offset + size <= segment_data_size.
	EndWithinSegmentData bool `json:"end_within_segment_data"`
	// Resolvable is true when the bytes lie inside the file.
	Resolvable bool `json:"resolvable"`
	// SHA256 is present with --hash; null when not resolvable.
	SHA256 Digest `json:"sha256,omitzero"`
	// UsedBy lists the keys stored in the segment.
	UsedBy []string `json:"used_by"`
}

// PTDLayout is a TensorLayout.
type PTDLayout struct {
	ScalarType      Enum    `json:"scalar_type"`
	ScalarTypeValue int     `json:"scalar_type_value"`
	Sizes           []int32 `json:"sizes"`
	// DimOrder is a list of numbers (not base64 as Go writes []uint8).
	DimOrder []int `json:"dim_order"`
}

// PTDKey is one named_data entry with its segment's place.
type PTDKey struct {
	Key          string     `json:"key"`
	SegmentIndex uint32     `json:"segment_index"`
	TensorLayout *PTDLayout `json:"tensor_layout"`
	// Offset, Size and FileOffset are those of the key's segment; null when
	// the segment index is out of range.
	Offset     *uint64 `json:"offset"`
	Size       *uint64 `json:"size"`
	FileOffset *uint64 `json:"file_offset"`
	// SHA256 is the segment's digest with --hash.
	SHA256 Digest `json:"sha256,omitzero"`
	// Bytes is the tensor size its layout implies (numel times the element
	// size), null without a layout or for an unknown type.
	Bytes *uint64 `json:"bytes"`
}

func newLayout(l *ptd.TensorLayout) *PTDLayout {
	if l == nil {
		return nil
	}
	out := &PTDLayout{ScalarType: enum(l.ScalarType, int64(l.ScalarType)), ScalarTypeValue: int(l.ScalarType),
		Sizes: nonNil(l.Sizes), DimOrder: make([]int, len(l.DimOrder))}
	for i, d := range l.DimOrder {
		out.DimOrder[i] = int(d)
	}
	return out
}

// BuildPTD returns the JSON form of an open .ptd file. With hash set it
// reads the whole file and every segment inside it to digest them.
func BuildPTD(f *ptd.File, hash bool) (*PTDDocument, error) {
	h := f.Header
	doc := &PTDDocument{
		File: File{Size: f.Size, RootOffset: f.RootOffset, FileIdentifier: f.Identifier},
		Header: PTDHeader{Magic: ptd.HeaderMagic, Length: h.Length, FlatbufferOffset: h.FlatbufferOffset,
			FlatbufferSize: h.FlatbufferSize, SegmentBaseOffset: h.SegmentBaseOffset, SegmentDataSize: h.SegmentDataSize, Valid: true},
		Segments: []*PTDSegment{}, NamedData: []*PTDKey{}, Findings: []Problem{},
	}
	if hash {
		d, err := digestOf(io.NewSectionReader(f.ReaderAt(), 0, f.Size))
		if err != nil {
			return nil, fmt.Errorf("inspect: hashing the file: %w", err)
		}
		doc.File.SHA256 = d
	}
	for _, fd := range f.Findings {
		doc.Findings = append(doc.Findings, dataProblem(fd.Severity, fd.Err))
	}
	if f.Legacy != nil {
		doc.FlatTensorError = new("the FlatTensor is in the layout used before 2025-06 (same identifier and version): today's ExecuTorch misreads it and upstream's tooling cannot decode it")
		lg := &PTDLegacy{TensorAlignment: f.Legacy.TensorAlignment, Tensors: []*PTDLegacyTensor{}}
		for _, t := range f.Legacy.Tensors {
			lg.Tensors = append(lg.Tensors, &PTDLegacyTensor{FullyQualifiedName: t.FullyQualifiedName,
				TensorLayout: newLayout(&t.Layout), SegmentIndex: t.SegmentIndex, Offset: t.Offset})
		}
		doc.Legacy = lg
		return doc, nil
	}
	doc.FlatTensor = &PTDFlatTensor{Version: f.Version, NumSegments: len(f.Segments), NumNamedData: len(f.NamedData)}
	for i, s := range f.Segments {
		ds := &PTDSegment{Index: i, Offset: s.Offset, Size: s.Size, FileOffset: h.SegmentBaseOffset + s.Offset,
			EndWithinSegmentData: s.Offset+s.Size >= s.Offset && s.Offset+s.Size <= h.SegmentDataSize, UsedBy: []string{}}
		p, err := f.Segment(i)
		ds.Resolvable = err == nil
		if hash {
			if err != nil {
				ds.SHA256 = Digest{Unavailable: true}
			} else if ds.SHA256, err = digestOf(p); err != nil {
				return nil, fmt.Errorf("inspect: hashing segment %d: %w", i, err)
			}
		}
		for _, nd := range f.NamedData {
			if int(nd.SegmentIndex) == i {
				ds.UsedBy = append(ds.UsedBy, nd.Key)
			}
		}
		doc.Segments = append(doc.Segments, ds)
	}
	for _, nd := range f.NamedData {
		k := &PTDKey{Key: nd.Key, SegmentIndex: nd.SegmentIndex, TensorLayout: newLayout(nd.Layout)}
		if nd.Layout != nil {
			if n, ok := nd.Layout.Bytes(); ok {
				k.Bytes = new(n)
			}
		}
		if int(nd.SegmentIndex) < len(doc.Segments) {
			s := doc.Segments[nd.SegmentIndex]
			k.Offset, k.Size, k.FileOffset = &s.Offset, &s.Size, &s.FileOffset
			k.SHA256 = s.SHA256
		} else if hash {
			k.SHA256 = Digest{Unavailable: true}
		}
		doc.NamedData = append(doc.NamedData, k)
	}
	return doc, nil
}

// digestOf returns the SHA-256 of what r reads.
func digestOf(r io.Reader) (Digest, error) {
	sum := sha256.New()
	if _, err := io.Copy(sum, r); err != nil {
		return Digest{}, err
	}
	return Digest{Hex: hex.EncodeToString(sum.Sum(nil))}, nil
}

// dataProblem makes a Problem of a .ptd format error or finding.
func dataProblem(sev pte.Severity, fe *ptd.FormatError) Problem {
	p := Problem{Severity: sev.String(), Path: fe.Path, Code: fe.Code.String(), Message: fe.Msg}
	if fe.Code == pte.CodeOk {
		p.Code = ""
	}
	if fe.Undefined {
		p.Message += " (ExecuTorch has no check for this: its behaviour is undefined)"
	}
	if fe.Off >= 0 {
		p.Offset = new(fe.Off)
	}
	return p
}

// PTDFormatProblem returns the Problem for the error opening a .ptd file.
func PTDFormatProblem(fe *ptd.FormatError) Problem { return dataProblem(pte.SeverityError, fe) }

// DiffPTD compares two .ptd documents (built with hashing, so that payloads
// compare by content): the FlatTensor version and layout kind, and each key
// matched by name with its tensor layout, size and SHA-256. A key stored
// twice is compared as KEY, KEY#2, ... With opts.Layout it also compares
// where things are: the file size, the header, each key's segment index and
// file offset, and the segment table.
func DiffPTD(a, b *PTDDocument, opts *DiffOptions) ([]Difference, error) {
	if a == nil || b == nil {
		return nil, fmt.Errorf("inspect: diff: both .ptd documents are needed")
	}
	if opts == nil {
		opts = &DiffOptions{}
	}
	var rs [2]*node
	for i, doc := range []*PTDDocument{a, b} {
		var err error
		if rs[i], err = ptdView(doc, opts.Layout); err != nil {
			return nil, err
		}
	}
	d := differ{compact: true}
	d.walk("", rs[0], rs[1])
	return d.out, nil
}

// ptdView is the structural view of a .ptd document for DiffPTD.
func ptdView(d *PTDDocument, layout bool) (*node, error) {
	root := newObject()
	format := "current"
	if d.Legacy != nil {
		format = "legacy (pre-2025-06)"
	}
	root.set("format", newString(format))
	if d.FlatTensor != nil {
		root.set("version", newNumber(uint64(d.FlatTensor.Version)))
	}
	keys := newKeyed()
	for _, k := range d.NamedData {
		n := newObject()
		l, err := jsonNode(k.TensorLayout)
		if err != nil {
			return nil, err
		}
		n.set("tensor_layout", l)
		n.set("size", optNumber(k.Size))
		n.set("sha256", digestNode(k.SHA256))
		if layout {
			n.set("segment_index", newNumber(uint64(k.SegmentIndex)))
			n.set("file_offset", optNumber(k.FileOffset))
		}
		keys.setUnique(k.Key, n)
	}
	if d.Legacy != nil {
		for _, t := range d.Legacy.Tensors {
			n, err := jsonNode(t)
			if err != nil {
				return nil, err
			}
			keys.setUnique(t.FullyQualifiedName, n)
		}
	}
	root.set("named_data", keys)
	if layout {
		root.set("file_size", newNumber(d.File.Size))
		for _, m := range []struct {
			k string
			v any
		}{{"header", d.Header}, {"segments", d.Segments}} {
			n, err := jsonNode(m.v)
			if err != nil {
				return nil, err
			}
			root.set(m.k, n)
		}
	}
	return root, nil
}
