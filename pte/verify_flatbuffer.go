package pte

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// This file holds a FlatBuffers verifier for schema/program.fbs. It runs over
// the flatbuffer region before anything decodes it, so that the decoder and
// the generated accessors can trust every offset. The rules follow the C++
// flatbuffers::Verifier that ExecuTorch uses with
// Program::Verification::InternalConsistency, plus a few stricter checks
// (non-zero offsets, fields clear of the vtable offset, element alignment
// of 8-byte vectors).

// Limits of the C++ verifier's defaults.
const (
	fbMaxDepth  = 64
	fbMaxTables = 1000000
)

// fbKind says how a field is stored.
type fbKind uint8

const (
	fbScalar    fbKind = iota // inline scalar of size fbField.size
	fbString                  // offset to a string
	fbTable                   // offset to a table
	fbVecScalar               // offset to a vector of scalars of size fbField.size
	fbVecTable                // offset to a vector of offsets to tables
	fbUnionType               // u8 union tag; the next slot holds the value
	fbUnion                   // offset to a union member table
)

// fbField describes one vtable slot of a table.
type fbField struct {
	name  string
	kind  fbKind
	size  uint32      // scalar or vector element size
	alias bool        // fbVecScalar: decoding aliases the bytes instead of copying them
	table *fbTableT   // fbTable, fbVecTable
	union []*fbTableT // fbUnion: member table per tag; nil = NONE or unknown
}

// fbTableT describes a table: its fields indexed by slot.
type fbTableT struct {
	name   string
	fields []fbField
}

func fbS(name string, size uint32) fbField { return fbField{name: name, kind: fbScalar, size: size} }
func fbStr(name string) fbField            { return fbField{name: name, kind: fbString} }
func fbT(name string, t *fbTableT) fbField {
	return fbField{name: name, kind: fbTable, table: t}
}
func fbV(name string, size uint32) fbField {
	return fbField{name: name, kind: fbVecScalar, size: size}
}

// fbVA is a byte vector that decoding aliases (Buffer.storage,
// BackendDelegateInlineData.data, CompileSpec.value).
func fbVA(name string) fbField {
	return fbField{name: name, kind: fbVecScalar, size: 1, alias: true}
}
func fbVT(name string, t *fbTableT) fbField {
	return fbField{name: name, kind: fbVecTable, table: t}
}

