package pte

import (
	"slices"

	"github.com/ptekit/ptekit/schema"
)

// The model below mirrors schema/program.fbs field for field, so that a
// Program decoded from a file and written back loses nothing.
//
// Presence conventions (they matter to ExecuTorch's loader, see the package
// documentation):
//   - a nil slice is an absent vector, a non-nil empty slice is a present
//     empty vector; this holds for []byte too;
//   - a nil pointer is an absent table;
//   - strings are plain Go strings. An absent string reads as "" and the
//     table's Absent field lists its schema name, so that it is written
//     absent again; a present empty string is "" and not listed. Only the
//     tables with string fields have Absent (ExecutionPlan,
//     ContainerMetadata, String, ExtraTensorInfo, Operator, Frame,
//     BackendDelegate, CompileSpec, NamedData), and it is nil in the usual
//     case. ExecuTorch requires some strings to exist (a method's name, a
//     delegate's id, a compile spec's key, an EXTERNAL tensor's
//     fully_qualified_name); Verify reports the absent ones;
//   - absent scalars read as their schema default (always 0).

// Enum types are those of the generated schema package; their String methods
// return the schema's names (e.g. "FLOAT", "DYNAMIC_BOUND", "SEGMENT").
type (
	// ScalarType is a tensor element type.
	ScalarType = schema.ScalarType
	// TensorShapeDynamism says whether a tensor's shape may change at run time.
	TensorShapeDynamism = schema.TensorShapeDynamism
	// TensorDataLocation says whether tensor data is in this file or external.
	TensorDataLocation = schema.TensorDataLocation
	// DeviceType is the kind of memory a tensor or arena lives in.
	DeviceType = schema.DeviceType
	// DataLocation says where delegate data is: INLINE or SEGMENT.
	DataLocation = schema.DataLocation
	// KernelTypes is the union tag of an EValue.
	KernelTypes = schema.KernelTypes
	// InstructionArguments is the union tag of an Instruction.
	InstructionArguments = schema.InstructionArguments
)

// Program is the root table of a .pte file.
type Program struct {
	Version             uint32
	ExecutionPlan       []*ExecutionPlan
	ConstantBuffer      []*Buffer
	BackendDelegateData []*BackendDelegateInlineData
	Segments            []*DataSegment
	ConstantSegment     *SubsegmentOffsets
	MutableDataSegments []*SubsegmentOffsets
	NamedData           []*NamedData
}

// ExecutionPlan is one method of a program.
type ExecutionPlan struct {
	Name                 string
	ContainerMetaType    *ContainerMetadata
	Values               []*EValue
	Inputs               []int32
	Outputs              []int32
	Chains               []*Chain
	Operators            []*Operator
	Delegates            []*BackendDelegate
	NonConstBufferSizes  []int64
	NonConstBufferDevice []*NonConstBufferDevice
	// Absent names the string fields of this table that were absent in the
	// file, by schema name (e.g. "name"); they read as "" and are written
	// absent again. Nil in the usual case. A listed field that is given a
	// non-empty value is written present.
	Absent []string
}

// ContainerMetadata holds the pytree specs of a method's inputs and outputs,
// kept verbatim (see ParseContainerSpec).
type ContainerMetadata struct {
	EncodedInpStr string
	EncodedOutStr string
	// Absent names the string fields of this table that were absent in the
	// file, by schema name (e.g. "name"); they read as "" and are written
	// absent again. Nil in the usual case. A listed field that is given a
	// non-empty value is written present.
	Absent []string
}

