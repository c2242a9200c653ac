package inspect

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/pte"
)

// everyKind is a program that uses every table, union member and enum of
// the schema, with absent and empty vectors side by side.
func everyKind() *pte.Program {
	p := &pte.Program{
		Version:             3,
		ConstantBuffer:      []*pte.Buffer{{Storage: []byte{}}},
		BackendDelegateData: []*pte.BackendDelegateInlineData{{Data: []byte("TR01")}},
		Segments:            []*pte.DataSegment{{Offset: 0, Size: 0}, {Offset: 128, Size: 1 << 40}},
		ConstantSegment:     &pte.SubsegmentOffsets{SegmentIndex: 0, Offsets: []uint64{0}},
		MutableDataSegments: nil,
		NamedData:           []*pte.NamedData{{Key: "weights", SegmentIndex: 1}},
	}
	p.SetPlans([]*pte.ExecutionPlan{{
		Name:              "forward",
		ContainerMetaType: &pte.ContainerMetadata{EncodedInpStr: "T2#1#1($,$)", EncodedOutStr: "$"},
		Values: []*pte.EValue{
			{Val: &pte.Tensor{
				ScalarType: pte.ScalarTypeFLOAT, StorageOffset: 1, Sizes: []int32{2, 3}, DimOrder: []uint8{1, 0},
				RequiresGrad: true, DataBufferIdx: 4,
				AllocationInfo: &pte.AllocationDetails{MemoryID: 1, MemoryOffsetLow: 16, MemoryOffsetHigh: 2},
				Layout:         0, ShapeDynamism: pte.TensorShapeDynamismDYNAMIC_BOUND,
				ExtraTensorInfo: &pte.ExtraTensorInfo{
					MutableDataSegmentsIdx: 1, FullyQualifiedName: "w", Location: pte.TensorDataLocationEXTERNAL,
					DeviceType: pte.DeviceTypeCUDA, DeviceIndex: 1,
				},
			}},
			{Val: &pte.Tensor{ScalarType: 100, Sizes: []int32{}, DimOrder: nil}},
			{Val: &pte.Null{}},
			{Val: &pte.Int{IntVal: -7}},
			{Val: &pte.Bool{BoolVal: true}},
			{Val: &pte.Double{DoubleVal: math.Inf(-1)}},
			{Val: &pte.String{StringVal: "<s>"}},
			{Val: &pte.IntList{Items: []int64{3, 4}}},
			{Val: &pte.DoubleList{Items: []float64{0.5, math.NaN()}}},
			{Val: &pte.BoolList{Items: []bool{}}},
			{Val: &pte.TensorList{Items: []int32{0}}},
			{Val: &pte.OptionalTensorList{Items: []int32{-1, 0}}},
			{Val: nil},
			{Val: &pte.UnknownValue{Tag: 42}},
		},
		Inputs:  []int32{0},
		Outputs: []int32{},
		Chains: []*pte.Chain{{
			Inputs: []int32{0}, Outputs: nil,
			Instructions: []*pte.Instruction{
				{Args: &pte.KernelCall{OpIndex: 0, Args: []int32{0, 1}}},
				{Args: &pte.DelegateCall{DelegateIndex: 0, Args: []int32{1}}},
				{Args: &pte.MoveCall{MoveFrom: 1, MoveTo: 2}},
				{Args: &pte.JumpFalseCall{CondValueIndex: 4, DestinationInstruction: 0}},
				{Args: &pte.FreeCall{ValueIndex: 1}},
				{Args: nil},
				{Args: &pte.UnknownInstruction{Tag: 9}},
			},
			Stacktrace: []*pte.FrameList{{Items: []*pte.Frame{{Filename: "m.py", Lineno: 3, Name: "f", Context: "x+1"}}}},
		}},
		Operators: []*pte.Operator{{Name: "aten::add", Overload: "out"}},
		Delegates: []*pte.BackendDelegate{{
			ID:           "TensorRTBackend",
			Processed:    &pte.BackendDelegateDataReference{Location: pte.DataLocationINLINE, Index: 0},
			CompileSpecs: []*pte.CompileSpec{{Key: "k", Value: []byte("v")}, {Key: "none", Value: nil}},
		}},
		NonConstBufferSizes:  []int64{0, 48},
		NonConstBufferDevice: []*pte.NonConstBufferDevice{{BufferIdx: 1, DeviceType: pte.DeviceTypeCUDA, DeviceIndex: 0}},
	}})
	return p
}