// The schema, slot by slot (pte-format.md section 5.1).
var (
	fbNull              = &fbTableT{name: "Null"}
	fbAllocationDetails = &fbTableT{name: "AllocationDetails", fields: []fbField{
		fbS("memory_id", 4), fbS("memory_offset_low", 4), fbS("memory_offset_high", 4)}}
	fbExtraTensorInfo = &fbTableT{name: "ExtraTensorInfo", fields: []fbField{
		fbS("mutable_data_segments_idx", 8), fbStr("fully_qualified_name"), fbS("location", 1),
		fbS("device_type", 1), fbS("device_index", 1)}}
	fbTensor = &fbTableT{name: "Tensor", fields: []fbField{
		fbS("scalar_type", 1), fbS("storage_offset", 4), fbV("sizes", 4), fbV("dim_order", 1),
		fbS("requires_grad", 1), fbS("data_buffer_idx", 4), fbT("allocation_info", fbAllocationDetails),
		fbS("layout", 1), fbS("shape_dynamism", 1), fbT("extra_tensor_info", fbExtraTensorInfo)}}
	fbInt                = &fbTableT{name: "Int", fields: []fbField{fbS("int_val", 8)}}
	fbBool               = &fbTableT{name: "Bool", fields: []fbField{fbS("bool_val", 1)}}
	fbDouble             = &fbTableT{name: "Double", fields: []fbField{fbS("double_val", 8)}}
	fbStringT            = &fbTableT{name: "String", fields: []fbField{fbStr("string_val")}}
	fbIntList            = &fbTableT{name: "IntList", fields: []fbField{fbV("items", 8)}}
	fbDoubleList         = &fbTableT{name: "DoubleList", fields: []fbField{fbV("items", 8)}}
	fbBoolList           = &fbTableT{name: "BoolList", fields: []fbField{fbV("items", 1)}}
	fbTensorList         = &fbTableT{name: "TensorList", fields: []fbField{fbV("items", 4)}}
	fbOptionalTensorList = &fbTableT{name: "OptionalTensorList", fields: []fbField{fbV("items", 4)}}
	fbEValue             = &fbTableT{name: "EValue", fields: []fbField{
		{name: "val_type", kind: fbUnionType, size: 1},
		{name: "val", kind: fbUnion, union: []*fbTableT{nil, fbNull, fbInt, fbBool, fbDouble, fbTensor,
			fbStringT, fbIntList, fbDoubleList, fbBoolList, fbTensorList, fbOptionalTensorList}}}}
	fbContainerMetadata = &fbTableT{name: "ContainerMetadata", fields: []fbField{
		fbStr("encoded_inp_str"), fbStr("encoded_out_str")}}
	fbOperator   = &fbTableT{name: "Operator", fields: []fbField{fbStr("name"), fbStr("overload")}}
	fbKernelCall = &fbTableT{name: "KernelCall", fields: []fbField{fbS("op_index", 4), fbV("args", 4)}}
	fbDelegCall  = &fbTableT{name: "DelegateCall", fields: []fbField{fbS("delegate_index", 4), fbV("args", 4)}}
	fbMoveCall   = &fbTableT{name: "MoveCall", fields: []fbField{fbS("move_from", 4), fbS("move_to", 4)}}
	fbJumpFalse  = &fbTableT{name: "JumpFalseCall", fields: []fbField{
		fbS("cond_value_index", 4), fbS("destination_instruction", 4)}}
	fbFreeCall    = &fbTableT{name: "FreeCall", fields: []fbField{fbS("value_index", 4)}}
	fbInstruction = &fbTableT{name: "Instruction", fields: []fbField{
		{name: "instr_args_type", kind: fbUnionType, size: 1},
		{name: "instr_args", kind: fbUnion, union: []*fbTableT{nil, fbKernelCall, fbDelegCall,
			fbMoveCall, fbJumpFalse, fbFreeCall}}}}
	fbFrame = &fbTableT{name: "Frame", fields: []fbField{
		fbStr("filename"), fbS("lineno", 4), fbStr("name"), fbStr("context")}}
	fbFrameList = &fbTableT{name: "FrameList", fields: []fbField{fbVT("items", fbFrame)}}
	fbDataRef   = &fbTableT{name: "BackendDelegateDataReference", fields: []fbField{
		fbS("location", 1), fbS("index", 4)}}
	fbCompileSpec = &fbTableT{name: "CompileSpec", fields: []fbField{fbStr("key"), fbVA("value")}}
	fbDelegate    = &fbTableT{name: "BackendDelegate", fields: []fbField{
		fbStr("id"), fbT("processed", fbDataRef), fbVT("compile_specs", fbCompileSpec)}}
	fbChain = &fbTableT{name: "Chain", fields: []fbField{
		fbV("inputs", 4), fbV("outputs", 4), fbVT("instructions", fbInstruction), fbVT("stacktrace", fbFrameList)}}
	fbNonConstBufferDevice = &fbTableT{name: "NonConstBufferDevice", fields: []fbField{
		fbS("buffer_idx", 4), fbS("device_type", 1), fbS("device_index", 1)}}
	fbExecutionPlan = &fbTableT{name: "ExecutionPlan", fields: []fbField{
		fbStr("name"), fbT("container_meta_type", fbContainerMetadata), fbVT("values", fbEValue),
		fbV("inputs", 4), fbV("outputs", 4), fbVT("chains", fbChain), fbVT("operators", fbOperator),
		fbVT("delegates", fbDelegate), fbV("non_const_buffer_sizes", 8),
		fbVT("non_const_buffer_device", fbNonConstBufferDevice)}}
	fbBuffer       = &fbTableT{name: "Buffer", fields: []fbField{fbVA("storage")}}
	fbInlineData   = &fbTableT{name: "BackendDelegateInlineData", fields: []fbField{fbVA("data")}}
	fbDataSegment  = &fbTableT{name: "DataSegment", fields: []fbField{fbS("offset", 8), fbS("size", 8)}}
	fbSubsegOffset = &fbTableT{name: "SubsegmentOffsets", fields: []fbField{
		fbS("segment_index", 4), fbV("offsets", 8)}}
	fbNamedData = &fbTableT{name: "NamedData", fields: []fbField{fbStr("key"), fbS("segment_index", 4)}}
	fbProgram   = &fbTableT{name: "Program", fields: []fbField{
		fbS("version", 4), fbVT("execution_plan", fbExecutionPlan), fbVT("constant_buffer", fbBuffer),
		fbVT("backend_delegate_data", fbInlineData), fbVT("segments", fbDataSegment),
		fbT("constant_segment", fbSubsegOffset), fbVT("mutable_data_segments", fbSubsegOffset),
		fbVT("named_data", fbNamedData)}}
)

