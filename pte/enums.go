// The enums of schema/program.fbs; TestEnumsMatchSchema keeps them in step.

package pte

import "strconv"

// The schema's enums, as pte's own types so that the generated FlatBuffers
// code stays internal. Constants keep the schema's names after the type name
// (ScalarTypeFLOAT, DataLocationSEGMENT) and its wire values; a file may hold
// a value the schema does not name, which Known reports and String prints as
// "Type(n)".

// ScalarType is a tensor element type (schema scalar_type.fbs).
type ScalarType int8

// Values of ScalarType.
const (
	ScalarTypeBYTE           ScalarType = 0
	ScalarTypeCHAR           ScalarType = 1
	ScalarTypeSHORT          ScalarType = 2
	ScalarTypeINT            ScalarType = 3
	ScalarTypeLONG           ScalarType = 4
	ScalarTypeHALF           ScalarType = 5
	ScalarTypeFLOAT          ScalarType = 6
	ScalarTypeDOUBLE         ScalarType = 7
	ScalarTypeBOOL           ScalarType = 11
	ScalarTypeQINT8          ScalarType = 12
	ScalarTypeQUINT8         ScalarType = 13
	ScalarTypeQINT32         ScalarType = 14
	ScalarTypeBFLOAT16       ScalarType = 15
	ScalarTypeQUINT4X2       ScalarType = 16
	ScalarTypeQUINT2X4       ScalarType = 17
	ScalarTypeBITS16         ScalarType = 22
	ScalarTypeFLOAT8E5M2     ScalarType = 23
	ScalarTypeFLOAT8E4M3FN   ScalarType = 24
	ScalarTypeFLOAT8E5M2FNUZ ScalarType = 25
	ScalarTypeFLOAT8E4M3FNUZ ScalarType = 26
	ScalarTypeUINT16         ScalarType = 27
	ScalarTypeUINT32         ScalarType = 28
	ScalarTypeUINT64         ScalarType = 29
)

var namesScalarType = map[ScalarType]string{
	ScalarTypeBYTE:           "BYTE",
	ScalarTypeCHAR:           "CHAR",
	ScalarTypeSHORT:          "SHORT",
	ScalarTypeINT:            "INT",
	ScalarTypeLONG:           "LONG",
	ScalarTypeHALF:           "HALF",
	ScalarTypeFLOAT:          "FLOAT",
	ScalarTypeDOUBLE:         "DOUBLE",
	ScalarTypeBOOL:           "BOOL",
	ScalarTypeQINT8:          "QINT8",
	ScalarTypeQUINT8:         "QUINT8",
	ScalarTypeQINT32:         "QINT32",
	ScalarTypeBFLOAT16:       "BFLOAT16",
	ScalarTypeQUINT4X2:       "QUINT4X2",
	ScalarTypeQUINT2X4:       "QUINT2X4",
	ScalarTypeBITS16:         "BITS16",
	ScalarTypeFLOAT8E5M2:     "FLOAT8E5M2",
	ScalarTypeFLOAT8E4M3FN:   "FLOAT8E4M3FN",
	ScalarTypeFLOAT8E5M2FNUZ: "FLOAT8E5M2FNUZ",
	ScalarTypeFLOAT8E4M3FNUZ: "FLOAT8E4M3FNUZ",
	ScalarTypeUINT16:         "UINT16",
	ScalarTypeUINT32:         "UINT32",
	ScalarTypeUINT64:         "UINT64",
}

// String returns the schema's name of v, or "ScalarType(n)" for a value it does not name.
func (v ScalarType) String() string { return enumName(namesScalarType, v, "ScalarType") }

// Known reports whether the schema names v.
func (v ScalarType) Known() bool { _, ok := namesScalarType[v]; return ok }

// TensorShapeDynamism says whether a tensor's shape may change at run time.
type TensorShapeDynamism int8

// Values of TensorShapeDynamism.
const (
	TensorShapeDynamismSTATIC          TensorShapeDynamism = 0
	TensorShapeDynamismDYNAMIC_BOUND   TensorShapeDynamism = 1
	TensorShapeDynamismDYNAMIC_UNBOUND TensorShapeDynamism = 2
)

var namesTensorShapeDynamism = map[TensorShapeDynamism]string{
	TensorShapeDynamismSTATIC:          "STATIC",
	TensorShapeDynamismDYNAMIC_BOUND:   "DYNAMIC_BOUND",
	TensorShapeDynamismDYNAMIC_UNBOUND: "DYNAMIC_UNBOUND",
}

// String returns the schema's name of v, or "TensorShapeDynamism(n)" for a value it does not name.
func (v TensorShapeDynamism) String() string {
	return enumName(namesTensorShapeDynamism, v, "TensorShapeDynamism")
}

// Known reports whether the schema names v.
func (v TensorShapeDynamism) Known() bool { _, ok := namesTensorShapeDynamism[v]; return ok }

// TensorDataLocation says whether tensor data is in this file (SEGMENT) or
// in an external data file (EXTERNAL).
type TensorDataLocation int8

// Values of TensorDataLocation.
const (
	TensorDataLocationSEGMENT  TensorDataLocation = 0
	TensorDataLocationEXTERNAL TensorDataLocation = 1
)

