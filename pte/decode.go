package pte

import (
	"encoding/binary"
	"iter"
	"math"
	"sync"
)

// This file decodes a flatbuffer region that verifyProgramBuffer accepted
// into the Program model. It relies on the verifier for every bounds check:
// never call it on unverified bytes.
//
// Byte vectors (Buffer.Storage, BackendDelegateInlineData.Data,
// CompileSpec.Value) alias the region buffer read by NewFile; their capacity
// is clipped to their length so that appending copies. Treat them as
// read-only.

// fbTab is a verified table: its position and its vtable.
type fbTab struct {
	b      []byte
	pos    uint32
	vt     uint32
	vtSize uint32
}

func fbTabAt(b []byte, pos uint32) fbTab {
	vt := uint32(int64(pos) - int64(int32(binary.LittleEndian.Uint32(b[pos:]))))
	return fbTab{b: b, pos: pos, vt: vt, vtSize: uint32(binary.LittleEndian.Uint16(b[vt:]))}
}

// field returns the absolute position of the field in slot, 0 when absent.
func (t fbTab) field(slot int) uint32 {
	vo := uint32(4 + 2*slot)
	if vo+2 > t.vtSize {
		return 0
	}
	fo := uint32(binary.LittleEndian.Uint16(t.b[t.vt+vo:]))
	if fo == 0 {
		return 0
	}
	return t.pos + fo
}

func (t fbTab) u8(slot int) uint8 {
	if o := t.field(slot); o != 0 {
		return t.b[o]
	}
	return 0
}

func (t fbTab) u32(slot int) uint32 {
	if o := t.field(slot); o != 0 {
		return binary.LittleEndian.Uint32(t.b[o:])
	}
	return 0
}

func (t fbTab) u64(slot int) uint64 {
	if o := t.field(slot); o != 0 {
		return binary.LittleEndian.Uint64(t.b[o:])
	}
	return 0
}

func (t fbTab) i32(slot int) int32 { return int32(t.u32(slot)) }

// ref follows the offset field in slot.
func (t fbTab) ref(slot int) (uint32, bool) {
	o := t.field(slot)
	if o == 0 {
		return 0, false
	}
	return o + binary.LittleEndian.Uint32(t.b[o:]), true
}

func (t fbTab) sub(slot int) (fbTab, bool) {
	p, ok := t.ref(slot)
	if !ok {
		return fbTab{}, false
	}
	return fbTabAt(t.b, p), true
}

// vec returns the position of the first element and the element count.
func (t fbTab) vec(slot int) (start, n uint32, ok bool) {
	p, ok := t.ref(slot)
	if !ok {
		return 0, 0, false
	}
	return p + 4, binary.LittleEndian.Uint32(t.b[p:]), true
}

// tableAt returns table i of the vector of tables in slot, without
// reading the others; false when the vector is absent or i is out of range.
func (t fbTab) tableAt(slot, i int) (fbTab, bool) {
	ts, ok := t.tables(slot)
	if !ok || i < 0 || i >= ts.n {
		return fbTab{}, false
	}
	return ts.at(i), true
}

// tables returns the vector of tables in slot; false when absent. It
// reads the elements as they are asked for: a slice of them was a tenth
// of what decoding a plan allocated.
func (t fbTab) tables(slot int) (fbTabs, bool) {
	start, n, ok := t.vec(slot)
	if !ok {
		return fbTabs{}, false
	}
	return fbTabs{b: t.b, start: start, n: int(n)}, true
}

// fbTabs is a vector of tables: n of them, their offsets from start on.
type fbTabs struct {
	b     []byte
	start uint32
	n     int
}

// at returns table i, which must be in range.
func (v fbTabs) at(i int) fbTab {
	e := v.start + 4*uint32(i)
	return fbTabAt(v.b, e+binary.LittleEndian.Uint32(v.b[e:]))
}

// all yields the vector's tables with their indices.
func (v fbTabs) all() iter.Seq2[int, fbTab] {
	return func(yield func(int, fbTab) bool) {
		for i := range v.n {
			if !yield(i, v.at(i)) {
				return
			}
		}
	}
}

func (t fbTab) bytes(slot int) []byte {
	start, n, ok := t.vec(slot)
	if !ok {
		return nil
	}
	return t.b[start : start+n : start+n]
}