// EValue is one entry of a method's value table. Val is nil when the union
// tag is NONE; an unknown tag is kept as *UnknownValue.
type EValue struct {
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
type Int struct{ IntVal int64 }

// Bool is a boolean value.
type Bool struct{ BoolVal bool }

// Double is a float64 value.
type Double struct{ DoubleVal float64 }

// String is a string value.
type String struct {
	StringVal string
	// Absent names the string fields of this table that were absent in the
	// file, by schema name (e.g. "name"); they read as "" and are written
	// absent again. Nil in the usual case. A listed field that is given a
	// non-empty value is written present.
	Absent []string
}

// IntList holds value indices of Int values (not the integers themselves).
type IntList struct{ Items []int64 }

// DoubleList holds float64 literals.
type DoubleList struct{ Items []float64 }

// BoolList holds boolean literals.
type BoolList struct{ Items []bool }

// TensorList holds value indices of Tensor values that precede it.
type TensorList struct{ Items []int32 }

// OptionalTensorList is like TensorList; -1 stands for None.
type OptionalTensorList struct{ Items []int32 }

// UnknownValue is a union member whose tag this schema does not know. It is
// kept so that tools can report it; it cannot be written.
type UnknownValue struct{ Tag KernelTypes }

// KernelType implements Value.
func (*Null) KernelType() KernelTypes { return schema.KernelTypesNull }

// KernelType implements Value.
func (*Int) KernelType() KernelTypes { return schema.KernelTypesInt }

// KernelType implements Value.
func (*Bool) KernelType() KernelTypes { return schema.KernelTypesBool }

// KernelType implements Value.
func (*Double) KernelType() KernelTypes { return schema.KernelTypesDouble }

// KernelType implements Value.
func (*Tensor) KernelType() KernelTypes { return schema.KernelTypesTensor }

// KernelType implements Value.
func (*String) KernelType() KernelTypes { return schema.KernelTypesString }

// KernelType implements Value.
func (*IntList) KernelType() KernelTypes { return schema.KernelTypesIntList }

// KernelType implements Value.
func (*DoubleList) KernelType() KernelTypes { return schema.KernelTypesDoubleList }

// KernelType implements Value.
func (*BoolList) KernelType() KernelTypes { return schema.KernelTypesBoolList }

// KernelType implements Value.
func (*TensorList) KernelType() KernelTypes { return schema.KernelTypesTensorList }

// KernelType implements Value.
func (*OptionalTensorList) KernelType() KernelTypes { return schema.KernelTypesOptionalTensorList }

// KernelType implements Value.
func (u *UnknownValue) KernelType() KernelTypes { return u.Tag }

// Tensor describes a tensor value: its type, shape and where its data lives.
type Tensor struct {
	ScalarType      ScalarType
	StorageOffset   int32
	Sizes           []int32
	DimOrder        []uint8
	RequiresGrad    bool
	DataBufferIdx   uint32
	AllocationInfo  *AllocationDetails
	Layout          int8
	ShapeDynamism   TensorShapeDynamism
	ExtraTensorInfo *ExtraTensorInfo
}

// AllocationDetails places a planned tensor in arena MemoryID (1-based index
// into ExecutionPlan.NonConstBufferSizes) at the offset High<<32 | Low.
type AllocationDetails struct {
	MemoryID         uint32
	MemoryOffsetLow  uint32
	MemoryOffsetHigh uint32
}

// Offset returns the 64-bit arena offset.
func (a *AllocationDetails) Offset() uint64 {
	return uint64(a.MemoryOffsetHigh)<<32 | uint64(a.MemoryOffsetLow)
}

// ExtraTensorInfo holds rarely used tensor attributes.
type ExtraTensorInfo struct {
	MutableDataSegmentsIdx uint64
	FullyQualifiedName     string
	Location               TensorDataLocation
	DeviceType             DeviceType
	DeviceIndex            int8
	// Absent names the string fields of this table that were absent in the
	// file, by schema name (e.g. "name"); they read as "" and are written
	// absent again. Nil in the usual case. A listed field that is given a
	// non-empty value is written present.
	Absent []string
}

// Operator names a kernel: Name plus ("." + Overload) when Overload != "".
type Operator struct {
	Name     string
	Overload string
	// Absent names the string fields of this table that were absent in the
	// file, by schema name (e.g. "name"); they read as "" and are written
	// absent again. Nil in the usual case. A listed field that is given a
	// non-empty value is written present.
	Absent []string
}

// Chain is a list of instructions run in order.
type Chain struct {
	Inputs       []int32
	Outputs      []int32
	Instructions []*Instruction
	Stacktrace   []*FrameList
}

// Instruction is one step of a chain. Args is nil when the union tag is NONE;
// an unknown tag is kept as *UnknownInstruction.
type Instruction struct {
	Args InstructionArgs
}

// InstructionArgs is the payload of an Instruction: one of *KernelCall,
// *DelegateCall, *MoveCall, *JumpFalseCall, *FreeCall or *UnknownInstruction.
type InstructionArgs interface {
	// InstructionType returns the union tag stored for these arguments.
	InstructionType() InstructionArguments
}

// KernelCall runs Operators[OpIndex] on the listed value indices.
type KernelCall struct {
	OpIndex int32
	Args    []int32
}

// DelegateCall runs Delegates[DelegateIndex] on the listed value indices: the
// delegate's inputs in order, then its outputs in order.
type DelegateCall struct {
	DelegateIndex int32
	Args          []int32
}

// MoveCall copies value MoveFrom into value MoveTo.
type MoveCall struct {
	MoveFrom int32
	MoveTo   int32
}

// JumpFalseCall jumps to DestinationInstruction when the value is false.
type JumpFalseCall struct {
	CondValueIndex         int32
	DestinationInstruction int32
}

// FreeCall releases the storage of a tensor value.
type FreeCall struct {
	ValueIndex int32
}

// UnknownInstruction is an instruction whose union tag this schema does not
// know. It is kept so that tools can report it; it cannot be written.
type UnknownInstruction struct{ Tag InstructionArguments }

// InstructionType implements InstructionArgs.
func (*KernelCall) InstructionType() InstructionArguments {
	return schema.InstructionArgumentsKernelCall
}

// InstructionType implements InstructionArgs.
func (*DelegateCall) InstructionType() InstructionArguments {
	return schema.InstructionArgumentsDelegateCall
}

// InstructionType implements InstructionArgs.
func (*MoveCall) InstructionType() InstructionArguments {
	return schema.InstructionArgumentsMoveCall
}

// InstructionType implements InstructionArgs.
func (*JumpFalseCall) InstructionType() InstructionArguments {
	return schema.InstructionArgumentsJumpFalseCall
}

// InstructionType implements InstructionArgs.
func (*FreeCall) InstructionType() InstructionArguments {
	return schema.InstructionArgumentsFreeCall
}

// InstructionType implements InstructionArgs.
func (u *UnknownInstruction) InstructionType() InstructionArguments { return u.Tag }

// Frame is one source location of a stack trace.
type Frame struct {
	Filename string
	Lineno   int32
	Name     string
	Context  string
	// Absent names the string fields of this table that were absent in the
	// file, by schema name (e.g. "name"); they read as "" and are written
	// absent again. Nil in the usual case. A listed field that is given a
	// non-empty value is written present.
	Absent []string
}

// FrameList is the stack trace of one instruction.
type FrameList struct {
	Items []*Frame
}

// BackendDelegate is a part of a method lowered to a backend.
type BackendDelegate struct {
	// ID is the backend name, e.g. "TensorRTBackend".
	ID           string
	Processed    *BackendDelegateDataReference
	CompileSpecs []*CompileSpec
	// Absent names the string fields of this table that were absent in the
	// file, by schema name (e.g. "name"); they read as "" and are written
	// absent again. Nil in the usual case. A listed field that is given a
	// non-empty value is written present.
	Absent []string
}

// BackendDelegateDataReference points at a delegate's payload: an index into
// Program.BackendDelegateData (INLINE) or Program.Segments (SEGMENT).
type BackendDelegateDataReference struct {
	Location DataLocation
	Index    uint32
}

// CompileSpec is a key and opaque value bytes handed to a backend at init.
// Package compilespec knows the well-known keys.
type CompileSpec struct {
	Key   string
	Value []byte
	// Absent names the string fields of this table that were absent in the
	// file, by schema name (e.g. "name"); they read as "" and are written
	// absent again. Nil in the usual case. A listed field that is given a
	// non-empty value is written present.
	Absent []string
}

// NonConstBufferDevice places planned arena BufferIdx on a device.
type NonConstBufferDevice struct {
	BufferIdx   int32
	DeviceType  DeviceType
	DeviceIndex int8
}

// Buffer is deprecated inline constant data.
type Buffer struct {
	Storage []byte
}

// BackendDelegateInlineData is delegate data stored inside the flatbuffer.
type BackendDelegateInlineData struct {
	Data []byte
}

// DataSegment is a byte range after the flatbuffer. Offset is relative to the
// extended header's segment base offset; Size excludes padding.
type DataSegment struct {
	Offset uint64
	Size   uint64
}

// SubsegmentOffsets lists byte offsets of items inside segment SegmentIndex.
// Offsets[0] is a placeholder for "no data".
type SubsegmentOffsets struct {
	SegmentIndex uint32
	Offsets      []uint64
}

// NamedData names a blob stored in segment SegmentIndex.
type NamedData struct {
	Key          string
	SegmentIndex uint32
	// Absent names the string fields of this table that were absent in the
	// file, by schema name (e.g. "name"); they read as "" and are written
	// absent again. Nil in the usual case. A listed field that is given a
	// non-empty value is written present.
	Absent []string
}

// isAbsent reports whether the string field named field (schema name) with
// value is absent: listed in the table's Absent field and still empty.
func isAbsent(absent []string, field, value string) bool {
	return value == "" && slices.Contains(absent, field)
}
