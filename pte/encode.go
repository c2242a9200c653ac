package pte

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/ptekit/ptekit/internal/fbs/program"
)

// fileIdentifier is the FlatBuffers file identifier of every program.
var fileIdentifier = []byte("ET12")

// maxProgramSize is the largest flatbuffer region (8-byte prefix, extended
// header and all tables) a program file can have. FlatBuffers offsets are
// signed 32-bit, so ExecuTorch's verifier refuses anything larger. It is a
// variable so that tests can exercise the limit without allocating 2 GiB.
var maxProgramSize int64 = math.MaxInt32

// inlineAlign is the force_align of Buffer.storage and
// BackendDelegateInlineData.data in program.fbs, and the largest alignment the
// encoder ever asks the builder for.
const inlineAlign = 16

// ErrProgramTooLarge is matched (errors.Is) by the error Write returns when
// the FlatBuffers region would exceed the 2 GiB FlatBuffers limit, which
// happens when too many bytes are stored inline (Program.ConstantBuffer or
// Program.BackendDelegateData). Such payloads must be moved to segments.
var ErrProgramTooLarge = errors.New("pte: flatbuffer region too large")

// tooLargeError is a *FormatError that also matches ErrProgramTooLarge.
type tooLargeError struct{ fe *FormatError }

func (e *tooLargeError) Error() string   { return e.fe.Error() }
func (e *tooLargeError) Unwrap() []error { return []error{e.fe, ErrProgramTooLarge} }

func errTooLarge(size int64) error {
	return &tooLargeError{&FormatError{
		Off:  -1,
		Msg:  fmt.Sprintf("flatbuffer region needs at least %d bytes, over the FlatBuffers limit of %d: move inline constant_buffer and backend_delegate_data payloads to segments", size, maxProgramSize),
		Code: CodeInvalidProgram,
	}}
}

// encodeError returns a *FormatError for a program that cannot be encoded.
// path is relative; callers up the tree prefix it with their own field name.
func encodeError(path, format string, args ...any) *FormatError {
	return &FormatError{Off: -1, Path: path, Msg: fmt.Sprintf(format, args...), Code: CodeInvalidProgram}
}

// within prefixes the path of err (a *FormatError from this file) with
// field, or field[i] when i >= 0.
func within(err error, field string, i int) error {
	var fe *FormatError
	if !errors.As(err, &fe) {
		return err
	}
	p := field
	if i >= 0 {
		p += "[" + strconv.Itoa(i) + "]"
	}
	switch {
	case fe.Path == "":
		fe.Path = p
	case fe.Path[0] == '[':
		fe.Path = p + fe.Path
	default:
		fe.Path = p + "." + fe.Path
	}
	return err
}

// segmentRefs says how segment indices stored in the program are rewritten.
type segmentRefs struct {
	// remap maps an input segment index to the written one; nil keeps
	// indices unchanged.
	remap []int
	// layout replaces Program.Segments. layoutPresent false writes the
	// field absent (only when layout is empty).
	layout        []*DataSegment
	layoutPresent bool
}

func (r *segmentRefs) index(i uint32) (uint32, error) {
	if r.remap == nil {
		return i, nil
	}
	if uint64(i) >= uint64(len(r.remap)) {
		return 0, encodeError("", "segment index %d out of range (%d segment payloads given), cannot remap it for deduplication", i, len(r.remap))
	}
	return uint32(r.remap[i]), nil
}

// encoder turns a Program into FlatBuffers bytes.
type encoder struct {
	b    *flatbuffers.Builder
	refs *segmentRefs
}

// encodeProgram returns the finished FlatBuffers bytes of p with the segment
// table and segment references taken from refs. It does not modify p. The
// result starts with the root offset and "ET12" and its length is a multiple
// of 16; no extended header is inserted. reserve is the number of bytes the
// caller will add to the region (the extended header), counted against
// maxProgramSize.
func encodeProgram(p *Program, refs *segmentRefs, reserve int64) (out []byte, err error) {
	if p == nil {
		return nil, encodeError("", "nil program")
	}
	inline := inlineBytes(p)
	if inline+reserve+8 > maxProgramSize {
		return nil, errTooLarge(inline + reserve + 8)
	}
	bound := sizeBound(p, refs) + reserve
	initial := builderSize(bound, inline)
	e := &encoder{b: flatbuffers.NewBuilder(int(initial)), refs: refs}
	defer func() {
		// The builder panics instead of growing past its 32-bit limit.
		if r := recover(); r != nil {
			if s, ok := r.(string); ok && s == "cannot grow buffer beyond 2 gigabytes" {
				out, err = nil, errTooLarge(bound)
				return
			}
			panic(r)
		}
	}()
	root, err := e.program(p)
	if err != nil {
		return nil, err
	}
	e.b.FinishWithFileIdentifier(root, fileIdentifier)
	out = e.b.FinishedBytes()
	if n := int64(len(out)) + reserve; n > maxProgramSize {
		return nil, errTooLarge(n)
	}
	return out, nil
}

