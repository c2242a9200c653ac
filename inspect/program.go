package inspect

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/ptekit/ptekit/pte"
)

// The types below are the JSON form of the Program table. Their fields are
// in schema field order, and the JSON names are the schema's field names.
// Slices keep the absent (nil, null) / empty ([]) distinction of package pte,
// and so do strings: the types with string fields have an Absent field (not
// itself written) naming the string fields that were absent in the file,
// which are written as null and read back from null.

// Program is the JSON form of pte.Program.
type Program struct {
	Version             uint32                       `json:"version"`
	ExecutionPlan       []*ExecutionPlan             `json:"execution_plan"`
	ConstantBuffer      []*Buffer                    `json:"constant_buffer"`
	BackendDelegateData []*BackendDelegateInlineData `json:"backend_delegate_data"`
	Segments            []*DataSegment               `json:"segments"`
	ConstantSegment     *SubsegmentOffsets           `json:"constant_segment"`
	MutableDataSegments []*SubsegmentOffsets         `json:"mutable_data_segments"`
	NamedData           []*NamedData                 `json:"named_data"`
}

// ExecutionPlan is the JSON form of pte.ExecutionPlan.
type ExecutionPlan struct {
	Name                 string                  `json:"name"`
	ContainerMetaType    *ContainerMetadata      `json:"container_meta_type"`
	Values               []*EValue               `json:"values"`
	Inputs               []int32                 `json:"inputs"`
	Outputs              []int32                 `json:"outputs"`
	Chains               []*Chain                `json:"chains"`
	Operators            []*Operator             `json:"operators"`
	Delegates            []*BackendDelegate      `json:"delegates"`
	NonConstBufferSizes  []int64                 `json:"non_const_buffer_sizes"`
	NonConstBufferDevice []*NonConstBufferDevice `json:"non_const_buffer_device"`
	Absent               []string                `json:"-"` // absent string fields, by JSON name: written null
}

// ContainerMetadata is the JSON form of pte.ContainerMetadata.
type ContainerMetadata struct {
	EncodedInpStr string   `json:"encoded_inp_str"`
	EncodedOutStr string   `json:"encoded_out_str"`
	Absent        []string `json:"-"` // absent string fields, by JSON name: written null
}

// EValue is the JSON form of pte.EValue: the union tag and its member. Val
// is one of the *XxxVal types of this package, or nil (null) for NONE and
// for tags the schema does not know.
type EValue struct {
	ValType Enum `json:"val_type"`
	Val     any  `json:"val"`
}

// NullVal is the member table of a Null value; it has no fields ({}).
type NullVal struct{}

// IntVal is the member table of an Int value.
type IntVal struct {
	IntVal int64 `json:"int_val"`
}

// BoolVal is the member table of a Bool value.
type BoolVal struct {
	BoolVal bool `json:"bool_val"`
}

// DoubleVal is the member table of a Double value.
type DoubleVal struct {
	DoubleVal Float `json:"double_val"`
}

// StringVal is the member table of a String value.
type StringVal struct {
	StringVal string   `json:"string_val"`
	Absent    []string `json:"-"` // absent string fields, by JSON name: written null
}

// IntListVal is the member table of an IntList value.
type IntListVal struct {
	Items []int64 `json:"items"`
}

// DoubleListVal is the member table of a DoubleList value.
type DoubleListVal struct {
	Items []Float `json:"items"`
}

// BoolListVal is the member table of a BoolList value.
type BoolListVal struct {
	Items []bool `json:"items"`
}

// TensorListVal is the member table of a TensorList or OptionalTensorList
// value (the two have the same fields).
type TensorListVal struct {
	Items []int32 `json:"items"`
}

// Tensor is the member table of a Tensor value.
type Tensor struct {
	ScalarType      Enum               `json:"scalar_type"`
	StorageOffset   int32              `json:"storage_offset"`
	Sizes           []int32            `json:"sizes"`
	DimOrder        []int              `json:"dim_order"`
	RequiresGrad    bool               `json:"requires_grad"`
	DataBufferIdx   uint32             `json:"data_buffer_idx"`
	AllocationInfo  *AllocationDetails `json:"allocation_info"`
	Layout          int8               `json:"layout"`
	ShapeDynamism   Enum               `json:"shape_dynamism"`
	ExtraTensorInfo *ExtraTensorInfo   `json:"extra_tensor_info"`
}

