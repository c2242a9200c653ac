package pte

import (
	"slices"
)

// The model below mirrors schema/program.fbs field for field, in schema
// order, so that a Program decoded from a file and written back loses
// nothing; a field's schema name is its Go name in snake_case, or its fbs
// tag's (see SchemaField).
//
// Presence conventions (they matter to ExecuTorch's loader, see the package
// documentation):
//   - a nil slice is an absent vector, a non-nil empty slice is a present
//     empty vector; this holds for []byte too;
//   - a nil pointer is an absent table;
//   - strings are plain Go strings. An absent string reads as "" and the
//     table's Absent field lists its schema name, so that it is written
//     absent again (unless it is given a non-empty value); a present empty
//     string is "" and not listed. Only the tables with string fields have
//     Absent (ExecutionPlan, ContainerMetadata, String, ExtraTensorInfo,
//     Operator, Frame, BackendDelegate, CompileSpec, NamedData), and it is
//     nil in the usual case. ExecuTorch requires some strings to exist (a method's name, a
//     delegate's id, a compile spec's key, an EXTERNAL tensor's
//     fully_qualified_name); Verify reports the absent ones;
//   - absent scalars read as their schema default (always 0).

// Program is the root table of a .pte file. Its execution plans (methods)
// are read through NumPlans, Plan and Plans, and set with SetPlans.
type Program struct {
	// Version is the schema version the writer recorded; the runtime does not
	// read it (0 in every known file).
	Version uint32
	// executionPlan lists the methods, e.g. "forward"; ExecuTorch looks them
	// up by Name. Unexported so that every Program answers alike: one read
	// with OpenOptions.LazyPlans decodes them from file when asked.
	executionPlan []*ExecutionPlan
	// ConstantBuffer is the deprecated inline constant data, indexed by
	// Tensor.DataBufferIdx when ConstantSegment has at most one offset. Entry 0
	// is an empty placeholder.
	ConstantBuffer []*Buffer
	// BackendDelegateData holds delegate payloads stored inside the flatbuffer,
	// indexed by BackendDelegateDataReference.Index when its Location is INLINE.
	BackendDelegateData []*BackendDelegateInlineData
	// Segments lists the data segments after the flatbuffer region.
	// ConstantSegment, MutableDataSegments, NamedData and SEGMENT delegate
	// references index it (0-based).
	Segments []*DataSegment
	// ConstantSegment locates the constant tensor data: Tensor.DataBufferIdx
	// indexes its Offsets. When it has more than one offset it replaces
	// ConstantBuffer.
	ConstantSegment *SubsegmentOffsets
	// MutableDataSegments holds the initial values of planned (mutable) tensors.
	// The runtime uses only entry 0; a planned Tensor.DataBufferIdx indexes its
	// Offsets.
	MutableDataSegments []*SubsegmentOffsets
	// NamedData maps keys to segments, for backends that look their data up by
	// name.
	NamedData []*NamedData

	// file is the File whose region holds the undecoded plans, nil when
	// executionPlan holds them (see plans.go).
	file *File `fbs:"-"`
}

// ExecutionPlan is one method of a program.
type ExecutionPlan struct {
	// Name is the method name, unique in the program and free of NUL bytes.
	Name string
	// ContainerMetaType holds the pytree specs of the inputs and outputs; the
	// runtime does not need it.
	ContainerMetaType *ContainerMetadata
	// Values is the value table; every other index in the method (inputs,
	// outputs, instruction arguments, list items) points into it, 0-based.
	Values []*EValue
	// Inputs lists the method inputs as indices into Values, in call order.
	Inputs []int32
	// Outputs lists the method outputs as indices into Values, in return order.
	Outputs []int32
	// Chains lists the instruction sequences; real programs have exactly one.
	Chains []*Chain
	// Operators lists the kernels KernelCall.OpIndex refers to (0-based).
	Operators []*Operator
	// Delegates lists the lowered subgraphs DelegateCall.DelegateIndex refers to
	// (0-based). It must be present, even if empty.
	Delegates []*BackendDelegate
	// NonConstBufferSizes gives the size in bytes of each planned-memory arena.
	// Entry 0 is reserved (0); AllocationDetails.MemoryID 1 is entry 1.
	NonConstBufferSizes []int64
	// NonConstBufferDevice places arenas on devices other than the CPU; nil
	// means every arena is on the CPU.
	NonConstBufferDevice []*NonConstBufferDevice
	// Absent lists the string fields absent in the file (see the presence conventions).
	Absent []string
}