// inlineBytes is the number of payload bytes p stores inside the flatbuffer.
func inlineBytes(p *Program) int64 {
	var n int64
	for _, b := range p.ConstantBuffer {
		if b != nil {
			n += int64(len(b.Storage))
		}
	}
	for _, d := range p.BackendDelegateData {
		if d != nil {
			n += int64(len(d.Data))
		}
	}
	return n
}

// Upper bounds of the bytes the builder uses, so that it can be allocated
// once (the builder cannot grow past 1 GiB by itself) and so that a program
// over the limit is refused before doing the work.
func boundString(s string) int64 { return int64(len(s)) + 8 }
func boundVec(n int, elem int64) int64 {
	return 4 + int64(n)*elem + 15 // length, elements, worst-case alignment
}
func boundTable(slots int) int64 { return 16 + 12*int64(slots) } // vtable, soffset, fields, padding

// growableBound is the largest bound for which the builder may start
// smaller and grow: the builder doubles its buffer and refuses to double
// one of 1 GiB or more, so a program that may need more gets its bound
// allocated at once.
const growableBound = 1 << 30

// initialBuilderSize is the buffer the builder starts with for a program
// whose encoded size is at most bound, inline of it payload bytes. The
// bound of the tables is loose (every table is counted with its own
// vtable and worst-case padding; real programs share vtables and strings,
// and come out at a quarter to a fifth of it), and the builder's buffer
// is zeroed when it is made, so starting from the bound would clear and
// hold several times the bytes a program of many small methods needs. It
// starts from the payloads plus a quarter of the rest instead, and grows
// (by doubling, copying at most the bytes written so far) when that is
// short.
func initialBuilderSize(bound, inline int64) int64 {
	if bound >= growableBound {
		return min(bound, maxProgramSize)
	}
	return max(1024, inline+(bound-inline)/4)
}

// builderSize is initialBuilderSize; tests make the builder start tiny,
// so that it grows, and compare the bytes.
var builderSize = initialBuilderSize

func sizeBound(p *Program, refs *segmentRefs) int64 {
	n := int64(64) + boundTable(8)
	n += boundVec(len(p.executionPlan), 4)
	for _, ep := range p.executionPlan {
		if ep != nil {
			n += boundPlan(ep)
		}
	}
	n += boundVec(len(p.ConstantBuffer), 4)
	for _, b := range p.ConstantBuffer {
		if b != nil {
			n += boundTable(1) + boundVec(len(b.Storage), 1)
		}
	}
	n += boundVec(len(p.BackendDelegateData), 4)
	for _, d := range p.BackendDelegateData {
		if d != nil {
			n += boundTable(1) + boundVec(len(d.Data), 1)
		}
	}
	n += boundVec(len(refs.layout), 4) + int64(len(refs.layout))*boundTable(2)
	if cs := p.ConstantSegment; cs != nil {
		n += boundTable(2) + boundVec(len(cs.Offsets), 8)
	}
	n += boundVec(len(p.MutableDataSegments), 4)
	for _, m := range p.MutableDataSegments {
		if m != nil {
			n += boundTable(2) + boundVec(len(m.Offsets), 8)
		}
	}
	n += boundVec(len(p.NamedData), 4)
	for _, nd := range p.NamedData {
		if nd != nil {
			n += boundTable(2) + boundString(nd.Key)
		}
	}
	return n
}

