package pte

import (
	"errors"
	"fmt"
	"github.com/ptekit/ptekit/internal/quote"
	"strconv"
	"strings"
)

// method checks one execution plan the way Program::method_meta and
// Method::init do (pte-format.md sections 6 and 8).
func (v *validator) method(i int, ep *ExecutionPlan) {
	v.curMethod = ep.Name
	if v.curMethod == "" {
		v.curMethod = "execution_plan[" + strconv.Itoa(i) + "]"
	}
	defer func() { v.curMethod = "" }()
	path := &fieldPath{name: "execution_plan", index: i}
	off := v.dec.posOf(ep)
	if isAbsent(ep.Absent, "name", ep.Name) {
		// Program::get_method skips it; Method::load dereferences it.
		v.add(SeverityError, CodeInvalidProgram, off, path.String()+".name", "method has no name")
	}
	v.text(off, path, ".name", "method name", ep.Name)
	if ep.NonConstBufferSizes == nil {
		v.add(SeverityError, CodeInvalidProgram, off, path.String()+".non_const_buffer_sizes", "method has no non_const_buffer_sizes")
	}
	if ep.Inputs == nil {
		v.add(SeverityError, CodeInvalidProgram, off, path.String()+".inputs", "method has no inputs")
	}
	if ep.Outputs == nil {
		v.add(SeverityError, CodeInvalidProgram, off, path.String()+".outputs", "method has no outputs")
	}
	bad := v.elems(SeverityError, CodeInvalidProgram, off, ".non_const_buffer_sizes")
	for k, s := range ep.NonConstBufferSizes {
		if s < 0 {
			bad.add(path, k, "negative arena size %d", s)
		}
	}
	bad.done(path)
	if len(ep.NonConstBufferSizes) > 0 && ep.NonConstBufferSizes[0] != 0 {
		v.add(SeverityWarning, CodeOk, off, path.String()+".non_const_buffer_sizes[0]", "reserved entry 0 is %d, want 0", ep.NonConstBufferSizes[0])
	}
	for k, d := range ep.NonConstBufferDevice {
		if d.BufferIdx < 1 || int(d.BufferIdx) >= len(ep.NonConstBufferSizes) {
			v.add(SeverityError, CodeInvalidProgram, off, fmt.Sprintf("%s.non_const_buffer_device[%d].buffer_idx", path.String(), k),
				"buffer index %d is not a planned arena (1..%d)", d.BufferIdx, len(ep.NonConstBufferSizes)-1)
		}
	}
	v.valueIndices(off, path, ".inputs", ep.Inputs, len(ep.Values), "input ", "; ExecuTorch loads the method but aborts in set_input")
	v.valueIndices(off, path, ".outputs", ep.Outputs, len(ep.Values), "output ", "")
	for k, ev := range ep.Values {
		v.value(ep, path, k, ev)
	}
	v.delegates(i, ep, path)
	v.chains(ep, path)
	for k, op := range ep.Operators {
		name := op.Name
		if op.Overload != "" {
			name += "." + op.Overload
		}
		if len(name)+1 > maxOperatorNameSize {
			v.add(SeverityError, CodeInternal, v.dec.posOf(op), fmt.Sprintf("%s.operators[%d]", path.String(), k),
				"operator name %s is %d bytes; ExecuTorch allows %d including the NUL", quote.String(name), len(name), maxOperatorNameSize-1)
		}
		if isAbsent(op.Absent, "name", op.Name) {
			v.add(SeverityError, CodeInvalidProgram, v.dec.posOf(op), fmt.Sprintf("%s.operators[%d].name", path.String(), k), "operator has no name")
		}
		if isAbsent(op.Absent, "overload", op.Overload) {
			v.add(SeverityWarning, CodeOk, v.dec.posOf(op), fmt.Sprintf("%s.operators[%d].overload", path.String(), k),
				"operator has no overload string (write an empty one): some ExecuTorch versions dereference it when they report a missing kernel")
		}
	}
}

