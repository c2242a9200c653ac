package export

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ptekit/ptekit/pte"
)

// DType is a tensor element type, spelled as PyTorch spells it without the
// "torch." prefix ("float32", "int64", ...). The same strings are written in
// the "dtype" field of the TensorRT blob's io_bindings.
type DType string

// Supported element types.
const (
	Float32       DType = "float32"
	Float16       DType = "float16"
	BFloat16      DType = "bfloat16"
	Float64       DType = "float64"
	Int8          DType = "int8"
	Int16         DType = "int16"
	Int32         DType = "int32"
	Int64         DType = "int64"
	Uint8         DType = "uint8"
	Uint16        DType = "uint16"
	Uint32        DType = "uint32"
	Uint64        DType = "uint64"
	Bool          DType = "bool"
	Float8E5M2    DType = "float8_e5m2"
	Float8E4M3FN  DType = "float8_e4m3fn"
	Float8E5M2FNZ DType = "float8_e5m2fnuz"
	Float8E4M3FNZ DType = "float8_e4m3fnuz"
)

type dtypeInfo struct {
	scalar pte.ScalarType
	size   int64
}

var dtypes = map[DType]dtypeInfo{
	Float32:       {pte.ScalarTypeFLOAT, 4},
	Float16:       {pte.ScalarTypeHALF, 2},
	BFloat16:      {pte.ScalarTypeBFLOAT16, 2},
	Float64:       {pte.ScalarTypeDOUBLE, 8},
	Int8:          {pte.ScalarTypeCHAR, 1},
	Int16:         {pte.ScalarTypeSHORT, 2},
	Int32:         {pte.ScalarTypeINT, 4},
	Int64:         {pte.ScalarTypeLONG, 8},
	Uint8:         {pte.ScalarTypeBYTE, 1},
	Uint16:        {pte.ScalarTypeUINT16, 2},
	Uint32:        {pte.ScalarTypeUINT32, 4},
	Uint64:        {pte.ScalarTypeUINT64, 8},
	Bool:          {pte.ScalarTypeBOOL, 1},
	Float8E5M2:    {pte.ScalarTypeFLOAT8E5M2, 1},
	Float8E4M3FN:  {pte.ScalarTypeFLOAT8E4M3FN, 1},
	Float8E5M2FNZ: {pte.ScalarTypeFLOAT8E5M2FNUZ, 1},
	Float8E4M3FNZ: {pte.ScalarTypeFLOAT8E4M3FNUZ, 1},
}

// ScalarType returns the ExecuTorch scalar type of d.
func (d DType) ScalarType() (pte.ScalarType, error) {
	info, ok := dtypes[d]
	if !ok {
		return 0, fmt.Errorf("unknown dtype %q (want one of %s)", string(d), dtypeList())
	}
	return info.scalar, nil
}

// Size returns the size of one element in bytes, or 0 for an unknown dtype.
func (d DType) Size() int64 { return dtypes[d].size }

func dtypeList() string {
	var names []string
	for _, d := range slices.Sorted(maps.Keys(dtypes)) {
		names = append(names, string(d))
	}
	return strings.Join(names, ", ")
}