// fbPath is a lazily formatted field path such as
// "execution_plan[2].delegates[0].processed.index".
type fbPath struct {
	parent *fbPath
	name   string
	index  int // -1: no index
}

func (p *fbPath) field(name string) *fbPath { return &fbPath{parent: p, name: name, index: -1} }
func (p *fbPath) elem(i uint32) *fbPath     { return &fbPath{parent: p, index: int(i)} }
func (p *fbPath) String() string {
	var parts []*fbPath
	for q := p; q != nil; q = q.parent {
		parts = append(parts, q)
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		q := parts[i]
		if q.name != "" {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(q.name)
		}
		if q.index >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(q.index))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// fbVerifier walks a flatbuffer region.
//
// Besides the C++ limits it bounds the work and memory a hostile buffer can
// cause by pointing many offsets at one table or vector (FlatBuffers offsets
// form a DAG, and writers legitimately share strings, as
// FlatBufferBuilder.CreateSharedString does):
//   - table visits are limited to one per 4 bytes of buffer, because decoding
//     expands a shared table once per reference;
//   - each distinct vector or string (by position and element size) is
//     verified once and its bytes counted once; their total may not exceed
//     twice the buffer size (only overlapping vectors get there);
//   - vectors that decoding copies (every scalar vector except the aliased
//     byte vectors Buffer.storage, BackendDelegateInlineData.data and
//     CompileSpec.value) are also counted once per reference, and that total
//     may not exceed twice the buffer size either. Strings are not: the
//     decoder copies a shared string once (see fbSeenShared).
//
// Decoding a verified buffer therefore allocates O(len(buf)) bytes.
type fbVerifier struct {
	buf       []byte
	depth     int
	tables    int
	vecBytes  uint64  // bytes of distinct vectors and strings
	copyBytes uint64  // bytes of copied vectors, once per reference
	seen      []uint8 // fbSeen* bits by position/4 of a vector's length prefix
}

// Bits of fbVerifier.seen. Vector and string positions are 4-aligned, so
// one byte per 4 bytes of buffer records every kind of use of a position.
const (
	fbSeenString uint8 = 1 << iota // verified as a string
	fbSeenShared                   // referenced as a string more than once
	fbSeenVec1                     // verified as a vector of 1-byte elements
	fbSeenVec4                     // ... of 4-byte elements
	fbSeenVec8                     // ... of 8-byte elements
)

// maxVisits is the largest number of table visits an unshared buffer needs.
func (v *fbVerifier) maxVisits() int { return len(v.buf)/4 + 1 }

// sharedString reports whether the string at pos was referenced more than
// once; the decoder copies those once.
func (v *fbVerifier) sharedString(pos uint32) bool {
	return int(pos/4) < len(v.seen) && v.seen[pos/4]&fbSeenShared != 0
}

func (v *fbVerifier) fail(off uint64, p *fbPath, format string, args ...any) error {
	path := ""
	if p != nil {
		path = p.String()
	}
	return &FormatError{Off: int64(off), Path: path, Msg: fmt.Sprintf(format, args...), Code: CodeInvalidProgram}
}

// within reports whether [off, off+n) lies inside the buffer.
func (v *fbVerifier) within(off, n uint64) bool {
	size := uint64(len(v.buf))
	return off <= size && n <= size-off
}

func (v *fbVerifier) u16(off uint64) uint16 { return binary.LittleEndian.Uint16(v.buf[off:]) }
func (v *fbVerifier) u32(off uint64) uint32 { return binary.LittleEndian.Uint32(v.buf[off:]) }

// verifyProgramBuffer verifies buf as a Program flatbuffer. The caller has
// checked the identifier; buf starts at file offset 0. The returned verifier
// tells the decoder which strings are shared.
func verifyProgramBuffer(buf []byte) (*fbVerifier, error) {
	v := &fbVerifier{buf: buf}
	if len(buf) > rdMaxRegionSize {
		return nil, v.fail(0, nil, "flatbuffer region of %d bytes exceeds the FlatBuffers limit of %d", len(buf), rdMaxRegionSize)
	}
	if !v.within(0, 8) {
		return nil, v.fail(0, nil, "flatbuffer region of %d bytes is shorter than the 8-byte prefix", len(buf))
	}
	v.seen = make([]uint8, len(buf)/4+1)
	root, err := v.offset(0, nil, "root table offset")
	if err != nil {
		return nil, err
	}
	if err := v.table(root, fbProgram, nil); err != nil {
		return nil, err
	}
	return v, nil
}

// offset reads the uoffset at off and returns its target, which is checked
// to be a non-zero forward offset into the buffer.
func (v *fbVerifier) offset(off uint64, p *fbPath, what string) (uint64, error) {
	if off%4 != 0 {
		return 0, v.fail(off, p, "%s at byte %d is not 4-byte aligned", what, off)
	}
	if !v.within(off, 4) {
		return 0, v.fail(off, p, "%s is outside the %d-byte flatbuffer", what, len(v.buf))
	}
	u := uint64(v.u32(off))
	if u == 0 {
		return 0, v.fail(off, p, "%s is zero", what)
	}
	if u > rdMaxRegionSize {
		return 0, v.fail(off, p, "%s %d is negative as a signed offset", what, u)
	}
	if !v.within(off+u, 1) {
		return 0, v.fail(off, p, "%s %d points to byte %d, past the %d-byte flatbuffer", what, u, off+u, len(v.buf))
	}
	return off + u, nil
}

// table verifies the table at pos against its description.
func (v *fbVerifier) table(pos uint64, t *fbTableT, p *fbPath) error {
	v.depth++
	v.tables++
	if v.depth > fbMaxDepth {
		return v.fail(pos, p, "tables nested deeper than %d", fbMaxDepth)
	}
	if v.tables > fbMaxTables {
		return v.fail(pos, p, "more than %d tables", fbMaxTables)
	}
	if v.tables > v.maxVisits() {
		return v.fail(pos, p, "more table visits (%d) than a %d-byte flatbuffer can hold without sharing tables", v.tables, len(v.buf))
	}
	if pos%4 != 0 {
		return v.fail(pos, p, "%s table at byte %d is not 4-byte aligned", t.name, pos)
	}
	if !v.within(pos, 4) {
		return v.fail(pos, p, "%s table is outside the %d-byte flatbuffer", t.name, len(v.buf))
	}
	soff := int64(int32(v.u32(pos)))
	vt := int64(pos) - soff
	if vt < 0 || vt%2 != 0 || !v.within(uint64(vt), 4) {
		return v.fail(pos, p, "%s table's vtable offset %d points to byte %d, outside the flatbuffer or misaligned", t.name, soff, vt)
	}
	vtSize := uint64(v.u16(uint64(vt)))
	if vtSize < 4 || vtSize%2 != 0 || !v.within(uint64(vt), vtSize) {
		return v.fail(uint64(vt), p, "%s vtable size %d is invalid or runs past the flatbuffer", t.name, vtSize)
	}
	// The table size stored in the vtable is not checked against field
	// positions: the Python flatbuffers builder that writes current .pte
	// files stores sizes that exclude the last field (the C++ verifier does
	// not look at it either). Every field is checked against the buffer.
	var unionTag byte
	for slot := range t.fields {
		vo := uint64(4 + 2*slot)
		if vo+2 > vtSize {
			break
		}
		fo := uint64(v.u16(uint64(vt) + vo))
		f := &t.fields[slot]
		if fo == 0 {
			if f.kind == fbUnionType {
				unionTag = 0
			}
			continue
		}
		fp := p.field(f.name)
		abs := pos + fo
		width := uint64(4)
		if f.kind == fbScalar || f.kind == fbUnionType {
			width = uint64(f.size)
		}
		if fo < 4 || !v.within(abs, width) {
			return v.fail(uint64(vt)+vo, fp, "field offset %d puts the field outside the flatbuffer or over the %s table's vtable offset", fo, t.name)
		}
		if abs%width != 0 {
			return v.fail(abs, fp, "field at byte %d is not %d-byte aligned", abs, width)
		}
		switch f.kind {
		case fbScalar:
		case fbUnionType:
			unionTag = v.buf[abs]
		case fbString:
			target, err := v.offset(abs, fp, "string offset")
			if err != nil {
				return err
			}
			if err := v.string(target, fp); err != nil {
				return err
			}
		case fbTable:
			target, err := v.offset(abs, fp, "table offset")
			if err != nil {
				return err
			}
			if err := v.table(target, f.table, fp); err != nil {
				return err
			}
		case fbVecScalar:
			target, err := v.offset(abs, fp, "vector offset")
			if err != nil {
				return err
			}
			if _, err := v.vector(target, uint64(f.size), !f.alias, fp); err != nil {
				return err
			}
		case fbVecTable:
			target, err := v.offset(abs, fp, "vector offset")
			if err != nil {
				return err
			}
			if err := v.tableVector(target, f.table, fp); err != nil {
				return err
			}
		case fbUnion:
			target, err := v.offset(abs, fp, "union value offset")
			if err != nil {
				return err
			}
			// Unknown tags are accepted, as the C++ verifier does; the
			// validator reports them.
			if int(unionTag) < len(f.union) && f.union[unionTag] != nil {
				if err := v.table(target, f.union[unionTag], fp); err != nil {
					return err
				}
			}
		}
	}
	v.depth--
	return nil
}

// vector verifies the vector whose length prefix is at pos and returns its
// element count. copied says that decoding copies the elements for every
// reference (see fbVerifier).
func (v *fbVerifier) vector(pos, elem uint64, copied bool, p *fbPath) (uint64, error) {
	if pos%4 != 0 {
		return 0, v.fail(pos, p, "vector at byte %d is not 4-byte aligned", pos)
	}
	if !v.within(pos, 4) {
		return 0, v.fail(pos, p, "vector length is outside the %d-byte flatbuffer", len(v.buf))
	}
	n := uint64(v.u32(pos))
	bit := fbSeenVec1
	switch elem {
	case 4:
		bit = fbSeenVec4
	case 8:
		bit = fbSeenVec8
	}
	if v.seen[pos/4]&bit == 0 {
		if n >= rdMaxRegionSize/elem {
			return 0, v.fail(pos, p, "vector length %d is too large", n)
		}
		if !v.within(pos+4, n*elem) {
			return 0, v.fail(pos, p, "vector of %d %d-byte elements runs past the %d-byte flatbuffer", n, elem, len(v.buf))
		}
		if elem == 8 && (pos+4)%8 != 0 {
			return 0, v.fail(pos+4, p, "elements of a vector of 8-byte values at byte %d are not 8-byte aligned", pos+4)
		}
		v.vecBytes += n * elem
		if v.vecBytes > 2*uint64(len(v.buf)) {
			return 0, v.fail(pos, p, "distinct vectors and strings hold %d bytes in total, more than twice the %d-byte flatbuffer: they overlap", v.vecBytes, len(v.buf))
		}
		v.seen[pos/4] |= bit
	}
	if copied {
		v.copyBytes += n * elem
		if v.copyBytes > 2*uint64(len(v.buf)) {
			return 0, v.fail(pos, p, "vectors referenced %d bytes in total, more than twice the %d-byte flatbuffer: one vector is shared by too many tables", v.copyBytes, len(v.buf))
		}
	}
	return n, nil
}

// string verifies the string at pos: length, bytes and NUL terminator. A
// string verified before is only marked shared.
func (v *fbVerifier) string(pos uint64, p *fbPath) error {
	if pos%4 == 0 && v.within(pos, 4) && v.seen[pos/4]&fbSeenString != 0 {
		v.seen[pos/4] |= fbSeenShared
		return nil
	}
	n, err := v.vector(pos, 1, false, p)
	if err != nil {
		return err
	}
	end := pos + 4 + n
	if !v.within(end, 1) {
		return v.fail(pos, p, "string of %d bytes has no room for its NUL terminator", n)
	}
	if v.buf[end] != 0 {
		return v.fail(end, p, "string of %d bytes is not NUL-terminated", n)
	}
	v.seen[pos/4] |= fbSeenString
	return nil
}

// tableVector verifies a vector of tables. Its element tables are visited
// (and counted) for every reference, as decoding expands them.
func (v *fbVerifier) tableVector(pos uint64, t *fbTableT, p *fbPath) error {
	n, err := v.vector(pos, 4, false, p)
	if err != nil {
		return err
	}
	for i := uint64(0); i < n; i++ {
		ep := p.elem(uint32(i))
		target, err := v.offset(pos+4+4*i, ep, "element offset")
		if err != nil {
			return err
		}
		if err := v.table(target, t, ep); err != nil {
			return err
		}
	}
	return nil
}
