package pte

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/ptekit/ptekit/internal/fbs/program"
	"github.com/ptekit/ptekit/internal/testkit"
)

// sampleProgram is a small program that exercises every table of the
// schema, both union kinds and absent/empty vectors.
func sampleProgram() *Program {
	return &Program{
		executionPlan: []*ExecutionPlan{{
			Name:              "forward",
			ContainerMetaType: &ContainerMetadata{EncodedInpStr: "T2#1#0(T1#1($),D0())", EncodedOutStr: "$"},
			Values: []*EValue{
				{Val: &Tensor{ScalarType: ScalarTypeFLOAT, Sizes: []int32{2, 3}, DimOrder: []uint8{0, 1},
					DataBufferIdx: 1, ExtraTensorInfo: &ExtraTensorInfo{FullyQualifiedName: "w", MutableDataSegmentsIdx: 7}}},
				{Val: &Tensor{ScalarType: ScalarTypeFLOAT, Sizes: []int32{}, DimOrder: []uint8{},
					AllocationInfo: &AllocationDetails{MemoryID: 1, MemoryOffsetLow: 64, MemoryOffsetHigh: 1}}},
				{Val: &Null{}},
				{Val: &Int{IntVal: -5}},
				{Val: &Bool{BoolVal: true}},
				{Val: &Double{DoubleVal: 0.5}},
				{Val: &String{StringVal: "hello"}},
				{Val: &IntList{Items: []int64{3, 3}}},
				{Val: &DoubleList{Items: []float64{1.5}}},
				{Val: &BoolList{Items: []bool{true, false}}},
				{Val: &TensorList{Items: []int32{0, 1}}},
				{Val: &OptionalTensorList{Items: []int32{-1, 0}}},
				{},
			},
			Inputs:  []int32{1},
			Outputs: []int32{},
			Chains: []*Chain{{
				Inputs: []int32{}, Outputs: []int32{},
				Instructions: []*Instruction{
					{Args: &KernelCall{OpIndex: 0, Args: []int32{0, 1}}},
					{Args: &DelegateCall{DelegateIndex: 0, Args: []int32{1, 0}}},
					{Args: &MoveCall{MoveFrom: 1, MoveTo: 0}},
					{Args: &JumpFalseCall{CondValueIndex: 4, DestinationInstruction: 0}},
					{Args: &FreeCall{ValueIndex: 1}},
					{},
				},
				Stacktrace: []*FrameList{{Items: []*Frame{{Filename: "m.py", Lineno: 3, Name: "f", Context: "x+1"}}}},
			}},
			Operators: []*Operator{{Name: "aten::add", Overload: "out"}},
			Delegates: []*BackendDelegate{
				{ID: "TensorRTBackend", Processed: &BackendDelegateDataReference{Location: DataLocationSEGMENT, Index: 1},
					CompileSpecs: []*CompileSpec{{Key: "weight_streaming_budget", Value: []byte("1024")}, {Key: "e", Value: []byte{}}}},
				{ID: "TensorRTBackend", Processed: &BackendDelegateDataReference{Location: DataLocationINLINE, Index: 1}},
			},
			NonConstBufferSizes:  []int64{0, 1 << 33},
			NonConstBufferDevice: []*NonConstBufferDevice{{BufferIdx: 1, DeviceType: DeviceTypeCUDA, DeviceIndex: 2}},
		}},
		ConstantBuffer:      []*Buffer{{Storage: []byte{}}, {Storage: []byte{1, 2, 3}}},
		BackendDelegateData: []*BackendDelegateInlineData{{Data: []byte{}}, {Data: []byte("TR01 inline")}},
		Segments:            []*DataSegment{{Offset: 0, Size: 16}, {Offset: 128, Size: 5}},
		ConstantSegment:     &SubsegmentOffsets{SegmentIndex: 0, Offsets: []uint64{0, 8}},
		MutableDataSegments: []*SubsegmentOffsets{{SegmentIndex: 0, Offsets: []uint64{0}}},
		NamedData:           []*NamedData{{Key: "k", SegmentIndex: 1}},
	}
}