func (t fbTab) i32s(slot int) []int32 {
	start, n, ok := t.vec(slot)
	if !ok {
		return nil
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(t.b[start+4*uint32(i):]))
	}
	return out
}

func (t fbTab) u64s(slot int) []uint64 {
	start, n, ok := t.vec(slot)
	if !ok {
		return nil
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(t.b[start+8*uint32(i):])
	}
	return out
}

func (t fbTab) i64s(slot int) []int64 {
	u := t.u64s(slot)
	if u == nil {
		return nil
	}
	out := make([]int64, len(u))
	for i, x := range u {
		out[i] = int64(x)
	}
	return out
}

// fbDecoder decodes a verified region and remembers where each decoded
// table (and each byte vector payload) starts, so that findings and payloads
// can name absolute file offsets.
type fbDecoder struct {
	pos    map[any]uint32 // table position by model pointer
	vec    map[any]uint32 // byte-vector element start by owning model pointer
	v      *fbVerifier    // the verifier that accepted the region
	shared *sharedStrings // decoded shared strings, for every decoder of the region
}

// posOf returns the file offset of the table x was decoded from, or -1
// when d did not decode it (or records no positions).
func (d *fbDecoder) posOf(x any) int64 {
	if d == nil || x == nil {
		return -1
	}
	if p, ok := d.pos[x]; ok {
		return int64(p)
	}
	return -1
}

func (d *fbDecoder) at(x any, t fbTab) {
	if d.pos != nil {
		d.pos[x] = t.pos
	}
}

// str returns the string in slot. When the field is absent it returns ""
// and appends the field's schema name to *absent. A string that several
// fields share is copied out of the region once (Go strings are immutable),
// which keeps decoding allocation proportional to the region size.
func (d *fbDecoder) str(t fbTab, slot int, name string, absent *[]string) string {
	p, ok := t.ref(slot)
	if !ok {
		*absent = append(*absent, name)
		return ""
	}
	n := binary.LittleEndian.Uint32(t.b[p:])
	if d.v == nil || !d.v.SharedString(p) {
		return string(t.b[p+4 : p+4+n])
	}
	return d.shared.get(p, t.b[p+4:p+4+n])
}

// sharedStrings holds the shared strings of a region decoded so far, by
// position. One File's decoders share it (the plans of a File opened with
// OpenOptions.LazyPlans are decoded on demand, maybe concurrently), so
// that a string many plans share is copied once for the File, not once per
// plan decoded.
type sharedStrings struct {
	mu sync.Mutex
	m  map[uint32]string
}

// get returns the string at position p, whose bytes are b, copying it the
// first time.
func (c *sharedStrings) get(p uint32, b []byte) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[p]
	if !ok {
		if c.m == nil {
			c.m = map[uint32]string{}
		}
		s = string(b)
		c.m[p] = s
	}
	return s
}

// decodeProgram decodes a region that v verified.
func decodeProgram(b []byte, v *fbVerifier) (*Program, *fbDecoder) {
	return decodeProgramWith(b, v, true, false)
}