// boundPlan bounds the encoded size of one execution plan.
func boundPlan(ep *ExecutionPlan) int64 {
	n := boundTable(10) + boundString(ep.Name)
	if c := ep.ContainerMetaType; c != nil {
		n += boundTable(2) + boundString(c.EncodedInpStr) + boundString(c.EncodedOutStr)
	}
	n += boundVec(len(ep.Values), 4)
	for _, v := range ep.Values {
		n += boundValue(v)
	}
	n += boundVec(len(ep.Inputs), 4) + boundVec(len(ep.Outputs), 4)
	n += boundVec(len(ep.Chains), 4)
	for _, c := range ep.Chains {
		n += boundChain(c)
	}
	n += boundVec(len(ep.Operators), 4)
	for _, op := range ep.Operators {
		if op != nil {
			n += boundTable(2) + boundString(op.Name) + boundString(op.Overload)
		}
	}
	n += boundVec(len(ep.Delegates), 4)
	for _, d := range ep.Delegates {
		n += boundDelegate(d)
	}
	n += boundVec(len(ep.NonConstBufferSizes), 8)
	n += boundVec(len(ep.NonConstBufferDevice), 4) + int64(len(ep.NonConstBufferDevice))*boundTable(3)
	return n
}

// boundValue bounds the encoded size of one EValue: its table, its union
// value's table and what that value holds.
func boundValue(v *EValue) int64 {
	n := boundTable(2) + boundTable(10)
	if v == nil {
		return n
	}
	switch x := v.Val.(type) {
	case *Tensor:
		if x != nil {
			n += boundVec(len(x.Sizes), 4) + boundVec(len(x.DimOrder), 1) + 2*boundTable(5)
			if x.ExtraTensorInfo != nil {
				n += boundString(x.ExtraTensorInfo.FullyQualifiedName)
			}
		}
	case *String:
		if x != nil {
			n += boundString(x.StringVal)
		}
	case *IntList:
		if x != nil {
			n += boundVec(len(x.Items), 8)
		}
	case *DoubleList:
		if x != nil {
			n += boundVec(len(x.Items), 8)
		}
	case *BoolList:
		if x != nil {
			n += boundVec(len(x.Items), 1)
		}
	case *TensorList:
		if x != nil {
			n += boundVec(len(x.Items), 4)
		}
	case *OptionalTensorList:
		if x != nil {
			n += boundVec(len(x.Items), 4)
		}
	}
	return n
}

// boundChain bounds the encoded size of one chain: its instructions and
// its stack traces.
func boundChain(c *Chain) int64 {
	if c == nil {
		return 0
	}
	n := boundTable(4) + boundVec(len(c.Inputs), 4) + boundVec(len(c.Outputs), 4)
	n += boundVec(len(c.Instructions), 4)
	for _, in := range c.Instructions {
		n += boundTable(2) + boundTable(2)
		if in == nil {
			continue
		}
		switch x := in.Args.(type) {
		case *KernelCall:
			if x != nil {
				n += boundVec(len(x.Args), 4)
			}
		case *DelegateCall:
			if x != nil {
				n += boundVec(len(x.Args), 4)
			}
		}
	}
	n += boundVec(len(c.Stacktrace), 4)
	for _, fl := range c.Stacktrace {
		if fl == nil {
			continue
		}
		n += boundTable(1) + boundVec(len(fl.Items), 4)
		for _, f := range fl.Items {
			if f != nil {
				n += boundTable(4) + boundString(f.Filename) + boundString(f.Name) + boundString(f.Context)
			}
		}
	}
	return n
}

// boundDelegate bounds the encoded size of one backend delegate and its
// compile specs.
func boundDelegate(d *BackendDelegate) int64 {
	if d == nil {
		return 0
	}
	n := boundTable(3) + boundString(d.ID) + boundTable(2) + boundVec(len(d.CompileSpecs), 4)
	for _, cs := range d.CompileSpecs {
		if cs != nil {
			n += boundTable(2) + boundString(cs.Key) + boundVec(len(cs.Value), 1)
		}
	}
	return n
}