// tableOffset returns the vtable entry of field vt (0 when absent).
func tableOffset(t flatbuffers.Table, vt flatbuffers.VOffsetT) flatbuffers.VOffsetT {
	return t.Offset(vt)
}

func identityRefs(p *Program) *segmentRefs {
	return &segmentRefs{layout: p.Segments}
}

func TestEncodeProgramSchemaView(t *testing.T) {
	p := sampleProgram()
	buf, err := encodeProgram(p, identityRefs(p), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(buf)%16 != 0 {
		t.Errorf("flatbuffer length %d is not a multiple of 16", len(buf))
	}
	if string(buf[4:8]) != "ET12" {
		t.Fatalf("identifier %q", buf[4:8])
	}
	root := program.GetRootAsProgram(buf, 0)
	if got := root.ExecutionPlanLength(); got != 1 {
		t.Fatalf("plans = %d", got)
	}
	var ep program.ExecutionPlan
	root.ExecutionPlan(&ep, 0)
	if string(ep.Name()) != "forward" || ep.ValuesLength() != 13 || ep.OutputsLength() != 0 {
		t.Errorf("plan: name %q values %d outputs %d", ep.Name(), ep.ValuesLength(), ep.OutputsLength())
	}
	// Present-but-empty vs absent: outputs is present (empty), the plan's
	// non_const_buffer_device is present, the Null value has a table.
	if tableOffset(ep.Table(), 4+2*4) == 0 {
		t.Error("empty outputs vector was written absent")
	}
	if ep.NonConstBufferSizes(1) != 1<<33 {
		t.Errorf("non_const_buffer_sizes[1] = %d", ep.NonConstBufferSizes(1))
	}
	var ev program.EValue
	ep.Values(&ev, 12)
	if ev.ValType() != program.KernelTypesNONE || tableOffset(ev.Table(), 6) != 0 {
		t.Error("NONE value carries a payload")
	}
	ep.Values(&ev, 2)
	if ev.ValType() != program.KernelTypesNull {
		t.Errorf("value 2 tag %v", ev.ValType())
	}
	// Inline payloads honour force_align: 16 on their element data.
	var bd program.BackendDelegateInlineData
	root.BackendDelegateData(&bd, 1)
	data := bd.DataBytes()
	if string(data) != "TR01 inline" {
		t.Fatalf("inline data %q", data)
	}
	if off := bytes.Index(buf, data); off%16 != 0 {
		t.Errorf("inline data at %d, not 16-aligned", off)
	}
	var cb program.Buffer
	root.ConstantBuffer(&cb, 1)
	if off := bytes.Index(buf, []byte{1, 2, 3}); off%16 != 0 || !bytes.Equal(cb.StorageBytes(), []byte{1, 2, 3}) {
		t.Errorf("constant buffer at %d (%v)", off, cb.StorageBytes())
	}
	var seg program.DataSegment
	root.Segments(&seg, 1)
	if seg.Offset() != 128 || seg.Size() != 5 {
		t.Errorf("segment 1 = {%d,%d}", seg.Offset(), seg.Size())
	}
	// The scalar default 0 (Program.version) is not stored.
	if tableOffset(root.Table(), 4) != 0 {
		t.Error("default version was written")
	}
	if r := binary.LittleEndian.Uint32(buf); int(r) >= len(buf) {
		t.Errorf("root offset %d out of range", r)
	}
}

func TestEncodeRemapsSegmentReferences(t *testing.T) {
	p := sampleProgram()
	refs := &segmentRefs{remap: []int{0, 0}, layout: []*DataSegment{{0, 16}}}
	buf, err := encodeProgram(p, refs, 0)
	if err != nil {
		t.Fatal(err)
	}
	root := program.GetRootAsProgram(buf, 0)
	var nd program.NamedData
	root.NamedData(&nd, 0)
	var ep program.ExecutionPlan
	root.ExecutionPlan(&ep, 0)
	var d program.BackendDelegate
	ep.Delegates(&d, 0)
	var d1 program.BackendDelegate
	ep.Delegates(&d1, 1)
	if nd.SegmentIndex() != 0 || d.Processed(nil).Index() != 0 || root.SegmentsLength() != 1 {
		t.Errorf("not remapped: named %d delegate %d segments %d", nd.SegmentIndex(), d.Processed(nil).Index(), root.SegmentsLength())
	}
	if d1.Processed(nil).Index() != 1 {
		t.Error("INLINE index was remapped as a segment index")
	}
	// p itself is untouched.
	if p.NamedData[0].SegmentIndex != 1 || p.Plan(0).Delegates[0].Processed.Index != 1 || len(p.Segments) != 2 {
		t.Error("encodeProgram modified its input")
	}
	// A reference beyond the given payloads cannot be remapped.
	p.NamedData[0].SegmentIndex = 9
	_, err = encodeProgram(p, refs, 0)
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Path != "named_data[0].segment_index" {
		t.Fatalf("err = %v", err)
	}
}

func TestEncodeRefusesUnwritable(t *testing.T) {
	cases := []struct {
		name string
		edit func(p *Program)
		path string
	}{
		{"unknown value with a known tag", func(p *Program) { p.Plan(0).Values[3].Val = &UnknownValue{Tag: KernelTypesInt} }, "execution_plan[0].values[3].val"},
		{"unknown instruction with a known tag", func(p *Program) {
			p.Plan(0).Chains[0].Instructions[2].Args = &UnknownInstruction{Tag: InstructionArgumentsNONE}
		}, "execution_plan[0].chains[0].instructions[2].instr_args"},
		{"typed nil value", func(p *Program) { p.Plan(0).Values[0].Val = (*Tensor)(nil) }, "execution_plan[0].values[0].val"},
		{"nil table in vector", func(p *Program) { p.Plan(0).Delegates[0].CompileSpecs[1] = nil }, "execution_plan[0].delegates[0].compile_specs[1]"},
		{"nil frame", func(p *Program) { p.Plan(0).Chains[0].Stacktrace[0].Items[0] = nil }, "execution_plan[0].chains[0].stacktrace[0].items[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := sampleProgram()
			c.edit(p)
			_, err := encodeProgram(p, identityRefs(p), 0)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want *FormatError", err)
			}
			if fe.Path != c.path {
				t.Errorf("path = %q, want %q", fe.Path, c.path)
			}
		})
	}
}