const everyKindJSON = `{
 "version": 3,
 "execution_plan": [{
  "name": "forward",
  "container_meta_type": {"encoded_inp_str": "T2#1#1($,$)", "encoded_out_str": "$"},
  "values": [
   {"val_type": "Tensor", "val": {"scalar_type": "FLOAT", "storage_offset": 1, "sizes": [2, 3], "dim_order": [1, 0],
     "requires_grad": true, "data_buffer_idx": 4,
     "allocation_info": {"memory_id": 1, "memory_offset_low": 16, "memory_offset_high": 2},
     "layout": 0, "shape_dynamism": "DYNAMIC_BOUND",
     "extra_tensor_info": {"mutable_data_segments_idx": 1, "fully_qualified_name": "w", "location": "EXTERNAL",
       "device_type": "CUDA", "device_index": 1}}},
   {"val_type": "Tensor", "val": {"scalar_type": 100, "storage_offset": 0, "sizes": [], "dim_order": null,
     "requires_grad": false, "data_buffer_idx": 0, "allocation_info": null, "layout": 0,
     "shape_dynamism": "STATIC", "extra_tensor_info": null}},
   {"val_type": "Null", "val": {}},
   {"val_type": "Int", "val": {"int_val": -7}},
   {"val_type": "Bool", "val": {"bool_val": true}},
   {"val_type": "Double", "val": {"double_val": "-inf"}},
   {"val_type": "String", "val": {"string_val": "<s>"}},
   {"val_type": "IntList", "val": {"items": [3, 4]}},
   {"val_type": "DoubleList", "val": {"items": [0.5, "nan"]}},
   {"val_type": "BoolList", "val": {"items": []}},
   {"val_type": "TensorList", "val": {"items": [0]}},
   {"val_type": "OptionalTensorList", "val": {"items": [-1, 0]}},
   {"val_type": "NONE", "val": null},
   {"val_type": 42, "val": null}
  ],
  "inputs": [0],
  "outputs": [],
  "chains": [{
   "inputs": [0], "outputs": null,
   "instructions": [
    {"instr_args_type": "KernelCall", "instr_args": {"op_index": 0, "args": [0, 1]}},
    {"instr_args_type": "DelegateCall", "instr_args": {"delegate_index": 0, "args": [1]}},
    {"instr_args_type": "MoveCall", "instr_args": {"move_from": 1, "move_to": 2}},
    {"instr_args_type": "JumpFalseCall", "instr_args": {"cond_value_index": 4, "destination_instruction": 0}},
    {"instr_args_type": "FreeCall", "instr_args": {"value_index": 1}},
    {"instr_args_type": "NONE", "instr_args": null},
    {"instr_args_type": 9, "instr_args": null}
   ],
   "stacktrace": [{"items": [{"filename": "m.py", "lineno": 3, "name": "f", "context": "x+1"}]}]
  }],
  "operators": [{"name": "aten::add", "overload": "out"}],
  "delegates": [{
   "id": "TensorRTBackend",
   "processed": {"location": "INLINE", "index": 0},
   "compile_specs": [
    {"key": "k", "value": {"size": 1, "sha256": "4c94485e0c21ae6c41ce1dfe7b6bfaceea5ab68e40a2476f50208e526f506080"}},
    {"key": "none", "value": null}
   ]
  }],
  "non_const_buffer_sizes": [0, 48],
  "non_const_buffer_device": [{"buffer_idx": 1, "device_type": "CUDA", "device_index": 0}]
 }],
 "constant_buffer": [{"storage": {"size": 0, "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}}],
 "backend_delegate_data": [{"data": {"size": 4, "sha256": "484cd7598a3dfac7337fe7e91832b551fb93f9ec7a3b7f05a82a0a7c9ffab612"}}],
 "segments": [{"offset": 0, "size": 0}, {"offset": 128, "size": 1099511627776}],
 "constant_segment": {"segment_index": 0, "offsets": [0]},
 "mutable_data_segments": null,
 "named_data": [{"key": "weights", "segment_index": 1}]
}`

func TestNewProgramMapsEverySchemaField(t *testing.T) {
	got := &Program{Program: everyKind(), Hash: true}
	diffs, err := Diff(json.RawMessage(everyKindJSON), got)
	require.NoError(t, err)
	for _, d := range diffs {
		t.Errorf("%s", d)
	}
}

func TestNewProgramWithoutHashOmitsDigests(t *testing.T) {
	b, err := Marshal(&Program{Program: everyKind(), Hash: false})
	require.NoError(t, err)
	assert.NotContains(t, string(b), "sha256")
	assert.Contains(t, string(b), `"data": {
        "size": 4
      }`)
}

func TestNewProgramKeyOrderIsSchemaOrder(t *testing.T) {
	b, err := json.Marshal(&Program{Program: &pte.Program{}, Hash: false})
	require.NoError(t, err)
	assert.Equal(t, `{"version":0,"execution_plan":null,"constant_buffer":null,"backend_delegate_data":null,`+
		`"segments":null,"constant_segment":null,"mutable_data_segments":null,"named_data":null}`, string(b))
}

// FuzzAppendString: the walker quotes strings exactly as encoding/json
// does without HTML escaping (the form the rest of the document has):
// control bytes, quotes, invalid UTF-8, U+2028 and U+2029.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "<a&b>", "q\"b\\s", "\x00\x01\x1f\x7f\b\f\n\r\t", "\xff\xfe", "\u2028\u2029",
		"é\xc3", "日本語", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(s))
		assert.Equal(t, strings.TrimSuffix(want.String(), "\n"), string(appendString(nil, s)))
	})
}