// tables encodes a vector of tables. It returns 0 for a nil slice (absent
// field). A nil element is an error: FlatBuffers vectors cannot hold null.
func tables[T any](e *encoder, field string, items []*T, enc func(*T) (flatbuffers.UOffsetT, error)) (flatbuffers.UOffsetT, error) {
	if items == nil {
		return 0, nil
	}
	offs := make([]flatbuffers.UOffsetT, len(items))
	for i, it := range items {
		if it == nil {
			return 0, within(encodeError("", "nil entry (vectors of tables cannot hold null)"), field, i)
		}
		o, err := enc(it)
		if err != nil {
			return 0, within(err, field, i)
		}
		offs[i] = o
	}
	e.b.StartVector(4, len(offs), 4)
	for i := len(offs) - 1; i >= 0; i-- {
		e.b.PrependUOffsetT(offs[i])
	}
	return e.b.EndVector(len(offs)), nil
}

func (e *encoder) str(s string) flatbuffers.UOffsetT { return e.b.CreateSharedString(s) }

// optStr writes the string field named field (schema name) unless the
// table's Absent list keeps it absent, in which case it returns 0 and the
// caller leaves the field out.
func (e *encoder) optStr(s string, absent []string, field string) flatbuffers.UOffsetT {
	if isAbsent(absent, field, s) {
		return 0
	}
	return e.str(s)
}

// bytes writes a [ubyte] vector, or nothing (0) for nil. align is the
// force_align of the field (1 when none).
func (e *encoder) bytes(v []byte, align int) flatbuffers.UOffsetT {
	if v == nil {
		return 0
	}
	if align > 1 {
		// Pad so that the element data (not the length) ends up aligned,
		// which is what force_align means; CreateByteVector then adds
		// nothing because 4 divides align.
		e.b.Prep(align, len(v))
	}
	return e.b.CreateByteVector(v)
}

// scalars writes a vector of scalars of size bytes each, or nothing (0) for
// nil; put is the builder's Prepend method for the element type.
func scalars[T any](e *encoder, v []T, size int, put func(T)) flatbuffers.UOffsetT {
	if v == nil {
		return 0
	}
	e.b.StartVector(size, len(v), size)
	for i := len(v) - 1; i >= 0; i-- {
		put(v[i])
	}
	return e.b.EndVector(len(v))
}

func (e *encoder) int32s(v []int32) flatbuffers.UOffsetT { return scalars(e, v, 4, e.b.PrependInt32) }

// vectorTable writes a table whose only field is a vector in slot 0, the
// shape of IntList, DoubleList, BoolList, TensorList, OptionalTensorList,
// FrameList, Buffer and BackendDelegateInlineData. items 0 leaves the
// vector absent.
func (e *encoder) vectorTable(items flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	e.b.StartObject(1)
	if items != 0 {
		e.b.PrependUOffsetTSlot(0, items, 0)
	}
	return e.b.EndObject()
}

func (e *encoder) program(p *Program) (flatbuffers.UOffsetT, error) {
	b := e.b
	plans, err := tables(e, "execution_plan", p.executionPlan, e.plan)
	if err != nil {
		return 0, err
	}
	constBuf, err := tables(e, "constant_buffer", p.ConstantBuffer, func(x *Buffer) (flatbuffers.UOffsetT, error) {
		return e.vectorTable(e.bytes(x.Storage, inlineAlign)), nil
	})
	if err != nil {
		return 0, err
	}
	inline, err := tables(e, "backend_delegate_data", p.BackendDelegateData, func(x *BackendDelegateInlineData) (flatbuffers.UOffsetT, error) {
		return e.vectorTable(e.bytes(x.Data, inlineAlign)), nil
	})
	if err != nil {
		return 0, err
	}
	segs, err := tables(e, "segments", e.refs.segments(), e.dataSegment)
	if err != nil {
		return 0, err
	}
	var constSeg flatbuffers.UOffsetT
	if p.ConstantSegment != nil {
		if constSeg, err = e.subsegments(p.ConstantSegment); err != nil {
			return 0, within(err, "constant_segment", -1)
		}
	}
	mutable, err := tables(e, "mutable_data_segments", p.MutableDataSegments, e.subsegments)
	if err != nil {
		return 0, err
	}
	named, err := tables(e, "named_data", p.NamedData, e.namedData)
	if err != nil {
		return 0, err
	}

	program.ProgramStart(b)
	program.ProgramAddVersion(b, p.Version)
	if plans != 0 {
		program.ProgramAddExecutionPlan(b, plans)
	}
	if constBuf != 0 {
		program.ProgramAddConstantBuffer(b, constBuf)
	}
	if inline != 0 {
		program.ProgramAddBackendDelegateData(b, inline)
	}
	if segs != 0 {
		program.ProgramAddSegments(b, segs)
	}
	if constSeg != 0 {
		program.ProgramAddConstantSegment(b, constSeg)
	}
	if mutable != 0 {
		program.ProgramAddMutableDataSegments(b, mutable)
	}
	if named != 0 {
		program.ProgramAddNamedData(b, named)
	}
	return program.ProgramEnd(b), nil
}