// decodeProgramWith is decodeProgram; without positions, table positions
// are not recorded (File.posOf says -1), which spares a map entry per
// table when only a verdict is wanted (Write's read-back check). With
// lazyPlans the execution plans are left undecoded, for the File to
// decode one at a time (File.planAt).
func decodeProgramWith(b []byte, v *fbVerifier, positions, lazyPlans bool) (*Program, *fbDecoder) {
	d := newDecoder(v, nil, positions)
	d.vec = map[any]uint32{}
	root := rootTab(b)
	p := &Program{Version: root.u32(0)}
	d.at(p, root)
	if ts, ok := root.tables(1); ok && !lazyPlans {
		p.executionPlan = make([]*ExecutionPlan, ts.n)
		for i, t := range ts.all() {
			p.executionPlan[i] = d.plan(t)
		}
	}
	if ts, ok := root.tables(2); ok {
		p.ConstantBuffer = make([]*Buffer, ts.n)
		for i, t := range ts.all() {
			p.ConstantBuffer[i] = &Buffer{Storage: t.bytes(0)}
			d.at(p.ConstantBuffer[i], t)
			if start, _, ok := t.vec(0); ok {
				d.vec[p.ConstantBuffer[i]] = start
			}
		}
	}
	if ts, ok := root.tables(3); ok {
		p.BackendDelegateData = make([]*BackendDelegateInlineData, ts.n)
		for i, t := range ts.all() {
			p.BackendDelegateData[i] = &BackendDelegateInlineData{Data: t.bytes(0)}
			d.at(p.BackendDelegateData[i], t)
			if start, _, ok := t.vec(0); ok {
				d.vec[p.BackendDelegateData[i]] = start
			}
		}
	}
	if ts, ok := root.tables(4); ok {
		p.Segments = make([]*DataSegment, ts.n)
		for i, t := range ts.all() {
			// Not recorded in d.pos: File.segmentPos finds a segment's
			// table by its index, and a program may have one per engine.
			p.Segments[i] = &DataSegment{Offset: t.u64(0), Size: t.u64(1)}
		}
	}
	if t, ok := root.sub(5); ok {
		p.ConstantSegment = d.subsegment(t)
	}
	if ts, ok := root.tables(6); ok {
		p.MutableDataSegments = make([]*SubsegmentOffsets, ts.n)
		for i, t := range ts.all() {
			p.MutableDataSegments[i] = d.subsegment(t)
		}
	}
	if ts, ok := root.tables(7); ok {
		p.NamedData = make([]*NamedData, ts.n)
		for i, t := range ts.all() {
			nd := &NamedData{SegmentIndex: t.u32(1)}
			nd.Key = d.str(t, 0, "key", &nd.Absent)
			p.NamedData[i] = nd
			d.at(p.NamedData[i], t)
		}
	}
	return p, d
}

// newDecoder returns a decoder for a region v verified, recording table
// positions when asked; shared is the region's shared strings (nil: new).
func newDecoder(v *fbVerifier, shared *sharedStrings, positions bool) *fbDecoder {
	if shared == nil {
		shared = &sharedStrings{}
	}
	d := &fbDecoder{v: v, shared: shared}
	if positions {
		d.pos = map[any]uint32{}
	}
	return d
}

// rootTab returns the root Program table of a verified region.
func rootTab(b []byte) fbTab {
	return fbTabAt(b, binary.LittleEndian.Uint32(b))
}

func (d *fbDecoder) subsegment(t fbTab) *SubsegmentOffsets {
	s := &SubsegmentOffsets{SegmentIndex: t.u32(0), Offsets: t.u64s(1)}
	d.at(s, t)
	return s
}

func (d *fbDecoder) plan(t fbTab) *ExecutionPlan {
	ep := &ExecutionPlan{
		Inputs:              t.i32s(3),
		Outputs:             t.i32s(4),
		NonConstBufferSizes: t.i64s(8),
	}
	ep.Name = d.str(t, 0, "name", &ep.Absent)
	d.at(ep, t)
	if c, ok := t.sub(1); ok {
		m := &ContainerMetadata{}
		m.EncodedInpStr = d.str(c, 0, "encoded_inp_str", &m.Absent)
		m.EncodedOutStr = d.str(c, 1, "encoded_out_str", &m.Absent)
		ep.ContainerMetaType = m
	}
	ep.Values = d.values(t)
	if ts, ok := t.tables(5); ok {
		ep.Chains = make([]*Chain, ts.n)
		for i, c := range ts.all() {
			ep.Chains[i] = d.chain(c)
		}
	}
	if ts, ok := t.tables(6); ok {
		ep.Operators = make([]*Operator, ts.n)
		for i, o := range ts.all() {
			op := &Operator{}
			op.Name = d.str(o, 0, "name", &op.Absent)
			op.Overload = d.str(o, 1, "overload", &op.Absent)
			ep.Operators[i] = op
			d.at(op, o)
		}
	}
	ep.Delegates = d.delegates(t)
	if ts, ok := t.tables(9); ok {
		ep.NonConstBufferDevice = make([]*NonConstBufferDevice, ts.n)
		for i, nt := range ts.all() {
			ep.NonConstBufferDevice[i] = &NonConstBufferDevice{
				BufferIdx:   nt.i32(0),
				DeviceType:  DeviceType(nt.u8(1)),
				DeviceIndex: int8(nt.u8(2)),
			}
		}
	}
	return ep
}