// valueIs reports whether values[idx] exists and satisfies ok.
func valueIs(ep *ExecutionPlan, idx int64, ok func(Value) bool) bool {
	return idx >= 0 && idx < int64(len(ep.Values)) && ok(ep.Values[idx].Val)
}

func isTensor(x Value) bool { t, ok := x.(*Tensor); return ok && t != nil }
func isInt(x Value) bool    { t, ok := x.(*Int); return ok && t != nil }

// value checks one EValue as the tensor and list parsers do.
func (v *validator) value(ep *ExecutionPlan, plan *fieldPath, k int, ev *EValue) {
	path := &fieldPath{up: plan, name: ".values", index: k, tail: ".val"}
	off := v.dec.posOf(ev)
	switch x := ev.Val.(type) {
	case nil:
		v.add(SeverityError, CodeInvalidProgram, off, path.String(), "value has union tag NONE")
	case *UnknownValue:
		v.add(SeverityError, CodeInvalidProgram, off, path.String(), "unknown KernelTypes union tag %d", uint8(x.Tag))
	case *Null:
	case *Tensor:
		if x == nil {
			v.add(SeverityError, CodeInvalidProgram, off, path.String(), "Tensor value has no Tensor table")
			return
		}
		v.tensor(ep, path, x)
	case *IntList:
		if x == nil || x.Items == nil {
			v.add(SeverityError, CodeInvalidProgram, off, path.String(), "IntList has no items")
			return
		}
		bad := v.elems(SeverityError, CodeInvalidProgram, off, ".items")
		for j, it := range x.Items {
			if !valueIs(ep, it, isInt) {
				bad.add(path, j, "item %d is not the index of an Int value", it)
			}
		}
		bad.done(path)
	case *TensorList:
		if x == nil || x.Items == nil {
			v.add(SeverityError, CodeInvalidProgram, off, path.String(), "TensorList has no items")
			return
		}
		v.tensorItems(ep, path, k, x.Items, false)
	case *OptionalTensorList:
		if x == nil || x.Items == nil {
			v.add(SeverityError, CodeInvalidProgram, off, path.String(), "OptionalTensorList has no items")
			return
		}
		v.tensorItems(ep, path, k, x.Items, true)
	default:
		if isNilValue(x) {
			v.add(SeverityError, CodeInvalidProgram, off, path.String(), "%v value has no %v table", x.KernelType(), x.KernelType())
		}
	}
}

// isNilValue reports whether x has no table (a typed nil), or is a
// DoubleList or BoolList without items.
func isNilValue(x Value) bool {
	switch y := x.(type) {
	case *DoubleList:
		return y == nil || y.Items == nil
	case *BoolList:
		return y == nil || y.Items == nil
	}
	return isNilPointer(x)
}

// tensorItems checks list items: indices of earlier Tensor values (-1 = None
// when optional).
func (v *validator) tensorItems(ep *ExecutionPlan, path *fieldPath, self int, items []int32, optional bool) {
	bad := v.elems(SeverityError, CodeInvalidProgram, v.dec.posOf(ep.Values[self]), ".items")
	for j, it := range items {
		if optional && it == -1 {
			continue
		}
		switch {
		case !valueIs(ep, int64(it), isTensor):
			bad.add(path, j, "item %d is not the index of a Tensor value", it)
		case int(it) >= self:
			bad.add(path, j, "item %d does not precede the list (value %d); the runtime reads it before it exists", it, self)
		}
	}
	bad.done(path)
}