// AllocationDetails is the JSON form of pte.AllocationDetails.
type AllocationDetails struct {
	MemoryID         uint32 `json:"memory_id"`
	MemoryOffsetLow  uint32 `json:"memory_offset_low"`
	MemoryOffsetHigh uint32 `json:"memory_offset_high"`
}

// ExtraTensorInfo is the JSON form of pte.ExtraTensorInfo.
type ExtraTensorInfo struct {
	MutableDataSegmentsIdx uint64   `json:"mutable_data_segments_idx"`
	FullyQualifiedName     string   `json:"fully_qualified_name"`
	Location               Enum     `json:"location"`
	DeviceType             Enum     `json:"device_type"`
	DeviceIndex            int8     `json:"device_index"`
	Absent                 []string `json:"-"` // absent string fields, by JSON name: written null
}

// Operator is the JSON form of pte.Operator.
type Operator struct {
	Name     string   `json:"name"`
	Overload string   `json:"overload"`
	Absent   []string `json:"-"` // absent string fields, by JSON name: written null
}

// Chain is the JSON form of pte.Chain.
type Chain struct {
	Inputs       []int32        `json:"inputs"`
	Outputs      []int32        `json:"outputs"`
	Instructions []*Instruction `json:"instructions"`
	Stacktrace   []*FrameList   `json:"stacktrace"`
}

// Instruction is the JSON form of pte.Instruction: the union tag and its
// member. InstrArgs is one of *KernelCall, *DelegateCall, *MoveCall,
// *JumpFalseCall, *FreeCall, or nil (null) for NONE and unknown tags.
type Instruction struct {
	InstrArgsType Enum `json:"instr_args_type"`
	InstrArgs     any  `json:"instr_args"`
}

// KernelCall is the JSON form of pte.KernelCall.
type KernelCall struct {
	OpIndex int32   `json:"op_index"`
	Args    []int32 `json:"args"`
}

// DelegateCall is the JSON form of pte.DelegateCall.
type DelegateCall struct {
	DelegateIndex int32   `json:"delegate_index"`
	Args          []int32 `json:"args"`
}

// MoveCall is the JSON form of pte.MoveCall.
type MoveCall struct {
	MoveFrom int32 `json:"move_from"`
	MoveTo   int32 `json:"move_to"`
}

// JumpFalseCall is the JSON form of pte.JumpFalseCall.
type JumpFalseCall struct {
	CondValueIndex         int32 `json:"cond_value_index"`
	DestinationInstruction int32 `json:"destination_instruction"`
}

// FreeCall is the JSON form of pte.FreeCall.
type FreeCall struct {
	ValueIndex int32 `json:"value_index"`
}

// FrameList is the JSON form of pte.FrameList.
type FrameList struct {
	Items []*Frame `json:"items"`
}

// Frame is the JSON form of pte.Frame.
type Frame struct {
	Filename string   `json:"filename"`
	Lineno   int32    `json:"lineno"`
	Name     string   `json:"name"`
	Context  string   `json:"context"`
	Absent   []string `json:"-"` // absent string fields, by JSON name: written null
}

// BackendDelegate is the JSON form of pte.BackendDelegate.
type BackendDelegate struct {
	ID           string                        `json:"id"`
	Processed    *BackendDelegateDataReference `json:"processed"`
	CompileSpecs []*CompileSpec                `json:"compile_specs"`
	Absent       []string                      `json:"-"` // absent string fields, by JSON name: written null
}

// BackendDelegateDataReference is the JSON form of
// pte.BackendDelegateDataReference.
type BackendDelegateDataReference struct {
	Location Enum   `json:"location"`
	Index    uint32 `json:"index"`
}

// CompileSpec is the JSON form of pte.CompileSpec. The value bytes are
// summarised; the delegates member of a Document shows them in full.
type CompileSpec struct {
	Key    string   `json:"key"`
	Value  *Bytes   `json:"value"`
	Absent []string `json:"-"` // absent string fields, by JSON name: written null
}

// NonConstBufferDevice is the JSON form of pte.NonConstBufferDevice.
type NonConstBufferDevice struct {
	BufferIdx   int32 `json:"buffer_idx"`
	DeviceType  Enum  `json:"device_type"`
	DeviceIndex int8  `json:"device_index"`
}

// Buffer is the JSON form of pte.Buffer.
type Buffer struct {
	Storage *Bytes `json:"storage"`
}

// BackendDelegateInlineData is the JSON form of pte.BackendDelegateInlineData.
type BackendDelegateInlineData struct {
	Data *Bytes `json:"data"`
}