// segments is the segment table to write: nil (absent) when neither the
// program nor the payloads call for one, else present even when empty.
func (r *segmentRefs) segments() []*DataSegment {
	switch {
	case !r.layoutPresent:
		return nil
	case r.layout == nil:
		return []*DataSegment{}
	}
	return r.layout
}

// dataSegment encodes one entry of the segment table.
func (e *encoder) dataSegment(x *DataSegment) (flatbuffers.UOffsetT, error) {
	b := e.b
	program.DataSegmentStart(b)
	program.DataSegmentAddOffset(b, x.Offset)
	program.DataSegmentAddSize(b, x.Size)
	return program.DataSegmentEnd(b), nil
}

// namedData encodes one named data entry, its segment index remapped to
// the segments written.
func (e *encoder) namedData(x *NamedData) (flatbuffers.UOffsetT, error) {
	b := e.b
	idx, err := e.refs.index(x.SegmentIndex)
	if err != nil {
		return 0, within(err, "segment_index", -1)
	}
	key := e.optStr(x.Key, x.Absent, "key")
	program.NamedDataStart(b)
	if key != 0 {
		program.NamedDataAddKey(b, key)
	}
	program.NamedDataAddSegmentIndex(b, idx)
	return program.NamedDataEnd(b), nil
}

func (e *encoder) subsegments(x *SubsegmentOffsets) (flatbuffers.UOffsetT, error) {
	idx, err := e.refs.index(x.SegmentIndex)
	if err != nil {
		return 0, within(err, "segment_index", -1)
	}
	offs := scalars(e, x.Offsets, 8, e.b.PrependUint64)
	program.SubsegmentOffsetsStart(e.b)
	program.SubsegmentOffsetsAddSegmentIndex(e.b, idx)
	if x.Offsets != nil {
		program.SubsegmentOffsetsAddOffsets(e.b, offs)
	}
	return program.SubsegmentOffsetsEnd(e.b), nil
}

func (e *encoder) plan(ep *ExecutionPlan) (flatbuffers.UOffsetT, error) {
	b := e.b
	name := e.optStr(ep.Name, ep.Absent, "name")
	meta := e.containerMeta(ep.ContainerMetaType)
	values, err := tables(e, "values", ep.Values, e.evalue)
	if err != nil {
		return 0, err
	}
	inputs, outputs := e.int32s(ep.Inputs), e.int32s(ep.Outputs)
	chains, err := tables(e, "chains", ep.Chains, e.chain)
	if err != nil {
		return 0, err
	}
	ops, err := tables(e, "operators", ep.Operators, e.operator)
	if err != nil {
		return 0, err
	}
	delegates, err := tables(e, "delegates", ep.Delegates, e.delegate)
	if err != nil {
		return 0, err
	}
	sizes := scalars(e, ep.NonConstBufferSizes, 8, b.PrependInt64)
	devices, err := tables(e, "non_const_buffer_device", ep.NonConstBufferDevice, e.bufferDevice)
	if err != nil {
		return 0, err
	}

	program.ExecutionPlanStart(b)
	if name != 0 {
		program.ExecutionPlanAddName(b, name)
	}
	if meta != 0 {
		program.ExecutionPlanAddContainerMetaType(b, meta)
	}
	if values != 0 {
		program.ExecutionPlanAddValues(b, values)
	}
	if ep.Inputs != nil {
		program.ExecutionPlanAddInputs(b, inputs)
	}
	if ep.Outputs != nil {
		program.ExecutionPlanAddOutputs(b, outputs)
	}
	if chains != 0 {
		program.ExecutionPlanAddChains(b, chains)
	}
	if ops != 0 {
		program.ExecutionPlanAddOperators(b, ops)
	}
	if delegates != 0 {
		program.ExecutionPlanAddDelegates(b, delegates)
	}
	if ep.NonConstBufferSizes != nil {
		program.ExecutionPlanAddNonConstBufferSizes(b, sizes)
	}
	if devices != 0 {
		program.ExecutionPlanAddNonConstBufferDevice(b, devices)
	}
	return program.ExecutionPlanEnd(b), nil
}