// tensor checks a Tensor as tensor_parser does, and its data source.
func (v *validator) tensor(ep *ExecutionPlan, path *fieldPath, t *Tensor) {
	off := v.dec.posOf(t)
	if !validScalarType(t.ScalarType) {
		v.add(SeverityError, CodeInvalidProgram, off, path.String()+".scalar_type", "invalid scalar type %d", int8(t.ScalarType))
	}
	if t.StorageOffset != 0 {
		v.add(SeverityError, CodeNotSupported, off, path.String()+".storage_offset", "storage_offset %d is not supported (must be 0)", t.StorageOffset)
	}
	switch t.ShapeDynamism {
	case TensorShapeDynamismSTATIC, TensorShapeDynamismDYNAMIC_BOUND:
	case TensorShapeDynamismDYNAMIC_UNBOUND:
		v.add(SeverityError, CodeNotSupported, off, path.String()+".shape_dynamism", "DYNAMIC_UNBOUND tensors are not supported")
	default:
		v.add(SeverityWarning, CodeOk, off, path.String()+".shape_dynamism", "unknown shape dynamism %d", t.ShapeDynamism)
	}
	if !v.tensorShape(off, path, t) {
		return
	}
	_, nbytes, sized := tensorBytes(t)
	if e := t.ExtraTensorInfo; e != nil && e.Location == TensorDataLocationEXTERNAL {
		// The runtime refuses a null name; "" is a key like any other.
		if isAbsent(e.Absent, "fully_qualified_name", e.FullyQualifiedName) {
			v.add(SeverityError, CodeInvalidExternal, off, path.String()+".extra_tensor_info.fully_qualified_name", "EXTERNAL tensor has no fully_qualified_name")
		} else {
			v.externalData(off, path, t, e.FullyQualifiedName)
		}
		return
	}
	if a := t.AllocationInfo; a != nil {
		// A missing non_const_buffer_sizes is reported once for the method.
		if ep.NonConstBufferSizes != nil {
			v.arena(ep, path, a, nbytes, sized)
		}
		if a.MemoryOffsetHigh != 0 {
			v.add(SeverityWarning, CodeNotSupported, v.dec.posOf(a), path.String()+".allocation_info.memory_offset_high", "arena offset above 4 GiB cannot be used on 32-bit targets")
		}
		if t.DataBufferIdx > 0 {
			v.mutableInit(path, t, nbytes, sized)
		}
		return
	}
	if t.DataBufferIdx != 0 {
		v.constantData(off, path, t, nbytes, sized)
	}
}

// externalData notes that tensor t's data is in a data file (.ptd) under
// key: the method loads only with a data map that provides it, which the
// program alone cannot tell, so it is a warning; its code is the error
// ExecuTorch returns without one (pte-format.md, ptd-format.md): InvalidState
// for a constant (Method::parse_external_constants finds no data map),
// InvalidExternalData for a memory-planned tensor ("no external .ptd file
// was provided"). With data files, the resolution's findings replace it.
func (v *validator) externalData(off int64, path *fieldPath, t *Tensor, key string) {
	code, what := CodeInvalidState, "constant"
	if t.AllocationInfo != nil {
		code, what = CodeInvalidExternal, "memory-planned tensor"
	}
	v.add(SeverityWarning, code, off, path.String()+".extra_tensor_info",
		"%s data %s is external: the method loads only with a .ptd data map that provides it", what, quote.String(key))
}

// tensorShape checks a tensor's sizes and dim_order; false means it has no
// sizes and nothing more about it can be checked.
func (v *validator) tensorShape(off int64, path *fieldPath, t *Tensor) bool {
	if t.Sizes == nil {
		v.add(SeverityError, CodeInvalidProgram, off, path.String()+".sizes", "tensor has no sizes")
		return false
	}
	if t.DimOrder == nil {
		v.add(SeverityError, CodeInvalidProgram, off, path.String()+".dim_order", "tensor has no dim_order")
	}
	rank := len(t.Sizes)
	if rank > maxTensorRank {
		v.add(SeverityError, CodeInvalidProgram, off, path.String()+".sizes", "rank %d exceeds the runtime limit %d", rank, maxTensorRank)
	}
	bad := v.elems(SeverityError, CodeInvalidProgram, off, ".sizes")
	for d, s := range t.Sizes {
		if s < 0 {
			bad.add(path, d, "negative size %d", s)
		}
	}
	bad.done(path)
	if t.DimOrder != nil {
		if len(t.DimOrder) != rank {
			v.add(SeverityError, CodeInvalidProgram, off, path.String()+".dim_order", "dim_order has %d entries for rank %d", len(t.DimOrder), rank)
		} else {
			seen := make([]bool, rank)
			for _, d := range t.DimOrder {
				if int(d) >= rank || seen[d] {
					v.add(SeverityError, CodeInternal, off, path.String()+".dim_order", "dim_order %v is not a permutation of 0..%d", t.DimOrder, rank-1)
					break
				}
				seen[d] = true
			}
		}
	}
	return true
}