// ContainerMetadata holds the pytree specs of a method's inputs and outputs,
// kept verbatim: ExecuTorch's compact form ("T2#1#0(...)"), torch's JSON
// form, or "". ptekit carries them as text and does not parse them.
type ContainerMetadata struct {
	// EncodedInpStr is the input pytree spec, in either serialized form or "".
	EncodedInpStr string
	// EncodedOutStr is the output pytree spec, in either serialized form or "".
	EncodedOutStr string
	// Absent lists the string fields absent in the file (see the presence conventions).
	Absent []string
}

// EValue is one entry of a method's value table. Val is nil when the union
// tag is NONE; an unknown tag is kept as *UnknownValue.
type EValue struct {
	// Val is the payload; nil for the NONE tag.
	Val Value
}

// Value is the payload of an EValue: one of *Null, *Int, *Bool, *Double,
// *Tensor, *String, *IntList, *DoubleList, *BoolList, *TensorList,
// *OptionalTensorList or *UnknownValue.
type Value interface {
	// KernelType returns the union tag stored for this value.
	KernelType() KernelTypes
}

// Null is the None value.
type Null struct{}

// Int is a 64-bit integer value.
type Int struct {
	// IntVal is the value.
	IntVal int64
}

// Bool is a boolean value.
type Bool struct {
	// BoolVal is the value.
	BoolVal bool
}

// Double is a float64 value.
type Double struct {
	// DoubleVal is the value; NaN and infinities are allowed.
	DoubleVal float64
}

// String is a string value.
type String struct {
	// StringVal is the value.
	StringVal string
	// Absent lists the string fields absent in the file (see the presence conventions).
	Absent []string
}

// IntList holds value indices of Int values (not the integers themselves).
type IntList struct {
	// Items are indices into ExecutionPlan.Values, each of an Int value.
	Items []int64
}

// DoubleList holds float64 literals.
type DoubleList struct {
	// Items are the values.
	Items []float64
}

// BoolList holds boolean literals.
type BoolList struct {
	// Items are the values.
	Items []bool
}

// TensorList holds value indices of Tensor values that precede it.
type TensorList struct {
	// Items are indices into ExecutionPlan.Values, each of a Tensor value that
	// precedes the list.
	Items []int32
}

// OptionalTensorList is like TensorList; -1 stands for None.
type OptionalTensorList struct {
	// Items are indices into ExecutionPlan.Values of preceding Tensor values, or
	// -1 for None.
	Items []int32
}

// UnknownValue is a union member whose tag this schema does not know. It is
// kept so that tools can report it, and Write writes it back as the tag
// with no member table. The member table's contents are not kept: its
// layout is unknown, so neither the verifier nor the decoder looks inside
// it. ExecuTorch refuses such a value either way, and Verify reports it.
type UnknownValue struct {
	// Tag is the union tag found in the file.
	Tag KernelTypes
}

// Tensor describes a tensor value: its type, shape and where its data lives.
type Tensor struct {
	// ScalarType is the element type; it gives the element size.
	ScalarType ScalarType
	// StorageOffset must be 0: the runtime does not support views.
	StorageOffset int32
	// Sizes is the shape, outermost dimension first (the upper bound for
	// DYNAMIC_BOUND tensors). Rank 0 is a scalar.
	Sizes []int32
	// DimOrder is the memory order of the dimensions, outermost first, as
	// indices into Sizes: [0 1 2 3] is contiguous, [0 2 3 1] channels-last.
	DimOrder []uint8 `fbs:",numbers"`
	// RequiresGrad is recorded for training programs; the runtime does not read
	// it.
	RequiresGrad bool
	// DataBufferIdx locates initial data: for a constant tensor (AllocationInfo
	// nil), an index into Program.ConstantSegment.Offsets (or
	// Program.ConstantBuffer); for a planned tensor, an index into
	// Program.MutableDataSegments[0].Offsets. 0 means no data.
	DataBufferIdx uint32
	// AllocationInfo places the tensor in planned memory; nil for constants and
	// for tensors whose memory is supplied at run time.
	AllocationInfo *AllocationDetails
	// Layout is the torch layout code (0 strided); the runtime does not read it.
	Layout int8
	// ShapeDynamism says whether Sizes are fixed or an upper bound.
	ShapeDynamism TensorShapeDynamism
	// ExtraTensorInfo is nil for most tensors.
	ExtraTensorInfo *ExtraTensorInfo
}