// delegates decodes the delegates of the ExecutionPlan table t; nil when
// absent.
func (d *fbDecoder) delegates(t fbTab) []*BackendDelegate {
	ts, ok := t.tables(slotPlanDelegate)
	if !ok {
		return nil
	}
	ds := make([]*BackendDelegate, ts.n)
	for i, dt := range ts.all() {
		ds[i] = d.delegate(dt)
	}
	return ds
}

// values decodes the value table of the ExecutionPlan table t; nil when
// absent.
func (d *fbDecoder) values(t fbTab) []*EValue {
	ts, ok := t.tables(2)
	if !ok {
		return nil
	}
	vs := make([]*EValue, ts.n)
	for i, v := range ts.all() {
		vs[i] = &EValue{Val: d.value(v)}
		d.at(vs[i], v)
	}
	return vs
}

func (d *fbDecoder) delegate(dt fbTab) *BackendDelegate {
	bd := &BackendDelegate{}
	bd.ID = d.str(dt, 0, "id", &bd.Absent)
	d.at(bd, dt)
	if r, ok := dt.sub(1); ok {
		bd.Processed = &BackendDelegateDataReference{Location: DataLocation(r.u8(0)), Index: r.u32(1)}
		d.at(bd.Processed, r)
	}
	if ts, ok := dt.tables(2); ok {
		bd.CompileSpecs = make([]*CompileSpec, ts.n)
		for i, c := range ts.all() {
			cs := &CompileSpec{Value: c.bytes(1)}
			cs.Key = d.str(c, 0, "key", &cs.Absent)
			bd.CompileSpecs[i] = cs
			d.at(cs, c)
		}
	}
	return bd
}

func (d *fbDecoder) chain(c fbTab) *Chain {
	ch := &Chain{Inputs: c.i32s(0), Outputs: c.i32s(1)}
	d.at(ch, c)
	if ts, ok := c.tables(2); ok {
		ch.Instructions = make([]*Instruction, ts.n)
		for i, in := range ts.all() {
			ch.Instructions[i] = &Instruction{Args: decodeInstruction(in)}
			d.at(ch.Instructions[i], in)
		}
	}
	if ts, ok := c.tables(3); ok {
		ch.Stacktrace = make([]*FrameList, ts.n)
		for i, fl := range ts.all() {
			l := &FrameList{}
			if fs, ok := fl.tables(0); ok {
				l.Items = make([]*Frame, fs.n)
				for j, f := range fs.all() {
					fr := &Frame{}
					fr.Filename = d.str(f, 0, "filename", &fr.Absent)
					fr.Lineno = f.i32(1)
					fr.Name = d.str(f, 2, "name", &fr.Absent)
					fr.Context = d.str(f, 3, "context", &fr.Absent)
					l.Items[j] = fr
				}
			}
			ch.Stacktrace[i] = l
		}
	}
	return ch
}

// decodeInstruction returns nil for the NONE tag, *UnknownInstruction for an
// unknown tag and a typed nil pointer (e.g. (*KernelCall)(nil)) when the tag
// is known but the member table is absent.
func decodeInstruction(in fbTab) InstructionArgs {
	tag := InstructionArguments(in.u8(0))
	if tag == InstructionArgumentsNONE {
		return nil
	}
	if tag > InstructionArgumentsFreeCall {
		// The verifier did not look inside an unknown member: don't either.
		return &UnknownInstruction{Tag: tag}
	}
	t, ok := in.sub(1)
	switch tag {
	case InstructionArgumentsKernelCall:
		if !ok {
			return (*KernelCall)(nil)
		}
		return &KernelCall{OpIndex: t.i32(0), Args: t.i32s(1)}
	case InstructionArgumentsDelegateCall:
		if !ok {
			return (*DelegateCall)(nil)
		}
		return &DelegateCall{DelegateIndex: t.i32(0), Args: t.i32s(1)}
	case InstructionArgumentsMoveCall:
		if !ok {
			return (*MoveCall)(nil)
		}
		return &MoveCall{MoveFrom: t.i32(0), MoveTo: t.i32(1)}
	case InstructionArgumentsJumpFalseCall:
		if !ok {
			return (*JumpFalseCall)(nil)
		}
		return &JumpFalseCall{CondValueIndex: t.i32(0), DestinationInstruction: t.i32(1)}
	case InstructionArgumentsFreeCall:
		if !ok {
			return (*FreeCall)(nil)
		}
		return &FreeCall{ValueIndex: t.i32(0)}
	}
	return &UnknownInstruction{Tag: tag}
}