// constantData checks that a constant tensor's data_buffer_idx names data
// holding its nbytes (known when sized): in the constant segment when the
// program has one, else in the deprecated constant_buffer.
func (v *validator) constantData(off int64, path *fieldPath, t *Tensor, nbytes uint64, sized bool) {
	p := v.f.Program
	idx := uint64(t.DataBufferIdx)
	if cs := p.ConstantSegment; cs != nil && len(cs.Offsets) > 1 {
		if idx >= uint64(len(cs.Offsets)) {
			v.add(SeverityError, CodeInvalidArgument, off, path.String()+".data_buffer_idx", "constant index %d out of range (%d constant offsets)", idx, len(cs.Offsets))
			return
		}
		if uint64(cs.SegmentIndex) < uint64(len(p.Segments)) && sized {
			o, size := cs.Offsets[idx], p.Segments[cs.SegmentIndex].Size
			if o > size || nbytes > size-o {
				v.add(SeverityError, CodeInvalidArgument, off, path.String()+".data_buffer_idx",
					"constant bytes [%d, %d+%d) exceed the %d-byte constant segment", o, o, nbytes, size)
			}
		}
		return
	}
	if idx >= uint64(len(p.ConstantBuffer)) {
		v.add(SeverityError, CodeInvalidArgument, off, path.String()+".data_buffer_idx", "constant index %d out of range (%d constant buffers)", idx, len(p.ConstantBuffer))
		return
	}
	// Program::get_constant_buffer_data requires nbytes <= storage size; the
	// storage may be longer (padding).
	if sized && uint64(len(p.ConstantBuffer[idx].Storage)) < nbytes {
		v.add(SeverityError, CodeInvalidArgument, off, path.String()+".data_buffer_idx", "constant buffer holds %d bytes, fewer than the tensor's %d", len(p.ConstantBuffer[idx].Storage), nbytes)
	}
}

// mutableInit checks the initial value of a planned tensor, which comes
// from mutable_data_segments[0] whatever mutable_data_segments_idx says.
func (v *validator) mutableInit(path *fieldPath, t *Tensor, nbytes uint64, sized bool) {
	f, p := v.f, v.f.Program
	off := v.dec.posOf(t)
	if len(p.MutableDataSegments) == 0 {
		v.add(SeverityError, CodeNotFound, off, path.String()+".data_buffer_idx", "planned tensor has initial data index %d but the program has no mutable_data_segments", t.DataBufferIdx)
		return
	}
	if f.Header == nil || f.Header.SegmentBaseOffset == 0 {
		v.add(SeverityError, CodeNotFound, off, path.String()+".data_buffer_idx", "mutable data needs an extended header; the file has none")
		return
	}
	m := p.MutableDataSegments[0]
	if uint64(t.DataBufferIdx) >= uint64(len(m.Offsets)) {
		v.add(SeverityError, CodeNotFound, off, path.String()+".data_buffer_idx", "mutable data index %d out of range (%d offsets)", t.DataBufferIdx, len(m.Offsets))
		return
	}
	if uint64(m.SegmentIndex) >= uint64(len(p.Segments)) || !sized {
		return
	}
	o, size := m.Offsets[t.DataBufferIdx], p.Segments[m.SegmentIndex].Size
	if o > size || nbytes > size-o {
		v.add(SeverityError, CodeInvalidArgument, off, path.String()+".data_buffer_idx", "mutable data bytes [%d, %d+%d) exceed the %d-byte segment", o, o, nbytes, size)
	}
}