// containerMeta encodes a plan's container metadata; 0 when it has none.
func (e *encoder) containerMeta(c *ContainerMetadata) flatbuffers.UOffsetT {
	if c == nil {
		return 0
	}
	b := e.b
	in, out := e.optStr(c.EncodedInpStr, c.Absent, "encoded_inp_str"), e.optStr(c.EncodedOutStr, c.Absent, "encoded_out_str")
	program.ContainerMetadataStart(b)
	if in != 0 {
		program.ContainerMetadataAddEncodedInpStr(b, in)
	}
	if out != 0 {
		program.ContainerMetadataAddEncodedOutStr(b, out)
	}
	return program.ContainerMetadataEnd(b)
}

// operator encodes one entry of a plan's operator table.
func (e *encoder) operator(op *Operator) (flatbuffers.UOffsetT, error) {
	b := e.b
	n, o := e.optStr(op.Name, op.Absent, "name"), e.optStr(op.Overload, op.Absent, "overload")
	program.OperatorStart(b)
	if n != 0 {
		program.OperatorAddName(b, n)
	}
	if o != 0 {
		program.OperatorAddOverload(b, o)
	}
	return program.OperatorEnd(b), nil
}

// bufferDevice encodes the device of one non-constant buffer.
func (e *encoder) bufferDevice(d *NonConstBufferDevice) (flatbuffers.UOffsetT, error) {
	b := e.b
	program.NonConstBufferDeviceStart(b)
	program.NonConstBufferDeviceAddBufferIdx(b, d.BufferIdx)
	program.NonConstBufferDeviceAddDeviceType(b, program.DeviceType(d.DeviceType))
	program.NonConstBufferDeviceAddDeviceIndex(b, d.DeviceIndex)
	return program.NonConstBufferDeviceEnd(b), nil
}

// isNilPointer reports whether v holds a typed nil pointer.
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

func (e *encoder) evalue(ev *EValue) (flatbuffers.UOffsetT, error) {
	b := e.b
	if ev.Val != nil && isNilPointer(ev.Val) {
		return 0, encodeError("val", "nil %T", ev.Val)
	}
	var val flatbuffers.UOffsetT
	tag := KernelTypesNONE
	switch v := ev.Val.(type) {
	case nil:
	case *Null:
		program.NullStart(b)
		val = program.NullEnd(b)
	case *Int:
		program.IntStart(b)
		program.IntAddIntVal(b, v.IntVal)
		val = program.IntEnd(b)
	case *Bool:
		program.BoolStart(b)
		program.BoolAddBoolVal(b, v.BoolVal)
		val = program.BoolEnd(b)
	case *Double:
		program.DoubleStart(b)
		if v.DoubleVal == 0 && math.Signbit(v.DoubleVal) {
			// -0.0 compares equal to the default 0, so the generated adder
			// would leave the field out and it would read back as +0.0.
			b.PrependFloat64(v.DoubleVal)
			b.Slot(0)
		} else {
			program.DoubleAddDoubleVal(b, v.DoubleVal)
		}
		val = program.DoubleEnd(b)
	case *Tensor:
		val = e.tensor(v)
	case *String:
		s := e.optStr(v.StringVal, v.Absent, "string_val")
		program.StringStart(b)
		if s != 0 {
			program.StringAddStringVal(b, s)
		}
		val = program.StringEnd(b)
	case *IntList:
		val = e.vectorTable(scalars(e, v.Items, 8, b.PrependInt64))
	case *DoubleList:
		val = e.vectorTable(scalars(e, v.Items, 8, b.PrependFloat64))
	case *BoolList:
		val = e.vectorTable(scalars(e, v.Items, 1, b.PrependBool))
	case *TensorList:
		val = e.vectorTable(e.int32s(v.Items))
	case *OptionalTensorList:
		val = e.vectorTable(e.int32s(v.Items))
	case *UnknownValue:
		// Written as its tag with no table (see UnknownValue).
		if v.Tag <= KernelTypesOptionalTensorList {
			return 0, encodeError("val", "UnknownValue with tag %d, which is a known member (use its type)", uint8(v.Tag))
		}
	default:
		return 0, encodeError("val", "unsupported value type %T", v)
	}
	if ev.Val != nil {
		tag = ev.Val.KernelType()
	}
	program.EValueStart(b)
	if tag != KernelTypesNONE {
		program.EValueAddValType(b, program.KernelTypes(tag))
	}
	if val != 0 {
		program.EValueAddVal(b, val)
	}
	return program.EValueEnd(b), nil
}

