package pte

import (
	"errors"

	"github.com/ptekit/ptekit/internal/fbverify"
)

// This file describes schema/program.fbs to the FlatBuffers verifier in
// internal/fbverify, which runs over the flatbuffer region before anything
// decodes it, so that the decoder and the generated accessors can trust
// every offset. docs/verifier-rules.md lists each rule and the upstream
// check it mirrors; rules ExecuTorch does not apply give warning findings.

// fbVerifier is the verifier that accepted a region; the decoder asks it
// which strings are shared.
type fbVerifier = fbverify.Verifier

// Field constructors, short for the table below.
var (
	fbS   = fbverify.Scalar
	fbStr = fbverify.String
	fbT   = fbverify.Sub
	fbV   = fbverify.Vector
	fbVA  = fbverify.Bytes // byte vectors that decoding aliases (Buffer.storage, BackendDelegateInlineData.data, CompileSpec.value)
	fbVT  = fbverify.TableVector
)

// The schema, slot by slot (pte-format.md section 5.1).
var (
	fbNull              = &fbverify.Table{Name: "Null"}
	fbAllocationDetails = &fbverify.Table{Name: "AllocationDetails", Fields: []fbverify.Field{
		fbS("memory_id", 4), fbS("memory_offset_low", 4), fbS("memory_offset_high", 4)}}
	fbExtraTensorInfo = &fbverify.Table{Name: "ExtraTensorInfo", Fields: []fbverify.Field{
		fbS("mutable_data_segments_idx", 8), fbStr("fully_qualified_name"), fbS("location", 1),
		fbS("device_type", 1), fbS("device_index", 1)}}
	fbTensor = &fbverify.Table{Name: "Tensor", Fields: []fbverify.Field{
		fbS("scalar_type", 1), fbS("storage_offset", 4), fbV("sizes", 4), fbV("dim_order", 1),
		fbS("requires_grad", 1), fbS("data_buffer_idx", 4), fbT("allocation_info", fbAllocationDetails),
		fbS("layout", 1), fbS("shape_dynamism", 1), fbT("extra_tensor_info", fbExtraTensorInfo)}}
	fbInt                = &fbverify.Table{Name: "Int", Fields: []fbverify.Field{fbS("int_val", 8)}}
	fbBool               = &fbverify.Table{Name: "Bool", Fields: []fbverify.Field{fbS("bool_val", 1)}}
	fbDouble             = &fbverify.Table{Name: "Double", Fields: []fbverify.Field{fbS("double_val", 8)}}
	fbStringT            = &fbverify.Table{Name: "String", Fields: []fbverify.Field{fbStr("string_val")}}
	fbIntList            = &fbverify.Table{Name: "IntList", Fields: []fbverify.Field{fbV("items", 8)}}
	fbDoubleList         = &fbverify.Table{Name: "DoubleList", Fields: []fbverify.Field{fbV("items", 8)}}
	fbBoolList           = &fbverify.Table{Name: "BoolList", Fields: []fbverify.Field{fbV("items", 1)}}
	fbTensorList         = &fbverify.Table{Name: "TensorList", Fields: []fbverify.Field{fbV("items", 4)}}
	fbOptionalTensorList = &fbverify.Table{Name: "OptionalTensorList", Fields: []fbverify.Field{fbV("items", 4)}}
	fbEValue             = &fbverify.Table{Name: "EValue", Fields: []fbverify.Field{
		fbverify.UnionType("val_type"),
		fbverify.Union("val", nil, fbNull, fbInt, fbBool, fbDouble, fbTensor,
			fbStringT, fbIntList, fbDoubleList, fbBoolList, fbTensorList, fbOptionalTensorList)}}
	fbContainerMetadata = &fbverify.Table{Name: "ContainerMetadata", Fields: []fbverify.Field{
		fbStr("encoded_inp_str"), fbStr("encoded_out_str")}}
	fbOperator   = &fbverify.Table{Name: "Operator", Fields: []fbverify.Field{fbStr("name"), fbStr("overload")}}
	fbKernelCall = &fbverify.Table{Name: "KernelCall", Fields: []fbverify.Field{fbS("op_index", 4), fbV("args", 4)}}
	fbDelegCall  = &fbverify.Table{Name: "DelegateCall", Fields: []fbverify.Field{fbS("delegate_index", 4), fbV("args", 4)}}
	fbMoveCall   = &fbverify.Table{Name: "MoveCall", Fields: []fbverify.Field{fbS("move_from", 4), fbS("move_to", 4)}}
	fbJumpFalse  = &fbverify.Table{Name: "JumpFalseCall", Fields: []fbverify.Field{
		fbS("cond_value_index", 4), fbS("destination_instruction", 4)}}
	fbFreeCall    = &fbverify.Table{Name: "FreeCall", Fields: []fbverify.Field{fbS("value_index", 4)}}
	fbInstruction = &fbverify.Table{Name: "Instruction", Fields: []fbverify.Field{
		fbverify.UnionType("instr_args_type"),
		fbverify.Union("instr_args", nil, fbKernelCall, fbDelegCall,
			fbMoveCall, fbJumpFalse, fbFreeCall)}}
	fbFrame = &fbverify.Table{Name: "Frame", Fields: []fbverify.Field{
		fbStr("filename"), fbS("lineno", 4), fbStr("name"), fbStr("context")}}
	fbFrameList = &fbverify.Table{Name: "FrameList", Fields: []fbverify.Field{fbVT("items", fbFrame)}}
	fbDataRef   = &fbverify.Table{Name: "BackendDelegateDataReference", Fields: []fbverify.Field{
		fbS("location", 1), fbS("index", 4)}}
	fbCompileSpec = &fbverify.Table{Name: "CompileSpec", Fields: []fbverify.Field{fbStr("key"), fbVA("value")}}
	fbDelegate    = &fbverify.Table{Name: "BackendDelegate", Fields: []fbverify.Field{
		fbStr("id"), fbT("processed", fbDataRef), fbVT("compile_specs", fbCompileSpec)}}
	fbChain = &fbverify.Table{Name: "Chain", Fields: []fbverify.Field{
		fbV("inputs", 4), fbV("outputs", 4), fbVT("instructions", fbInstruction), fbVT("stacktrace", fbFrameList)}}
	fbNonConstBufferDevice = &fbverify.Table{Name: "NonConstBufferDevice", Fields: []fbverify.Field{
		fbS("buffer_idx", 4), fbS("device_type", 1), fbS("device_index", 1)}}
	fbExecutionPlan = &fbverify.Table{Name: "ExecutionPlan", Fields: []fbverify.Field{
		fbStr("name"), fbT("container_meta_type", fbContainerMetadata), fbVT("values", fbEValue),
		fbV("inputs", 4), fbV("outputs", 4), fbVT("chains", fbChain), fbVT("operators", fbOperator),
		fbVT("delegates", fbDelegate), fbV("non_const_buffer_sizes", 8),
		fbVT("non_const_buffer_device", fbNonConstBufferDevice)}}
	fbBuffer       = &fbverify.Table{Name: "Buffer", Fields: []fbverify.Field{fbVA("storage")}}
	fbInlineData   = &fbverify.Table{Name: "BackendDelegateInlineData", Fields: []fbverify.Field{fbVA("data")}}
	fbDataSegment  = &fbverify.Table{Name: "DataSegment", Fields: []fbverify.Field{fbS("offset", 8), fbS("size", 8)}}
	fbSubsegOffset = &fbverify.Table{Name: "SubsegmentOffsets", Fields: []fbverify.Field{
		fbS("segment_index", 4), fbV("offsets", 8)}}
	fbNamedData = &fbverify.Table{Name: "NamedData", Fields: []fbverify.Field{fbStr("key"), fbS("segment_index", 4)}}
	fbProgram   = &fbverify.Table{Name: "Program", Fields: []fbverify.Field{
		fbS("version", 4), fbVT("execution_plan", fbExecutionPlan), fbVT("constant_buffer", fbBuffer),
		fbVT("backend_delegate_data", fbInlineData), fbVT("segments", fbDataSegment),
		fbT("constant_segment", fbSubsegOffset), fbVT("mutable_data_segments", fbSubsegOffset),
		fbVT("named_data", fbNamedData)}}
)

// verifyProgramBuffer verifies buf as a Program flatbuffer. The caller has
// checked the identifier; buf starts at file offset 0. A failure is a
// *FormatError with Code CodeInvalidProgram, as Program::load reports a
// verifier failure; warnings stay in the returned verifier's Warnings.
func verifyProgramBuffer(buf []byte) (*fbVerifier, error) {
	v, err := fbverify.Verify(buf, fbProgram)
	if err != nil {
		var e *fbverify.Error
		if errors.As(err, &e) {
			return nil, &FormatError{Off: e.Off, Path: e.Path, Msg: e.Msg, Code: CodeInvalidProgram}
		}
		return nil, err
	}
	return v, nil
}