// delegates checks each BackendDelegate and that its payload is reachable.
func (v *validator) delegates(plan int, ep *ExecutionPlan, path *fieldPath) {
	f := v.f
	if ep.Delegates == nil {
		v.add(SeverityError, CodeInvalidProgram, v.dec.posOf(ep), path.String()+".delegates", "method has no delegates table")
		return
	}
	for k, d := range ep.Delegates {
		dpath := &fieldPath{up: path, name: ".delegates", index: k}
		if isAbsent(d.Absent, "id", d.ID) {
			v.add(SeverityError, CodeInvalidProgram, v.dec.posOf(d), dpath.String()+".id", "delegate has no backend id")
		}
		v.text(v.dec.posOf(d), dpath, ".id", "backend id", d.ID)
		for j, cs := range d.CompileSpecs {
			cpath := &fieldPath{up: dpath, name: ".compile_specs", index: j}
			if isAbsent(cs.Absent, "key", cs.Key) {
				v.add(SeverityError, CodeInvalidProgram, v.dec.posOf(cs), cpath.String()+".key", "compile spec has no key")
			}
			v.text(v.dec.posOf(cs), cpath, ".key", "compile spec key", cs.Key)
			if cs.Value == nil {
				v.add(SeverityError, CodeInvalidProgram, v.dec.posOf(cs), cpath.String()+".value", "compile spec has no value")
			}
		}
		if _, err := f.delegateRef(plan, k); err != nil {
			if fe, ok := errors.AsType[*FormatError](err); ok && !strings.HasPrefix(fe.Path, dpath.String()) {
				// Say which delegate needs the broken segment.
				err = &FormatError{Off: fe.Off, Path: dpath.String() + ".processed",
					Msg: fmt.Sprintf("payload unreadable: %s: %s", fe.Path, fe.Msg), Code: fe.Code}
			}
			v.addErr(SeverityError, err)
		}
	}
}

// chains checks chains and instructions.
func (v *validator) chains(ep *ExecutionPlan, path *fieldPath) {
	if len(ep.Chains) == 0 {
		v.add(SeverityError, CodeInvalidProgram, v.dec.posOf(ep), path.String()+".chains", "method has no chains")
		return
	}
	for c, ch := range ep.Chains {
		cpath := &fieldPath{up: path, name: ".chains", index: c}
		if ch.Instructions == nil {
			v.add(SeverityError, CodeInvalidProgram, v.dec.posOf(ch), cpath.String()+".instructions", "chain has no instructions")
			continue
		}
		for k, in := range ch.Instructions {
			ipath := &fieldPath{up: cpath, name: ".instructions", index: k, tail: ".instr_args"}
			v.instruction(ep, ch, in, path, ipath)
		}
	}
}

