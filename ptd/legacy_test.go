package ptd_test

import (
	"encoding/binary"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"
)

// buildLegacy writes a one-tensor file in the FlatTensor layout used before
// 2025-06: root {version, tensor_alignment, tensors, segments}, tensors
// {fully_qualified_name, scalar_type, sizes, dim_order, segment_index,
// offset}.
func buildLegacy(t testing.TB) []byte {
	t.Helper()
	b := flatbuffers.NewBuilder(256)
	name := b.CreateString("w")
	b.StartVector(4, 2, 4)
	b.PrependInt32(2)
	b.PrependInt32(2)
	sizes := b.EndVector(2)
	dims := b.CreateByteVector([]byte{0, 1})
	b.StartObject(6)
	b.PrependUOffsetTSlot(0, name, 0)
	b.PrependInt8Slot(1, 6, 0)
	b.PrependUOffsetTSlot(2, sizes, 0)
	b.PrependUOffsetTSlot(3, dims, 0)
	b.PrependUint32Slot(4, 0, 0)
	b.PrependUint64Slot(5, 0, 0)
	tensor := b.EndObject()
	b.StartObject(2)
	b.PrependUint64Slot(0, 0, 0)
	b.PrependUint64Slot(1, 16, 0)
	seg := b.EndObject()
	b.StartVector(4, 1, 4)
	b.PrependUOffsetT(tensor)
	tensors := b.EndVector(1)
	b.StartVector(4, 1, 4)
	b.PrependUOffsetT(seg)
	segs := b.EndVector(1)
	b.StartObject(4)
	b.PrependUint32Slot(0, 0, 0)
	b.PrependUint32Slot(1, 16, 0)
	b.PrependUOffsetTSlot(2, tensors, 0)
	b.PrependUOffsetTSlot(3, segs, 0)
	b.FinishWithFileIdentifier(b.EndObject(), []byte("FT01"))
	fb := b.FinishedBytes()
	out := append(append(append([]byte{}, fb[:8]...), make([]byte, 40)...), fb[8:]...)
	le := binary.LittleEndian
	le.PutUint32(out, le.Uint32(fb)+40)
	base := (len(out) + 15) / 16 * 16
	copy(out[8:], "FH01")
	le.PutUint32(out[12:], 40)
	le.PutUint64(out[16:], 48)
	le.PutUint64(out[24:], uint64(len(fb)-8))
	le.PutUint64(out[32:], uint64(base))
	le.PutUint64(out[40:], 16)
	out = append(out, make([]byte, base-len(out)+16)...)
	return out
}
