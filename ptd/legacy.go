package ptd

import (
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/ptekit/ptekit/internal/fbverify"
	"github.com/ptekit/ptekit/pte"
)

// LegacyLayout is the content of a .ptd file written in the FlatTensor
// layout used before 2025-06 (upstream commit 8d7ab65e). That layout has the
// same identifier ("FT01"), header and version (0) as today's, but its root
// table is {version, tensor_alignment, tensors, segments} with per-tensor
// metadata instead of named_data. Today's ExecuTorch reads tensor_alignment
// as the segments vector and tensors as named_data: it lists the tensor
// names as keys but every lookup reads garbage (recorded: a segment index
// out of range, InvalidExternalData). The Python tooling cannot decode such
// files at all.
type LegacyLayout struct {
	// TensorAlignment is FlatTensor.tensor_alignment.
	TensorAlignment uint32
	// Tensors is FlatTensor.tensors.
	Tensors []LegacyTensor
}

// LegacyTensor is one TensorMetadata entry of the older layout.
type LegacyTensor struct {
	FullyQualifiedName string
	Layout             TensorLayout
	// SegmentIndex indexes File.Segments; Offset is relative to that
	// segment's start.
	SegmentIndex uint32
	Offset       uint64
}

// The older schema, slot by slot.
var (
	fbLegacyTensor = &fbverify.Table{Name: "TensorMetadata", Fields: []fbverify.Field{
		fbverify.String("fully_qualified_name"), fbverify.Scalar("scalar_type", 1), fbverify.Vector("sizes", 4),
		fbverify.Vector("dim_order", 1), fbverify.Scalar("segment_index", 4), fbverify.Scalar("offset", 8)}}
	fbLegacyFlatTensor = &fbverify.Table{Name: "FlatTensor", Fields: []fbverify.Field{
		fbverify.Scalar("version", 4), fbverify.Scalar("tensor_alignment", 4),
		fbverify.TableVector("tensors", fbLegacyTensor), fbverify.TableVector("segments", fbDataSegment)}}
)

// vo is the vtable offset of slot.
func vo(slot int) flatbuffers.VOffsetT { return flatbuffers.VOffsetT(4 + 2*slot) }

// tables returns the tables of the vector in slot of t, ok=false when absent.
func tables(t flatbuffers.Table, slot int) ([]flatbuffers.Table, bool) {
	o := flatbuffers.UOffsetT(t.Offset(vo(slot)))
	if o == 0 {
		return nil, false
	}
	start := t.Vector(o)
	out := make([]flatbuffers.Table, t.VectorLen(o))
	for i := range out {
		out[i] = flatbuffers.Table{Bytes: t.Bytes, Pos: t.Indirect(start + flatbuffers.UOffsetT(4*i))}
	}
	return out, true
}

// stringAt is the string in slot of t, and whether it is absent ("").
func stringAt(t flatbuffers.Table, slot int) (s string, absent bool) {
	o := flatbuffers.UOffsetT(t.Offset(vo(slot)))
	if o == 0 {
		return "", true
	}
	return t.String(o + t.Pos), false
}

// layoutAt is the tensor layout whose scalar type, sizes and dim order are
// slots first, first+1 and first+2 of t: a TensorLayout's from slot 0, an
// older-layout TensorMetadata's from slot 1. Absent vectors are empty.
func layoutAt(t flatbuffers.Table, first int) TensorLayout {
	l := TensorLayout{ScalarType: pte.ScalarType(t.GetInt8Slot(vo(first), 0)), Sizes: []int32{}, DimOrder: []uint8{}}
	if o := flatbuffers.UOffsetT(t.Offset(vo(first + 1))); o != 0 {
		start := t.Vector(o)
		l.Sizes = make([]int32, t.VectorLen(o))
		for j := range l.Sizes {
			l.Sizes[j] = t.GetInt32(start + flatbuffers.UOffsetT(4*j))
		}
	}
	if o := flatbuffers.UOffsetT(t.Offset(vo(first + 2))); o != 0 {
		l.DimOrder = append(l.DimOrder, t.ByteVector(o+t.Pos)...)
	}
	return l
}

// decodeLegacy fills f from the root of a verified older-layout region.
func (f *File) decodeLegacy(root flatbuffers.Table) error {
	l := &LegacyLayout{TensorAlignment: root.GetUint32Slot(vo(1), 0)}
	segs, _ := tables(root, 3)
	f.decodeSegments(segs)
	ts, hasTensors := tables(root, 2)
	for _, t := range ts {
		name, _ := stringAt(t, 0)
		l.Tensors = append(l.Tensors, LegacyTensor{FullyQualifiedName: name, Layout: layoutAt(t, 1),
			SegmentIndex: t.GetUint32Slot(vo(4), 0), Offset: t.GetUint64Slot(vo(5), 0)})
	}
	f.Legacy = l
	// Today's loader takes slot 2 (tensors) as named_data and slot 1
	// (tensor_alignment, a scalar) as the segments vector: it refuses the
	// file only when those slots are absent.
	if !hasTensors {
		return &FormatError{Off: int64(f.RootOffset), Path: "tensors", Code: pte.CodeInvalidExternal,
			Msg: "older-layout FlatTensor (before 2025-06) without tensors: ExecuTorch finds no named_data"}
	}
	if root.Offset(vo(1)) == 0 {
		return &FormatError{Off: int64(f.RootOffset), Path: "tensor_alignment", Code: pte.CodeInvalidExternal,
			Msg: "older-layout FlatTensor (before 2025-06) without tensor_alignment: ExecuTorch finds no segments"}
	}
	f.Findings = append(f.Findings, Finding{Severity: pte.SeverityError, Err: legacyErr(f, "")})
	return nil
}

// legacyErr is the error every lookup in an older-layout file gets.
func legacyErr(f *File, key string) *FormatError {
	msg := "file uses the FlatTensor layout from before 2025-06 (same FT01 identifier and version): today's ExecuTorch lists its tensor names as keys but reads every lookup from the wrong fields"
	if key != "" {
		msg = fmt.Sprintf("key %q: %s", key, msg)
	}
	return &FormatError{Off: int64(f.RootOffset), Path: "", Code: pte.CodeInvalidExternal, Msg: msg}
}