// instruction checks the arguments of one instruction of chain ch against
// the tables of its method ep (at path); ipath is the instruction's.
func (v *validator) instruction(ep *ExecutionPlan, ch *Chain, in *Instruction, path, ipath *fieldPath) {
	off := v.dec.posOf(in)
	n := int64(len(ep.Values))
	inRange := func(x int32) bool { return x >= 0 && int64(x) < n }
	if _, unknown := in.Args.(*UnknownInstruction); !unknown && isNilPointer(in.Args) {
		v.add(SeverityError, CodeInvalidProgram, off, ipath.String(), "%v has no table", in.Args.InstructionType())
		return
	}
	switch x := in.Args.(type) {
	case nil:
		v.add(SeverityError, CodeInvalidProgram, off, ipath.String(), "instruction has union tag NONE")
	case *UnknownInstruction:
		v.add(SeverityError, CodeInvalidProgram, off, ipath.String(), "unknown InstructionArguments union tag %d", uint8(x.Tag))
	case *KernelCall:
		if ep.Operators == nil {
			v.add(SeverityError, CodeInvalidProgram, off, path.String()+".operators", "method has a KernelCall but no operators table")
		} else if x.OpIndex < 0 || int(x.OpIndex) >= len(ep.Operators) {
			v.add(SeverityError, CodeInvalidProgram, off, ipath.String()+".op_index", "operator index %d out of range (%d operators)", x.OpIndex, len(ep.Operators))
		}
		v.instructionArgs(x.Args, n, off, ipath)
	case *DelegateCall:
		if x.DelegateIndex < 0 || int(x.DelegateIndex) >= len(ep.Delegates) {
			v.add(SeverityError, CodeInternal, off, ipath.String()+".delegate_index",
				"delegate index %d out of range (%d delegates); ExecuTorch loads the method and fails only when the call executes", x.DelegateIndex, len(ep.Delegates))
		}
		v.instructionArgs(x.Args, n, off, ipath)
	case *MoveCall:
		if !inRange(x.MoveFrom) || !inRange(x.MoveTo) {
			v.add(SeverityError, CodeInvalidProgram, off, ipath.String(), "move %d -> %d out of range (%d values)", x.MoveFrom, x.MoveTo, n)
		}
	case *JumpFalseCall:
		if !inRange(x.CondValueIndex) {
			v.add(SeverityError, CodeInvalidProgram, off, ipath.String()+".cond_value_index", "value index %d out of range (%d values)", x.CondValueIndex, n)
		}
		if x.DestinationInstruction < 0 || int(x.DestinationInstruction) >= len(ch.Instructions) {
			v.add(SeverityWarning, CodeOk, off, ipath.String()+".destination_instruction", "jump destination %d is outside the chain (%d instructions)", x.DestinationInstruction, len(ch.Instructions))
		}
	case *FreeCall:
		if !valueIs(ep, int64(x.ValueIndex), isTensor) {
			v.add(SeverityError, CodeInvalidProgram, off, ipath.String()+".value_index", "value %d is not a Tensor", x.ValueIndex)
		}
	}
}

// instructionArgs checks that a call's argument list is present and that
// each argument names one of the method's n values.
func (v *validator) instructionArgs(a []int32, n, off int64, ipath *fieldPath) {
	if a == nil {
		v.add(SeverityError, CodeInvalidProgram, off, ipath.String()+".args", "instruction has no args")
	}
	v.valueIndices(off, ipath, ".args", a, int(n), "", "")
}

// valueIndices reports each element of xs, the vector at path+field, that
// is not the index of one of n values; what and tail frame the message.
func (v *validator) valueIndices(off int64, path *fieldPath, field string, xs []int32, n int, what, tail string) {
	bad := v.elems(SeverityError, CodeInvalidProgram, off, field)
	for k, x := range xs {
		if x < 0 || int(x) >= n {
			bad.add(path, k, what+"value index %d out of range (%d values)"+tail, x, n)
		}
	}
	bad.done(path)
}

// arena checks that a planned tensor (at path) fits its arena.
func (v *validator) arena(ep *ExecutionPlan, path *fieldPath, a *AllocationDetails, nbytes uint64, sized bool) {
	off := v.dec.posOf(a)
	if a.MemoryID == 0 || uint64(a.MemoryID) >= uint64(len(ep.NonConstBufferSizes)) {
		v.add(SeverityError, CodeInvalidArgument, off, path.String()+".allocation_info.memory_id",
			"memory_id %d is not a planned arena (1..%d)", a.MemoryID, len(ep.NonConstBufferSizes)-1)
		return
	}
	arena := ep.NonConstBufferSizes[a.MemoryID]
	if sized && arena >= 0 && (a.Offset() > uint64(arena) || nbytes > uint64(arena)-a.Offset()) {
		v.add(SeverityError, CodeInvalidArgument, off, path.String()+".allocation_info",
			"tensor bytes [%d, %d+%d) exceed arena %d of %d bytes", a.Offset(), a.Offset(), nbytes, a.MemoryID, arena)
	}
}