func (e *encoder) tensor(t *Tensor) flatbuffers.UOffsetT {
	b := e.b
	sizes := e.int32s(t.Sizes)
	dims := e.bytes(t.DimOrder, 1)
	var alloc, extra flatbuffers.UOffsetT
	if a := t.AllocationInfo; a != nil {
		program.AllocationDetailsStart(b)
		program.AllocationDetailsAddMemoryId(b, a.MemoryID)
		program.AllocationDetailsAddMemoryOffsetLow(b, a.MemoryOffsetLow)
		program.AllocationDetailsAddMemoryOffsetHigh(b, a.MemoryOffsetHigh)
		alloc = program.AllocationDetailsEnd(b)
	}
	if x := t.ExtraTensorInfo; x != nil {
		fqn := e.optStr(x.FullyQualifiedName, x.Absent, "fully_qualified_name")
		program.ExtraTensorInfoStart(b)
		program.ExtraTensorInfoAddMutableDataSegmentsIdx(b, x.MutableDataSegmentsIdx)
		if fqn != 0 {
			program.ExtraTensorInfoAddFullyQualifiedName(b, fqn)
		}
		program.ExtraTensorInfoAddLocation(b, program.TensorDataLocation(x.Location))
		program.ExtraTensorInfoAddDeviceType(b, program.DeviceType(x.DeviceType))
		program.ExtraTensorInfoAddDeviceIndex(b, x.DeviceIndex)
		extra = program.ExtraTensorInfoEnd(b)
	}
	program.TensorStart(b)
	program.TensorAddStorageOffset(b, t.StorageOffset)
	if t.Sizes != nil {
		program.TensorAddSizes(b, sizes)
	}
	if t.DimOrder != nil {
		program.TensorAddDimOrder(b, dims)
	}
	program.TensorAddDataBufferIdx(b, t.DataBufferIdx)
	if alloc != 0 {
		program.TensorAddAllocationInfo(b, alloc)
	}
	if extra != 0 {
		program.TensorAddExtraTensorInfo(b, extra)
	}
	program.TensorAddScalarType(b, program.ScalarType(t.ScalarType))
	program.TensorAddRequiresGrad(b, t.RequiresGrad)
	program.TensorAddLayout(b, t.Layout)
	program.TensorAddShapeDynamism(b, program.TensorShapeDynamism(t.ShapeDynamism))
	return program.TensorEnd(b)
}

func (e *encoder) chain(c *Chain) (flatbuffers.UOffsetT, error) {
	b := e.b
	inputs, outputs := e.int32s(c.Inputs), e.int32s(c.Outputs)
	instrs, err := tables(e, "instructions", c.Instructions, e.instruction)
	if err != nil {
		return 0, err
	}
	trace, err := tables(e, "stacktrace", c.Stacktrace, func(fl *FrameList) (flatbuffers.UOffsetT, error) {
		items, err := tables(e, "items", fl.Items, func(f *Frame) (flatbuffers.UOffsetT, error) {
			file := e.optStr(f.Filename, f.Absent, "filename")
			name := e.optStr(f.Name, f.Absent, "name")
			ctx := e.optStr(f.Context, f.Absent, "context")
			program.FrameStart(b)
			if file != 0 {
				program.FrameAddFilename(b, file)
			}
			program.FrameAddLineno(b, f.Lineno)
			if name != 0 {
				program.FrameAddName(b, name)
			}
			if ctx != 0 {
				program.FrameAddContext(b, ctx)
			}
			return program.FrameEnd(b), nil
		})
		if err != nil {
			return 0, err
		}
		return e.vectorTable(items), nil
	})
	if err != nil {
		return 0, err
	}
	program.ChainStart(b)
	if c.Inputs != nil {
		program.ChainAddInputs(b, inputs)
	}
	if c.Outputs != nil {
		program.ChainAddOutputs(b, outputs)
	}
	if instrs != 0 {
		program.ChainAddInstructions(b, instrs)
	}
	if trace != 0 {
		program.ChainAddStacktrace(b, trace)
	}
	return program.ChainEnd(b), nil
}