// DataSegment is the JSON form of pte.DataSegment.
type DataSegment struct {
	Offset uint64 `json:"offset"`
	Size   uint64 `json:"size"`
}

// SubsegmentOffsets is the JSON form of pte.SubsegmentOffsets.
type SubsegmentOffsets struct {
	SegmentIndex uint32   `json:"segment_index"`
	Offsets      []uint64 `json:"offsets"`
}

// NamedData is the JSON form of pte.NamedData.
type NamedData struct {
	Key          string   `json:"key"`
	SegmentIndex uint32   `json:"segment_index"`
	Absent       []string `json:"-"` // absent string fields, by JSON name: written null
}

// Bytes summarises a byte vector: its length and, when hashing is on, the
// lowercase hex SHA-256 of its bytes.
type Bytes struct {
	Size   int    `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
}

// NewProgram returns the JSON form of p. With hash set, byte vectors carry
// their SHA-256. p must not be nil.
func NewProgram(p *pte.Program, hash bool) *Program {
	c := converter{hash: hash}
	return c.program(p)
}

type converter struct{ hash bool }

// mapSlice converts each element of a slice, keeping nil apart from empty.
func mapSlice[S, D any](src []S, f func(S) D) []D {
	if src == nil {
		return nil
	}
	dst := make([]D, len(src))
	for i, s := range src {
		dst[i] = f(s)
	}
	return dst
}

// ptr converts a pointer, keeping nil.
func ptr[S, D any](src *S, f func(*S) *D) *D {
	if src == nil {
		return nil
	}
	return f(src)
}

func (c *converter) bytes(b []byte) *Bytes {
	if b == nil {
		return nil
	}
	out := &Bytes{Size: len(b)}
	if c.hash {
		sum := sha256.Sum256(b)
		out.SHA256 = hex.EncodeToString(sum[:])
	}
	return out
}

func (c *converter) program(p *pte.Program) *Program {
	return &Program{
		Version:       p.Version,
		ExecutionPlan: mapSlice(p.ExecutionPlan, c.plan),
		ConstantBuffer: mapSlice(p.ConstantBuffer, func(b *pte.Buffer) *Buffer {
			return ptr(b, func(b *pte.Buffer) *Buffer { return &Buffer{Storage: c.bytes(b.Storage)} })
		}),
		BackendDelegateData: mapSlice(p.BackendDelegateData, func(d *pte.BackendDelegateInlineData) *BackendDelegateInlineData {
			return ptr(d, func(d *pte.BackendDelegateInlineData) *BackendDelegateInlineData {
				return &BackendDelegateInlineData{Data: c.bytes(d.Data)}
			})
		}),
		Segments: mapSlice(p.Segments, func(s *pte.DataSegment) *DataSegment {
			return ptr(s, func(s *pte.DataSegment) *DataSegment { return &DataSegment{Offset: s.Offset, Size: s.Size} })
		}),
		ConstantSegment:     ptr(p.ConstantSegment, subsegments),
		MutableDataSegments: mapSlice(p.MutableDataSegments, func(s *pte.SubsegmentOffsets) *SubsegmentOffsets { return ptr(s, subsegments) }),
		NamedData: mapSlice(p.NamedData, func(n *pte.NamedData) *NamedData {
			return ptr(n, func(n *pte.NamedData) *NamedData {
				return &NamedData{Key: n.Key, SegmentIndex: n.SegmentIndex, Absent: absent(n.Absent, "key", n.Key)}
			})
		}),
	}
}

func subsegments(s *pte.SubsegmentOffsets) *SubsegmentOffsets {
	return &SubsegmentOffsets{SegmentIndex: s.SegmentIndex, Offsets: s.Offsets}
}

func (c *converter) plan(ep *pte.ExecutionPlan) *ExecutionPlan {
	if ep == nil {
		return nil
	}
	return &ExecutionPlan{
		Name: ep.Name,
		ContainerMetaType: ptr(ep.ContainerMetaType, func(m *pte.ContainerMetadata) *ContainerMetadata {
			return &ContainerMetadata{EncodedInpStr: m.EncodedInpStr, EncodedOutStr: m.EncodedOutStr,
				Absent: absent(m.Absent, "encoded_inp_str", m.EncodedInpStr, "encoded_out_str", m.EncodedOutStr)}
		}),
		Values:              mapSlice(ep.Values, c.evalue),
		Inputs:              ep.Inputs,
		Outputs:             ep.Outputs,
		Chains:              mapSlice(ep.Chains, chain),
		Operators:           mapSlice(ep.Operators, func(o *pte.Operator) *Operator { return ptr(o, operator) }),
		Delegates:           mapSlice(ep.Delegates, c.delegate),
		NonConstBufferSizes: ep.NonConstBufferSizes,
		NonConstBufferDevice: mapSlice(ep.NonConstBufferDevice, func(d *pte.NonConstBufferDevice) *NonConstBufferDevice {
			return ptr(d, func(d *pte.NonConstBufferDevice) *NonConstBufferDevice {
				return &NonConstBufferDevice{
					BufferIdx:   d.BufferIdx,
					DeviceType:  enum(d.DeviceType, int64(d.DeviceType)),
					DeviceIndex: d.DeviceIndex,
				}
			})
		}),
		Absent: absent(ep.Absent, "name", ep.Name),
	}
}

func operator(o *pte.Operator) *Operator {
	return &Operator{Name: o.Name, Overload: o.Overload, Absent: absent(o.Absent, "name", o.Name, "overload", o.Overload)}
}

func (c *converter) delegate(d *pte.BackendDelegate) *BackendDelegate {
	if d == nil {
		return nil
	}
	return &BackendDelegate{
		ID: d.ID,
		Processed: ptr(d.Processed, func(r *pte.BackendDelegateDataReference) *BackendDelegateDataReference {
			return &BackendDelegateDataReference{Location: location(r.Location), Index: r.Index}
		}),
		CompileSpecs: mapSlice(d.CompileSpecs, func(s *pte.CompileSpec) *CompileSpec {
			return ptr(s, func(s *pte.CompileSpec) *CompileSpec {
				return &CompileSpec{Key: s.Key, Value: c.bytes(s.Value), Absent: absent(s.Absent, "key", s.Key)}
			})
		}),
		Absent: absent(d.Absent, "id", d.ID),
	}
}

func location(l pte.DataLocation) Enum {
	return enum(l, int64(l))
}

func (c *converter) evalue(v *pte.EValue) *EValue {
	if v == nil {
		return nil
	}
	if isNil(v.Val) {
		return nilEValue(v.Val) // NONE, or a tag without its table (union.go)
	}
	tag := v.Val.KernelType()
	out := &EValue{ValType: enum(tag, int64(tag))}
	switch x := v.Val.(type) {
	case *pte.Null:
		out.Val = &NullVal{}
	case *pte.Int:
		out.Val = &IntVal{IntVal: x.IntVal}
	case *pte.Bool:
		out.Val = &BoolVal{BoolVal: x.BoolVal}
	case *pte.Double:
		out.Val = &DoubleVal{DoubleVal: Float(x.DoubleVal)}
	case *pte.String:
		out.Val = &StringVal{StringVal: x.StringVal, Absent: absent(x.Absent, "string_val", x.StringVal)}
	case *pte.IntList:
		out.Val = &IntListVal{Items: x.Items}
	case *pte.DoubleList:
		out.Val = &DoubleListVal{Items: mapSlice(x.Items, func(f float64) Float { return Float(f) })}
	case *pte.BoolList:
		out.Val = &BoolListVal{Items: x.Items}
	case *pte.TensorList:
		out.Val = &TensorListVal{Items: x.Items}
	case *pte.OptionalTensorList:
		out.Val = &TensorListVal{Items: x.Items}
	case *pte.Tensor:
		out.Val = tensor(x)
	default:
		// *pte.UnknownValue: the tag is reported, the table cannot be.
		out.ValType = Enum{Value: int64(tag)}
	}
	return out
}

func tensor(t *pte.Tensor) *Tensor {
	return &Tensor{
		ScalarType:    enum(t.ScalarType, int64(t.ScalarType)),
		StorageOffset: t.StorageOffset,
		Sizes:         t.Sizes,
		DimOrder:      mapSlice(t.DimOrder, func(u uint8) int { return int(u) }),
		RequiresGrad:  t.RequiresGrad,
		DataBufferIdx: t.DataBufferIdx,
		AllocationInfo: ptr(t.AllocationInfo, func(a *pte.AllocationDetails) *AllocationDetails {
			return &AllocationDetails{MemoryID: a.MemoryID, MemoryOffsetLow: a.MemoryOffsetLow, MemoryOffsetHigh: a.MemoryOffsetHigh}
		}),
		Layout:        t.Layout,
		ShapeDynamism: enum(t.ShapeDynamism, int64(t.ShapeDynamism)),
		ExtraTensorInfo: ptr(t.ExtraTensorInfo, func(e *pte.ExtraTensorInfo) *ExtraTensorInfo {
			return &ExtraTensorInfo{
				MutableDataSegmentsIdx: e.MutableDataSegmentsIdx,
				FullyQualifiedName:     e.FullyQualifiedName,
				Location:               enum(e.Location, int64(e.Location)),
				DeviceType:             enum(e.DeviceType, int64(e.DeviceType)),
				DeviceIndex:            e.DeviceIndex,
				Absent:                 absent(e.Absent, "fully_qualified_name", e.FullyQualifiedName),
			}
		}),
	}
}

func chain(ch *pte.Chain) *Chain {
	if ch == nil {
		return nil
	}
	return &Chain{
		Inputs:       ch.Inputs,
		Outputs:      ch.Outputs,
		Instructions: mapSlice(ch.Instructions, instruction),
		Stacktrace: mapSlice(ch.Stacktrace, func(fl *pte.FrameList) *FrameList {
			return ptr(fl, func(fl *pte.FrameList) *FrameList {
				return &FrameList{Items: mapSlice(fl.Items, func(f *pte.Frame) *Frame {
					return ptr(f, func(f *pte.Frame) *Frame {
						return &Frame{Filename: f.Filename, Lineno: f.Lineno, Name: f.Name, Context: f.Context,
							Absent: absent(f.Absent, "filename", f.Filename, "name", f.Name, "context", f.Context)}
					})
				})}
			})
		}),
	}
}

func instruction(in *pte.Instruction) *Instruction {
	if in == nil {
		return nil
	}
	if isNil(in.Args) {
		return nilInstruction(in.Args) // NONE, or a tag without its table (union.go)
	}
	tag := in.Args.InstructionType()
	out := &Instruction{InstrArgsType: enum(tag, int64(tag))}
	switch x := in.Args.(type) {
	case *pte.KernelCall:
		out.InstrArgs = &KernelCall{OpIndex: x.OpIndex, Args: x.Args}
	case *pte.DelegateCall:
		out.InstrArgs = &DelegateCall{DelegateIndex: x.DelegateIndex, Args: x.Args}
	case *pte.MoveCall:
		out.InstrArgs = &MoveCall{MoveFrom: x.MoveFrom, MoveTo: x.MoveTo}
	case *pte.JumpFalseCall:
		out.InstrArgs = &JumpFalseCall{CondValueIndex: x.CondValueIndex, DestinationInstruction: x.DestinationInstruction}
	case *pte.FreeCall:
		out.InstrArgs = &FreeCall{ValueIndex: x.ValueIndex}
	default:
		out.InstrArgsType = Enum{Value: int64(tag)}
	}
	return out
}

// absent returns the names of the (name, value) pairs that list keeps
// absent: listed and still empty. It returns nil when there are none.
func absent(list []string, pairs ...string) []string {
	if len(list) == 0 {
		return nil
	}
	var out []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" && slices.Contains(list, pairs[i]) {
			out = append(out, pairs[i])
		}
	}
	return out
}

// encodeJSON encodes v without a trailing newline and without escaping <,
// > and &, as Marshal promises.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// marshalAbsent encodes the struct v (a method-less copy of one of this
// file's types) member by member, writing null for the string members
// listed in absent.
func marshalAbsent(v any, absent []string) ([]byte, error) {
	if len(absent) == 0 {
		return encodeJSON(v)
	}
	rv := reflect.ValueOf(v)
	b := []byte{'{'}
	for i := 0; i < rv.NumField(); i++ {
		name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, name)
		b = append(b, ':')
		f := rv.Field(i)
		if f.Kind() == reflect.String && f.String() == "" && slices.Contains(absent, name) {
			b = append(b, "null"...)
			continue
		}
		m, err := encodeJSON(f.Interface())
		if err != nil {
			return nil, err
		}
		b = append(b, m...)
	}
	return append(b, '}'), nil
}

// unmarshalAbsent decodes b into dst (a method-less view of one of this
// file's types) and sets *absent to the string members that are null.
func unmarshalAbsent(b []byte, dst any, absent *[]string) error {
	if err := json.Unmarshal(b, dst); err != nil {
		return err
	}
	*absent = nil
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return err
	}
	t := reflect.TypeOf(dst).Elem()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if t.Field(i).Type.Kind() == reflect.String && string(members[name]) == "null" {
			*absent = append(*absent, name)
		}
	}
	return nil
}

// MarshalJSON writes the plan, with null for absent strings.
func (x ExecutionPlan) MarshalJSON() ([]byte, error) {
	type plain ExecutionPlan
	return marshalAbsent(plain(x), x.Absent)
}

// UnmarshalJSON reads the plan; null strings are recorded in Absent.
func (x *ExecutionPlan) UnmarshalJSON(b []byte) error {
	type plain ExecutionPlan
	return unmarshalAbsent(b, (*plain)(x), &x.Absent)
}

// MarshalJSON writes the metadata, with null for absent strings.
func (x ContainerMetadata) MarshalJSON() ([]byte, error) {
	type plain ContainerMetadata
	return marshalAbsent(plain(x), x.Absent)
}

// UnmarshalJSON reads the metadata; null strings are recorded in Absent.
func (x *ContainerMetadata) UnmarshalJSON(b []byte) error {
	type plain ContainerMetadata
	return unmarshalAbsent(b, (*plain)(x), &x.Absent)
}

// MarshalJSON writes the value, with null for an absent string.
func (x StringVal) MarshalJSON() ([]byte, error) {
	type plain StringVal
	return marshalAbsent(plain(x), x.Absent)
}

// UnmarshalJSON reads the value; a null string is recorded in Absent.
func (x *StringVal) UnmarshalJSON(b []byte) error {
	type plain StringVal
	return unmarshalAbsent(b, (*plain)(x), &x.Absent)
}

// MarshalJSON writes the info, with null for an absent name.
func (x ExtraTensorInfo) MarshalJSON() ([]byte, error) {
	type plain ExtraTensorInfo
	return marshalAbsent(plain(x), x.Absent)
}

// UnmarshalJSON reads the info; a null name is recorded in Absent.
func (x *ExtraTensorInfo) UnmarshalJSON(b []byte) error {
	type plain ExtraTensorInfo
	return unmarshalAbsent(b, (*plain)(x), &x.Absent)
}

// MarshalJSON writes the operator, with null for absent strings.
func (x Operator) MarshalJSON() ([]byte, error) {
	type plain Operator
	return marshalAbsent(plain(x), x.Absent)
}

// UnmarshalJSON reads the operator; null strings are recorded in Absent.
func (x *Operator) UnmarshalJSON(b []byte) error {
	type plain Operator
	return unmarshalAbsent(b, (*plain)(x), &x.Absent)
}

// MarshalJSON writes the frame, with null for absent strings.
func (x Frame) MarshalJSON() ([]byte, error) {
	type plain Frame
	return marshalAbsent(plain(x), x.Absent)
}

// UnmarshalJSON reads the frame; null strings are recorded in Absent.
func (x *Frame) UnmarshalJSON(b []byte) error {
	type plain Frame
	return unmarshalAbsent(b, (*plain)(x), &x.Absent)
}

// MarshalJSON writes the delegate, with null for an absent id.
func (x BackendDelegate) MarshalJSON() ([]byte, error) {
	type plain BackendDelegate
	return marshalAbsent(plain(x), x.Absent)
}

// UnmarshalJSON reads the delegate; a null id is recorded in Absent.
func (x *BackendDelegate) UnmarshalJSON(b []byte) error {
	type plain BackendDelegate
	return unmarshalAbsent(b, (*plain)(x), &x.Absent)
}

// MarshalJSON writes the compile spec, with null for an absent key.
func (x CompileSpec) MarshalJSON() ([]byte, error) {
	type plain CompileSpec
	return marshalAbsent(plain(x), x.Absent)
}

// UnmarshalJSON reads the compile spec; a null key is recorded in Absent.
func (x *CompileSpec) UnmarshalJSON(b []byte) error {
	type plain CompileSpec
	return unmarshalAbsent(b, (*plain)(x), &x.Absent)
}

// MarshalJSON writes the entry, with null for an absent key.
func (x NamedData) MarshalJSON() ([]byte, error) {
	type plain NamedData
	return marshalAbsent(plain(x), x.Absent)
}

// UnmarshalJSON reads the entry; a null key is recorded in Absent.
func (x *NamedData) UnmarshalJSON(b []byte) error {
	type plain NamedData
	return unmarshalAbsent(b, (*plain)(x), &x.Absent)
}
