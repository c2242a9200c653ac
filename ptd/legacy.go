package ptd

import (
	"encoding/binary"
	"fmt"

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

// tab reads fields of a table in a region the verifier has passed.
type tab struct {
	b   []byte
	pos uint32
	vt  uint32
}

func tabAt(b []byte, pos uint32) tab {
	return tab{b: b, pos: pos, vt: uint32(int64(pos) - int64(int32(binary.LittleEndian.Uint32(b[pos:]))))}
}

// field returns the absolute position of slot, or 0 when absent.
func (t tab) field(slot int) uint32 {
	vo := uint32(4 + 2*slot)
	if vo+2 > uint32(binary.LittleEndian.Uint16(t.b[t.vt:])) {
		return 0
	}
	fo := uint32(binary.LittleEndian.Uint16(t.b[t.vt+vo:]))
	if fo == 0 {
		return 0
	}
	return t.pos + fo
}

func (t tab) u8(slot int) uint8 {
	if p := t.field(slot); p != 0 {
		return t.b[p]
	}
	return 0
}

func (t tab) u32(slot int) uint32 {
	if p := t.field(slot); p != 0 {
		return binary.LittleEndian.Uint32(t.b[p:])
	}
	return 0
}

func (t tab) u64(slot int) uint64 {
	if p := t.field(slot); p != 0 {
		return binary.LittleEndian.Uint64(t.b[p:])
	}
	return 0
}

// vec returns the start of the elements and the count of the vector in slot.
func (t tab) vec(slot int) (start, n uint32, ok bool) {
	p := t.field(slot)
	if p == 0 {
		return 0, 0, false
	}
	at := p + binary.LittleEndian.Uint32(t.b[p:])
	return at + 4, binary.LittleEndian.Uint32(t.b[at:]), true
}

func (t tab) str(slot int) string {
	start, n, ok := t.vec(slot)
	if !ok {
		return ""
	}
	return string(t.b[start : start+n])
}

func (t tab) tables(slot int) ([]tab, bool) {
	start, n, ok := t.vec(slot)
	if !ok {
		return nil, false
	}
	out := make([]tab, n)
	for i := range out {
		p := start + 4*uint32(i)
		out[i] = tabAt(t.b, p+binary.LittleEndian.Uint32(t.b[p:]))
	}
	return out, true
}

// decodeLegacy fills f from an older-layout region v has verified.
func (f *File) decodeLegacy(v *fbverify.Verifier) error {
	_ = v
	root := tabAt(f.region, binary.LittleEndian.Uint32(f.region))
	f.Version = root.u32(0)
	l := &LegacyLayout{TensorAlignment: root.u32(1)}
	segs, _ := root.tables(3)
	f.Segments = make([]Segment, len(segs))
	f.segPos = make([]int64, len(segs))
	for i, s := range segs {
		f.Segments[i] = Segment{Offset: s.u64(0), Size: s.u64(1)}
		f.segPos[i] = int64(s.pos)
	}
	ts, hasTensors := root.tables(2)
	for _, t := range ts {
		lt := LegacyTensor{FullyQualifiedName: t.str(0), SegmentIndex: t.u32(4), Offset: t.u64(5)}
		lt.Layout.ScalarType = pte.ScalarType(t.u8(1))
		if start, n, ok := t.vec(2); ok {
			lt.Layout.Sizes = make([]int32, n)
			for j := range lt.Layout.Sizes {
				lt.Layout.Sizes[j] = int32(binary.LittleEndian.Uint32(f.region[start+4*uint32(j):]))
			}
		}
		if start, n, ok := t.vec(3); ok {
			lt.Layout.DimOrder = append([]uint8{}, f.region[start:start+n]...)
		}
		l.Tensors = append(l.Tensors, lt)
	}
	f.Legacy = l
	// Today's loader takes slot 2 (tensors) as named_data and slot 1
	// (tensor_alignment, a scalar) as the segments vector: it refuses the
	// file only when those slots are absent.
	if !hasTensors {
		return &FormatError{Off: int64(f.RootOffset), Path: "tensors", Code: pte.CodeInvalidExternal,
			Msg: "older-layout FlatTensor (before 2025-06) without tensors: ExecuTorch finds no named_data"}
	}
	if root.field(1) == 0 {
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