// AllocationDetails places a planned tensor in arena MemoryID (1-based index
// into ExecutionPlan.NonConstBufferSizes) at the offset High<<32 | Low.
type AllocationDetails struct {
	// MemoryID is the arena, a 1-based index into
	// ExecutionPlan.NonConstBufferSizes (0 is invalid).
	MemoryID uint32
	// MemoryOffsetLow is the low 32 bits of the byte offset in the arena.
	MemoryOffsetLow uint32
	// MemoryOffsetHigh is the high 32 bits of the byte offset; non-zero values
	// do not work on 32-bit targets.
	MemoryOffsetHigh uint32
}

// Offset returns the 64-bit arena offset.
func (a *AllocationDetails) Offset() uint64 {
	return uint64(a.MemoryOffsetHigh)<<32 | uint64(a.MemoryOffsetLow)
}

// ExtraTensorInfo holds rarely used tensor attributes.
type ExtraTensorInfo struct {
	// MutableDataSegmentsIdx names an entry of Program.MutableDataSegments; the
	// runtime ignores it and always uses entry 0.
	MutableDataSegmentsIdx uint64
	// FullyQualifiedName is the key of the tensor's data in an external data map
	// (.ptd) when Location is EXTERNAL.
	FullyQualifiedName string
	// Location says whether the data is in this file (SEGMENT) or in an external
	// data map (EXTERNAL).
	Location TensorDataLocation
	// DeviceType is the device the tensor lives on (CPU when the table is
	// absent).
	DeviceType DeviceType
	// DeviceIndex selects one of several devices of DeviceType.
	DeviceIndex int8
	// Absent lists the string fields absent in the file (see the presence conventions).
	Absent []string
}

// Operator names a kernel: Name plus ("." + Overload) when Overload != "".
type Operator struct {
	// Name is the operator name, e.g. "aten::add".
	Name string
	// Overload is the overload name, e.g. "out", or "" for none.
	Overload string
	// Absent lists the string fields absent in the file (see the presence conventions).
	Absent []string
}

// Chain is a list of instructions run in order.
type Chain struct {
	// Inputs is unused by the runtime (empty in real programs).
	Inputs []int32
	// Outputs is unused by the runtime (empty in real programs).
	Outputs []int32
	// Instructions run in order; JumpFalseCall destinations index this list.
	Instructions []*Instruction
	// Stacktrace, when present, has one FrameList per instruction (same index);
	// the runtime does not read it.
	Stacktrace []*FrameList
}

// Instruction is one step of a chain. Args is nil when the union tag is NONE;
// an unknown tag is kept as *UnknownInstruction.
type Instruction struct {
	// Args is the payload; nil for the NONE tag. (The schema's instr_args:
	// InstrArgs would repeat the "Instr" of the type that holds it.)
	Args InstructionArgs `fbs:"instr_args"`
}

// InstructionArgs is the payload of an Instruction: one of *KernelCall,
// *DelegateCall, *MoveCall, *JumpFalseCall, *FreeCall or *UnknownInstruction.
type InstructionArgs interface {
	// InstructionType returns the union tag stored for these arguments.
	InstructionType() InstructionArguments
}

// KernelCall runs Operators[OpIndex] on the listed value indices.
type KernelCall struct {
	// OpIndex is an index into ExecutionPlan.Operators.
	OpIndex int32
	// Args are indices into ExecutionPlan.Values: the schema arguments in order,
	// including out arguments, then the returned values.
	Args []int32
}

// DelegateCall runs Delegates[DelegateIndex] on the listed value indices: the
// delegate's inputs in order, then its outputs in order.
type DelegateCall struct {
	// DelegateIndex is an index into ExecutionPlan.Delegates.
	DelegateIndex int32
	// Args are indices into ExecutionPlan.Values: the delegate inputs, then its
	// outputs.
	Args []int32
}

// MoveCall copies value MoveFrom into value MoveTo.
type MoveCall struct {
	// MoveFrom is the source, an index into ExecutionPlan.Values.
	MoveFrom int32
	// MoveTo is the destination, an index into ExecutionPlan.Values.
	MoveTo int32
}

// JumpFalseCall jumps to DestinationInstruction when the value is false.
type JumpFalseCall struct {
	// CondValueIndex is the condition (a Bool or a bool tensor), an index into
	// ExecutionPlan.Values.
	CondValueIndex int32
	// DestinationInstruction is an index into the chain's Instructions.
	DestinationInstruction int32
}