var namesTensorDataLocation = map[TensorDataLocation]string{
	TensorDataLocationSEGMENT:  "SEGMENT",
	TensorDataLocationEXTERNAL: "EXTERNAL",
}

// String returns the schema's name of v, or "TensorDataLocation(n)" for a value it does not name.
func (v TensorDataLocation) String() string {
	return enumName(namesTensorDataLocation, v, "TensorDataLocation")
}

// Known reports whether the schema names v.
func (v TensorDataLocation) Known() bool { _, ok := namesTensorDataLocation[v]; return ok }

// DeviceType is the kind of memory a tensor or arena lives in.
type DeviceType int8

// Values of DeviceType.
const (
	DeviceTypeCPU  DeviceType = 0
	DeviceTypeCUDA DeviceType = 1
)

var namesDeviceType = map[DeviceType]string{
	DeviceTypeCPU:  "CPU",
	DeviceTypeCUDA: "CUDA",
}

// String returns the schema's name of v, or "DeviceType(n)" for a value it does not name.
func (v DeviceType) String() string { return enumName(namesDeviceType, v, "DeviceType") }

// Known reports whether the schema names v.
func (v DeviceType) Known() bool { _, ok := namesDeviceType[v]; return ok }

// KernelTypes is the union tag of an EValue: which Value it holds.
type KernelTypes byte

// Values of KernelTypes.
const (
	KernelTypesNONE               KernelTypes = 0
	KernelTypesNull               KernelTypes = 1
	KernelTypesInt                KernelTypes = 2
	KernelTypesBool               KernelTypes = 3
	KernelTypesDouble             KernelTypes = 4
	KernelTypesTensor             KernelTypes = 5
	KernelTypesString             KernelTypes = 6
	KernelTypesIntList            KernelTypes = 7
	KernelTypesDoubleList         KernelTypes = 8
	KernelTypesBoolList           KernelTypes = 9
	KernelTypesTensorList         KernelTypes = 10
	KernelTypesOptionalTensorList KernelTypes = 11
)

var namesKernelTypes = map[KernelTypes]string{
	KernelTypesNONE:               "NONE",
	KernelTypesNull:               "Null",
	KernelTypesInt:                "Int",
	KernelTypesBool:               "Bool",
	KernelTypesDouble:             "Double",
	KernelTypesTensor:             "Tensor",
	KernelTypesString:             "String",
	KernelTypesIntList:            "IntList",
	KernelTypesDoubleList:         "DoubleList",
	KernelTypesBoolList:           "BoolList",
	KernelTypesTensorList:         "TensorList",
	KernelTypesOptionalTensorList: "OptionalTensorList",
}

// String returns the schema's name of v, or "KernelTypes(n)" for a value it does not name.
func (v KernelTypes) String() string { return enumName(namesKernelTypes, v, "KernelTypes") }

// Known reports whether the schema names v.
func (v KernelTypes) Known() bool { _, ok := namesKernelTypes[v]; return ok }

// InstructionArguments is the union tag of an Instruction: which
// InstructionArgs it holds.
type InstructionArguments byte

// Values of InstructionArguments.
const (
	InstructionArgumentsNONE          InstructionArguments = 0
	InstructionArgumentsKernelCall    InstructionArguments = 1
	InstructionArgumentsDelegateCall  InstructionArguments = 2
	InstructionArgumentsMoveCall      InstructionArguments = 3
	InstructionArgumentsJumpFalseCall InstructionArguments = 4
	InstructionArgumentsFreeCall      InstructionArguments = 5
)

var namesInstructionArguments = map[InstructionArguments]string{
	InstructionArgumentsNONE:          "NONE",
	InstructionArgumentsKernelCall:    "KernelCall",
	InstructionArgumentsDelegateCall:  "DelegateCall",
	InstructionArgumentsMoveCall:      "MoveCall",
	InstructionArgumentsJumpFalseCall: "JumpFalseCall",
	InstructionArgumentsFreeCall:      "FreeCall",
}

// String returns the schema's name of v, or "InstructionArguments(n)" for a value it does not name.
func (v InstructionArguments) String() string {
	return enumName(namesInstructionArguments, v, "InstructionArguments")
}

// Known reports whether the schema names v.
func (v InstructionArguments) Known() bool { _, ok := namesInstructionArguments[v]; return ok }

// DataLocation says where a delegate's processed data is: INLINE (in
// Program.BackendDelegateData) or SEGMENT (in a data segment).
type DataLocation int8

// Values of DataLocation.
const (
	DataLocationINLINE  DataLocation = 0
	DataLocationSEGMENT DataLocation = 1
)

var namesDataLocation = map[DataLocation]string{
	DataLocationINLINE:  "INLINE",
	DataLocationSEGMENT: "SEGMENT",
}

// String returns the schema's name of v, or "DataLocation(n)" for a value it does not name.
func (v DataLocation) String() string { return enumName(namesDataLocation, v, "DataLocation") }

// Known reports whether the schema names v.
func (v DataLocation) Known() bool { _, ok := namesDataLocation[v]; return ok }

// enumName is the String of the enum types: the schema's name of v, or
// "typ(n)" for a value names lacks.
func enumName[T ~int8 | ~uint8](names map[T]string, v T, typ string) string {
	if s, ok := names[v]; ok {
		return s
	}
	return typ + "(" + strconv.FormatInt(int64(v), 10) + ")"
}