// decodeValue follows the same conventions as decodeInstruction.
func (d *fbDecoder) value(v fbTab) Value {
	tag := KernelTypes(v.u8(0))
	if tag == KernelTypesNONE {
		return nil
	}
	if tag > KernelTypesOptionalTensorList {
		// The verifier did not look inside an unknown member: don't either.
		return &UnknownValue{Tag: tag}
	}
	t, ok := v.sub(1)
	switch tag {
	case KernelTypesNull:
		if !ok {
			return (*Null)(nil)
		}
		return &Null{}
	case KernelTypesInt:
		if !ok {
			return (*Int)(nil)
		}
		return &Int{IntVal: int64(t.u64(0))}
	case KernelTypesBool:
		if !ok {
			return (*Bool)(nil)
		}
		return &Bool{BoolVal: t.u8(0) != 0}
	case KernelTypesDouble:
		if !ok {
			return (*Double)(nil)
		}
		return &Double{DoubleVal: math.Float64frombits(t.u64(0))}
	case KernelTypesTensor:
		if !ok {
			return (*Tensor)(nil)
		}
		ts := d.tensor(t)
		d.at(ts, t)
		return ts
	case KernelTypesString:
		if !ok {
			return (*String)(nil)
		}
		s := &String{}
		s.StringVal = d.str(t, 0, "string_val", &s.Absent)
		return s
	case KernelTypesIntList:
		if !ok {
			return (*IntList)(nil)
		}
		return &IntList{Items: t.i64s(0)}
	case KernelTypesDoubleList:
		if !ok {
			return (*DoubleList)(nil)
		}
		return &DoubleList{Items: float64s(t.u64s(0))}
	case KernelTypesBoolList:
		if !ok {
			return (*BoolList)(nil)
		}
		return &BoolList{Items: bools(t.bytes(0))}
	case KernelTypesTensorList:
		if !ok {
			return (*TensorList)(nil)
		}
		return &TensorList{Items: t.i32s(0)}
	case KernelTypesOptionalTensorList:
		if !ok {
			return (*OptionalTensorList)(nil)
		}
		return &OptionalTensorList{Items: t.i32s(0)}
	}
	return &UnknownValue{Tag: tag}
}

// float64s converts a DoubleList's raw items; nil stays nil (absent).
func float64s(u []uint64) []float64 {
	if u == nil {
		return nil
	}
	items := make([]float64, len(u))
	for i, x := range u {
		items[i] = math.Float64frombits(x)
	}
	return items
}

// bools converts a BoolList's bytes, any nonzero byte true; nil stays nil
// (absent).
func bools(raw []byte) []bool {
	if raw == nil {
		return nil
	}
	items := make([]bool, len(raw))
	for i, x := range raw {
		items[i] = x != 0
	}
	return items
}

func (d *fbDecoder) tensor(t fbTab) *Tensor {
	ts := &Tensor{
		ScalarType:    ScalarType(t.u8(0)),
		StorageOffset: t.i32(1),
		Sizes:         t.i32s(2),
		DimOrder:      t.bytes(3),
		RequiresGrad:  t.u8(4) != 0,
		DataBufferIdx: t.u32(5),
		Layout:        int8(t.u8(7)),
		ShapeDynamism: TensorShapeDynamism(t.u8(8)),
	}
	if ts.DimOrder != nil {
		// dim_order is small; copy it so Tensor does not pin the region.
		ts.DimOrder = append([]uint8{}, ts.DimOrder...)
	}
	if a, ok := t.sub(6); ok {
		ts.AllocationInfo = &AllocationDetails{MemoryID: a.u32(0), MemoryOffsetLow: a.u32(1), MemoryOffsetHigh: a.u32(2)}
	}
	if e, ok := t.sub(9); ok {
		x := &ExtraTensorInfo{
			MutableDataSegmentsIdx: e.u64(0),
			Location:               TensorDataLocation(e.u8(2)),
			DeviceType:             DeviceType(e.u8(3)),
			DeviceIndex:            int8(e.u8(4)),
		}
		x.FullyQualifiedName = d.str(e, 1, "fully_qualified_name", &x.Absent)
		ts.ExtraTensorInfo = x
	}
	return ts
}