// FreeCall releases the storage of a tensor value.
type FreeCall struct {
	// ValueIndex is the tensor to release, an index into ExecutionPlan.Values.
	ValueIndex int32
}

// UnknownInstruction is an instruction whose union tag this schema does not
// know. Like UnknownValue, it is written back as the tag alone: the member
// table's contents are not kept.
type UnknownInstruction struct {
	// Tag is the union tag found in the file.
	Tag InstructionArguments
}

// Frame is one source location of a stack trace.
type Frame struct {
	// Filename is the source file.
	Filename string
	// Lineno is the 1-based line number in Filename.
	Lineno int32
	// Name is the function name.
	Name string
	// Context is the source line.
	Context string
	// Absent lists the string fields absent in the file (see the presence conventions).
	Absent []string
}

// FrameList is the stack trace of one instruction.
type FrameList struct {
	// Items are the frames, outermost call first.
	Items []*Frame
}

// BackendDelegate is a part of a method lowered to a backend.
type BackendDelegate struct {
	// ID is the backend name, e.g. "TensorRTBackend".
	ID string
	// Processed locates the payload the backend compiled ahead of time (for
	// TensorRT, the engine blob).
	Processed *BackendDelegateDataReference
	// CompileSpecs are handed to the backend at init; nil and empty are both
	// allowed.
	CompileSpecs []*CompileSpec
	// Absent lists the string fields absent in the file (see the presence conventions).
	Absent []string
}

// BackendDelegateDataReference points at a delegate's payload: an index into
// Program.BackendDelegateData (INLINE) or Program.Segments (SEGMENT).
type BackendDelegateDataReference struct {
	// Location says which list Index points into.
	Location DataLocation
	// Index is 0-based into Program.BackendDelegateData (INLINE) or
	// Program.Segments (SEGMENT).
	Index uint32
}

// CompileSpec is a key and opaque value bytes handed to a backend at init.
// Package compilespec knows the well-known keys.
type CompileSpec struct {
	// Key names the option, e.g. "weight_streaming_budget".
	Key string
	// Value holds the option's bytes, whose encoding the backend defines.
	Value []byte
	// Absent lists the string fields absent in the file (see the presence conventions).
	Absent []string
}

// NonConstBufferDevice places planned arena BufferIdx on a device.
type NonConstBufferDevice struct {
	// BufferIdx is the arena, a 1-based index into
	// ExecutionPlan.NonConstBufferSizes.
	BufferIdx int32
	// DeviceType is the device the arena lives on.
	DeviceType DeviceType
	// DeviceIndex selects one of several devices of DeviceType.
	DeviceIndex int8
}

// Buffer is deprecated inline constant data.
type Buffer struct {
	// Storage holds the constant bytes; it may be longer than the tensor
	// (padding).
	Storage []byte
}

// BackendDelegateInlineData is delegate data stored inside the flatbuffer.
type BackendDelegateInlineData struct {
	// Data holds the delegate payload.
	Data []byte
}

// DataSegment is a byte range after the flatbuffer. Offset is relative to the
// extended header's segment base offset; Size excludes padding.
type DataSegment struct {
	// Offset is the segment start in bytes, relative to
	// ExtendedHeader.SegmentBaseOffset.
	Offset uint64
	// Size is the segment length in bytes, without alignment padding.
	Size uint64
}

// SubsegmentOffsets lists byte offsets of items inside segment SegmentIndex.
// Offsets[0] is a placeholder for "no data".
type SubsegmentOffsets struct {
	// SegmentIndex is an index into Program.Segments.
	SegmentIndex uint32
	// Offsets are byte offsets of the items from the start of the segment; an
	// item runs to the next larger offset or to the segment end. Offsets[0] is a
	// placeholder (0).
	Offsets []uint64
}

// NamedData names a blob stored in segment SegmentIndex.
type NamedData struct {
	// Key is the name backends look the data up by; lookups take the first
	// match.
	Key string
	// SegmentIndex is an index into Program.Segments.
	SegmentIndex uint32
	// Absent lists the string fields absent in the file (see the presence conventions).
	Absent []string
}

// isAbsent reports whether the string field named field (schema name) with
// value is absent: listed in the table's Absent field and still empty.
func isAbsent(absent []string, field, value string) bool {
	return value == "" && slices.Contains(absent, field)
}