func TestEncodeTooLarge(t *testing.T) {
	old := maxProgramSize
	defer func() { maxProgramSize = old }()
	maxProgramSize = 4096
	p := sampleProgram()
	p.BackendDelegateData[1].Data = make([]byte, 5000)
	_, err := encodeProgram(p, identityRefs(p), 32)
	if !errors.Is(err, ErrProgramTooLarge) || !strings.Contains(err.Error(), "segments") {
		t.Fatalf("err = %v", err)
	}
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("not a *FormatError: %v", err)
	}
	// Just under the inline limit, but the tables push it over.
	p.BackendDelegateData[1].Data = make([]byte, 4000)
	if _, err = encodeProgram(p, identityRefs(p), 32); !errors.Is(err, ErrProgramTooLarge) {
		t.Fatalf("err = %v", err)
	}
	p.BackendDelegateData[1].Data = make([]byte, 100)
	if _, err = encodeProgram(p, identityRefs(p), 32); err != nil {
		t.Fatalf("small program refused: %v", err)
	}
}

// TestWriteUnknownUnionMembers checks that unknown union members survive a
// round trip as their tags (without Strict; Strict refuses them as Verify
// does), in a generated program and in every damaged vector that has one.
func TestWriteUnknownUnionMembers(t *testing.T) {
	p := wrProgram(0)
	ep := p.Plan(0)
	ep.Values = append(ep.Values, &EValue{Val: &UnknownValue{Tag: 99}})
	ep.Chains[0].Instructions = append(ep.Chains[0].Instructions, &Instruction{Args: &UnknownInstruction{Tag: 42}})
	var out bytes.Buffer
	info, err := Write(&out, p, []*io.SectionReader{wrSection(nil)}, nil)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	got := wrOpenBytes(t, out.Bytes())
	if d := wrDiff(wrWithSegments(p, info.Segments), got.Program); d != "" {
		t.Errorf("round trip: %s", d)
	}
	var ve *VerifyError
	if _, err := Write(io.Discard, p, []*io.SectionReader{wrSection(nil)}, &WriteOptions{Strict: true}); !errors.As(err, &ve) {
		t.Errorf("Strict: err = %v, want a *VerifyError", err)
	}

	for _, path := range testkit.Glob(t, testkit.SharedDir(t, "vectors/pte-bad"), "*.pte") {
		f, err := Open(path)
		if err != nil {
			continue
		}
		if hasUnknownMember(f.Program) {
			t.Run(filepath.Base(path), func(t *testing.T) {
				srcs, err := f.SegmentReaders()
				if err != nil {
					t.Skipf("segments: %v", err)
				}
				var buf bytes.Buffer
				if _, err := Write(&buf, f.Program, srcs, nil); err != nil {
					t.Fatalf("Write: %v", err)
				}
				got := wrOpenBytes(t, buf.Bytes())
				if !hasUnknownMember(got.Program) {
					t.Error("unknown member lost")
				}
			})
		}
		f.Close()
	}
}