func (e *encoder) instruction(in *Instruction) (flatbuffers.UOffsetT, error) {
	b := e.b
	if in.Args != nil && isNilPointer(in.Args) {
		return 0, encodeError("instr_args", "nil %T", in.Args)
	}
	var args flatbuffers.UOffsetT
	switch v := in.Args.(type) {
	case nil:
	case *KernelCall:
		a := e.int32s(v.Args)
		program.KernelCallStart(b)
		program.KernelCallAddOpIndex(b, v.OpIndex)
		if v.Args != nil {
			program.KernelCallAddArgs(b, a)
		}
		args = program.KernelCallEnd(b)
	case *DelegateCall:
		a := e.int32s(v.Args)
		program.DelegateCallStart(b)
		program.DelegateCallAddDelegateIndex(b, v.DelegateIndex)
		if v.Args != nil {
			program.DelegateCallAddArgs(b, a)
		}
		args = program.DelegateCallEnd(b)
	case *MoveCall:
		program.MoveCallStart(b)
		program.MoveCallAddMoveFrom(b, v.MoveFrom)
		program.MoveCallAddMoveTo(b, v.MoveTo)
		args = program.MoveCallEnd(b)
	case *JumpFalseCall:
		program.JumpFalseCallStart(b)
		program.JumpFalseCallAddCondValueIndex(b, v.CondValueIndex)
		program.JumpFalseCallAddDestinationInstruction(b, v.DestinationInstruction)
		args = program.JumpFalseCallEnd(b)
	case *FreeCall:
		program.FreeCallStart(b)
		program.FreeCallAddValueIndex(b, v.ValueIndex)
		args = program.FreeCallEnd(b)
	case *UnknownInstruction:
		// Written as its tag with no table (see UnknownInstruction).
		if v.Tag <= InstructionArgumentsFreeCall {
			return 0, encodeError("instr_args", "UnknownInstruction with tag %d, which is a known member (use its type)", uint8(v.Tag))
		}
	default:
		return 0, encodeError("instr_args", "unsupported instruction type %T", v)
	}
	program.InstructionStart(b)
	if in.Args != nil {
		program.InstructionAddInstrArgsType(b, program.InstructionArguments(in.Args.InstructionType()))
	}
	if args != 0 {
		program.InstructionAddInstrArgs(b, args)
	}
	return program.InstructionEnd(b), nil
}

func (e *encoder) delegate(d *BackendDelegate) (flatbuffers.UOffsetT, error) {
	b := e.b
	id := e.optStr(d.ID, d.Absent, "id")
	var processed flatbuffers.UOffsetT
	if r := d.Processed; r != nil {
		idx := r.Index
		if r.Location == DataLocationSEGMENT {
			var err error
			if idx, err = e.refs.index(idx); err != nil {
				return 0, within(err, "processed.index", -1)
			}
		}
		program.BackendDelegateDataReferenceStart(b)
		program.BackendDelegateDataReferenceAddIndex(b, idx)
		program.BackendDelegateDataReferenceAddLocation(b, program.DataLocation(r.Location))
		processed = program.BackendDelegateDataReferenceEnd(b)
	}
	specs, err := tables(e, "compile_specs", d.CompileSpecs, func(cs *CompileSpec) (flatbuffers.UOffsetT, error) {
		k, v := e.optStr(cs.Key, cs.Absent, "key"), e.bytes(cs.Value, 1)
		program.CompileSpecStart(b)
		if k != 0 {
			program.CompileSpecAddKey(b, k)
		}
		if cs.Value != nil {
			program.CompileSpecAddValue(b, v)
		}
		return program.CompileSpecEnd(b), nil
	})
	if err != nil {
		return 0, err
	}
	program.BackendDelegateStart(b)
	if id != 0 {
		program.BackendDelegateAddId(b, id)
	}
	if processed != 0 {
		program.BackendDelegateAddProcessed(b, processed)
	}
	if specs != 0 {
		program.BackendDelegateAddCompileSpecs(b, specs)
	}
	return program.BackendDelegateEnd(b), nil
}