// hasUnknownMember reports whether p holds an *UnknownValue or
// *UnknownInstruction.
func hasUnknownMember(p *Program) bool {
	for _, ep := range p.Plans() {
		for _, ev := range ep.Values {
			if _, ok := ev.Val.(*UnknownValue); ok {
				return true
			}
		}
		for _, c := range ep.Chains {
			for _, in := range c.Instructions {
				if _, ok := in.Args.(*UnknownInstruction); ok {
					return true
				}
			}
		}
	}
	return false
}

// TestEncodeBuilderGrows: the builder starts from an estimate, not the
// bound, and grows when it is short. Starting it at one byte, so that it
// grows all the way, must give the same bytes for every shared program
// and the sample one; and the estimate never exceeds the bound, nor, past
// what the builder can grow to, differs from it.
func TestEncodeBuilderGrows(t *testing.T) {
	progs := map[string]*Program{"sample": sampleProgram()}
	for _, path := range testkit.Glob(t, testkit.SharedDir(t, "corpus"), "*.pte") {
		f, err := Open(path)
		if err != nil {
			t.Fatal(err) // every real program must read
		}
		progs[filepath.Base(path)] = f.Program
		f.Close()
	}
	for name, p := range progs {
		want, err := encodeProgram(p, identityRefs(p), 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		builderSize = func(int64, int64) int64 { return 1 }
		got, err := encodeProgram(p, identityRefs(p), 0)
		builderSize = initialBuilderSize
		if err != nil {
			t.Fatalf("%s, growing from one byte: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: growing from one byte gives other bytes (%d, want %d)", name, len(got), len(want))
		}
		bound := sizeBound(p, identityRefs(p))
		if est := initialBuilderSize(bound, inlineBytes(p)); est > bound && est > 1024 {
			t.Errorf("%s: estimate %d over the bound %d", name, est, bound)
		}
	}
	if got := initialBuilderSize(growableBound, 0); got != growableBound {
		t.Errorf("a bound the builder cannot grow to starts at %d, want it whole (%d)", got, int64(growableBound))
	}
}
