package pte

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/ptekit/ptekit/internal/fbs/program"
)

// abProgram returns a program with every kind of table that has string
// fields: a container spec, a String value, an EXTERNAL tensor, an
// operator, a stack frame, a delegate with a compile spec and named data.
func abProgram() *Program {
	p := wrProgram(1, 0)
	ep := p.Plan(0)
	ep.ContainerMetaType = &ContainerMetadata{EncodedInpStr: "in", EncodedOutStr: "out"}
	ep.Values = append(ep.Values,
		&EValue{Val: &String{StringVal: "s"}},
		&EValue{Val: &Tensor{ScalarType: ScalarTypeFLOAT, Sizes: []int32{1}, DimOrder: []uint8{0},
			ExtraTensorInfo: &ExtraTensorInfo{FullyQualifiedName: "w", Location: TensorDataLocationEXTERNAL}}})
	ep.Operators = []*Operator{{Name: "aten::add", Overload: "out"}}
	ch := ep.Chains[0]
	ch.Stacktrace = []*FrameList{{Items: []*Frame{{Filename: "f.py", Lineno: 3, Name: "forward", Context: "x + y"}}}}
	ep.Delegates[0].CompileSpecs = []*CompileSpec{{Key: "k", Value: []byte("v")}}
	return p
}

// abTables returns, for each table kind of abProgram, the model object that
// has Absent and its decoded counterpart in f.
func abTables(p *Program) map[string]any {
	ep := p.Plan(0)
	return map[string]any{
		"ExecutionPlan":     ep,
		"ContainerMetadata": ep.ContainerMetaType,
		"String":            ep.Values[1].Val,
		"ExtraTensorInfo":   ep.Values[2].Val.(*Tensor).ExtraTensorInfo,
		"Operator":          ep.Operators[0],
		"Frame":             ep.Chains[0].Stacktrace[0].Items[0],
		"BackendDelegate":   ep.Delegates[0],
		"CompileSpec":       ep.Delegates[0].CompileSpecs[0],
		"NamedData":         p.NamedData[0],
	}
}

// abFileTables returns the tables of abTables in a file written from
// abProgram, found from their parents where the decoder does not record
// positions.
func abFileTables(t *testing.T, f *File) map[string]fbTab {
	t.Helper()
	p := f.Program
	ep := p.Plan(0)
	plan := vrTab(t, f, ep)
	sub := func(parent fbTab, slot int) fbTab {
		c, ok := parent.sub(slot)
		if !ok {
			t.Fatalf("table at %d: slot %d absent", parent.pos, slot)
		}
		return c
	}
	meta := sub(plan, 1)
	str := sub(vrTab(t, f, ep.Values[1]), 1)
	extra := sub(vrTab(t, f, ep.Values[2].Val), 9)
	frames, _ := vrTab(t, f, ep.Chains[0]).tableAt(3, 0)
	frame, _ := frames.tableAt(0, 0)
	return map[string]fbTab{
		"ExecutionPlan": plan, "ContainerMetadata": meta, "String": str, "ExtraTensorInfo": extra,
		"Operator": vrTab(t, f, ep.Operators[0]), "Frame": frame, "BackendDelegate": vrTab(t, f, ep.Delegates[0]),
		"CompileSpec": vrTab(t, f, ep.Delegates[0].CompileSpecs[0]), "NamedData": vrTab(t, f, p.NamedData[0]),
	}
}

// abSetAbsent clears the named string fields of x and lists them absent.
func abSetAbsent(t *testing.T, x any, names ...string) {
	t.Helper()
	set := func(absent *[]string, fields map[string]*string) {
		for _, n := range names {
			s, ok := fields[n]
			if !ok {
				t.Fatalf("%T has no string field %q", x, n)
			}
			*s = ""
		}
		*absent = names
	}
	switch y := x.(type) {
	case *ExecutionPlan:
		set(&y.Absent, map[string]*string{"name": &y.Name})
	case *ContainerMetadata:
		set(&y.Absent, map[string]*string{"encoded_inp_str": &y.EncodedInpStr, "encoded_out_str": &y.EncodedOutStr})
	case *String:
		set(&y.Absent, map[string]*string{"string_val": &y.StringVal})
	case *ExtraTensorInfo:
		set(&y.Absent, map[string]*string{"fully_qualified_name": &y.FullyQualifiedName})
	case *Operator:
		set(&y.Absent, map[string]*string{"name": &y.Name, "overload": &y.Overload})
	case *Frame:
		set(&y.Absent, map[string]*string{"filename": &y.Filename, "name": &y.Name, "context": &y.Context})
	case *BackendDelegate:
		set(&y.Absent, map[string]*string{"id": &y.ID})
	case *CompileSpec:
		set(&y.Absent, map[string]*string{"key": &y.Key})
	case *NamedData:
		set(&y.Absent, map[string]*string{"key": &y.Key})
	default:
		t.Fatalf("no Absent in %T", x)
	}
}

// abWrite writes p with an empty constant segment, an engine and a named
// blob (segments 0, 1 and 0 again for named data "a").
func abWrite(t *testing.T, p *Program) *File {
	t.Helper()
	return shOpen(t, vlWrite(t, p, nil, []byte("engine")))
}

// TestAbsentStringsDecode builds, with the generated schema builders (not
// our encoder), a program that leaves out or empties every string field,
// and checks that decoding lists the absent ones in schema order and
// leaves present empty strings alone.
func TestAbsentStringsDecode(t *testing.T) {
	b := flatbuffers.NewBuilder(1024)
	tables := func(xs ...flatbuffers.UOffsetT) flatbuffers.UOffsetT {
		b.StartVector(4, len(xs), 4)
		for i := len(xs) - 1; i >= 0; i-- {
			b.PrependUOffsetT(xs[i])
		}
		return b.EndVector(len(xs))
	}
	empty, out := b.CreateString(""), b.CreateString("o")
	program.OperatorStart(b)
	program.OperatorAddOverload(b, empty) // name absent, overload present and empty
	op := program.OperatorEnd(b)
	program.FrameStart(b)
	program.FrameAddLineno(b, 3)
	program.FrameAddName(b, empty) // filename and context absent
	frame := program.FrameEnd(b)
	frames := tables(frame)
	program.FrameListStart(b)
	program.FrameListAddItems(b, frames)
	trace := tables(program.FrameListEnd(b))
	program.ChainStart(b)
	program.ChainAddStacktrace(b, trace)
	chain := program.ChainEnd(b)
	val := b.CreateByteVector([]byte("v"))
	program.CompileSpecStart(b)
	program.CompileSpecAddValue(b, val) // key absent
	specs := tables(program.CompileSpecEnd(b))
	program.BackendDelegateStart(b)
	program.BackendDelegateAddCompileSpecs(b, specs) // id absent
	del := program.BackendDelegateEnd(b)
	program.StringStart(b)
	str := program.StringEnd(b) // string_val absent
	program.EValueStart(b)
	program.EValueAddValType(b, program.KernelTypesString)
	program.EValueAddVal(b, str)
	v0 := program.EValueEnd(b)
	program.ExtraTensorInfoStart(b)
	program.ExtraTensorInfoAddLocation(b, program.TensorDataLocationEXTERNAL) // fully_qualified_name absent
	extra := program.ExtraTensorInfoEnd(b)
	program.TensorStart(b)
	program.TensorAddExtraTensorInfo(b, extra)
	tensor := program.TensorEnd(b)
	program.EValueStart(b)
	program.EValueAddValType(b, program.KernelTypesTensor)
	program.EValueAddVal(b, tensor)
	v1 := program.EValueEnd(b)
	program.ContainerMetadataStart(b)
	program.ContainerMetadataAddEncodedOutStr(b, out) // encoded_inp_str absent
	meta := program.ContainerMetadataEnd(b)
	ops, chains, dels, vals := tables(op), tables(chain), tables(del), tables(v0, v1)
	program.ExecutionPlanStart(b) // name absent
	program.ExecutionPlanAddContainerMetaType(b, meta)
	program.ExecutionPlanAddValues(b, vals)
	program.ExecutionPlanAddChains(b, chains)
	program.ExecutionPlanAddOperators(b, ops)
	program.ExecutionPlanAddDelegates(b, dels)
	plans := tables(program.ExecutionPlanEnd(b))
	program.NamedDataStart(b)
	program.NamedDataAddSegmentIndex(b, 1) // key absent
	named := tables(program.NamedDataEnd(b))
	program.ProgramStart(b)
	program.ProgramAddExecutionPlan(b, plans)
	program.ProgramAddNamedData(b, named)
	b.FinishWithFileIdentifier(program.ProgramEnd(b), []byte("ET12"))
	buf := b.FinishedBytes()

	v, err := verifyProgramBuffer(buf)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := decodeProgramWith(buf, v, true, false)
	ep := p.Plan(0)
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"ExecutionPlan", ep.Absent, []string{"name"}},
		{"ContainerMetadata", ep.ContainerMetaType.Absent, []string{"encoded_inp_str"}},
		{"String", ep.Values[0].Val.(*String).Absent, []string{"string_val"}},
		{"ExtraTensorInfo", ep.Values[1].Val.(*Tensor).ExtraTensorInfo.Absent, []string{"fully_qualified_name"}},
		{"Operator", ep.Operators[0].Absent, []string{"name"}},
		{"Frame", ep.Chains[0].Stacktrace[0].Items[0].Absent, []string{"filename", "context"}},
		{"BackendDelegate", ep.Delegates[0].Absent, []string{"id"}},
		{"CompileSpec", ep.Delegates[0].CompileSpecs[0].Absent, []string{"key"}},
		{"NamedData", p.NamedData[0].Absent, []string{"key"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: Absent = %q, want %q", c.what, c.got, c.want)
		}
	}
	if ep.ContainerMetaType.EncodedOutStr != "o" {
		t.Errorf("encoded_out_str = %q", ep.ContainerMetaType.EncodedOutStr)
	}

	// Nothing absent: Absent stays nil (not empty), as wrDiff requires.
	f := abWrite(t, abProgram())
	for kind, x := range abTables(f.Program) {
		if a := reflect.ValueOf(x).Elem().FieldByName("Absent"); !a.IsNil() {
			t.Errorf("%s: Absent = %v, want nil", kind, a)
		}
	}
}

// TestAbsentStringsRoundTrip writes every string field absent, checks in
// the file's vtables that the writer left them out, and reads back an equal
// program; a present empty string stays present.
func TestAbsentStringsRoundTrip(t *testing.T) {
	p := abProgram()
	tabs := abTables(p)
	fields := map[string][]string{
		"ExecutionPlan":     {"name"},
		"ContainerMetadata": {"encoded_inp_str", "encoded_out_str"},
		"String":            {"string_val"},
		"ExtraTensorInfo":   {"fully_qualified_name"},
		"Operator":          {"name", "overload"},
		"Frame":             {"filename", "name", "context"},
		"BackendDelegate":   {"id"},
		"CompileSpec":       {"key"},
		"NamedData":         {"key"},
	}
	slots := map[string][]int{ // schema slots of the fields above
		"ExecutionPlan": {0}, "ContainerMetadata": {0, 1}, "String": {0}, "ExtraTensorInfo": {1},
		"Operator": {0, 1}, "Frame": {0, 2, 3}, "BackendDelegate": {0}, "CompileSpec": {0}, "NamedData": {0},
	}
	for kind, x := range tabs {
		abSetAbsent(t, x, fields[kind]...)
	}
	f := abWrite(t, p)
	if d := wrDiff(wrWithSegments(p, f.Program.Segments), f.Program); d != "" {
		t.Fatalf("round trip: %s", d)
	}
	for kind, tab := range abFileTables(t, f) {
		for _, slot := range slots[kind] {
			if tab.field(slot) != 0 {
				t.Errorf("%s slot %d written present", kind, slot)
			}
		}
	}

	// Present empty strings, and listed fields given a value, are written.
	p = abProgram()
	op := p.Plan(0).Operators[0]
	op.Overload = ""
	op.Absent = []string{"name"} // but Name is set: the value wins
	f = abWrite(t, p)
	got := f.Program.Plan(0).Operators[0]
	if got.Absent != nil || got.Name != "aten::add" || got.Overload != "" {
		t.Errorf("operator read back as %+v", got)
	}
	if tab := vrTab(t, f, got); tab.field(0) == 0 || tab.field(1) == 0 {
		t.Error("present strings written absent")
	}
}

// TestAbsentStringsVerify: the strings ExecuTorch dereferences are reported
// when absent (not when present and empty), with the runtime's error class.
func TestAbsentStringsVerify(t *testing.T) {
	const (
		name = "execution_plan[0].name InvalidProgram"
		id   = "execution_plan[0].delegates[0].id InvalidProgram"
		key  = "execution_plan[0].delegates[0].compile_specs[0].key InvalidProgram"
		fqn  = "execution_plan[0].values[2].val.extra_tensor_info.fully_qualified_name InvalidExternalData"
		opn  = "execution_plan[0].operators[0].name InvalidProgram"
		nd   = "named_data[0].key InvalidArgument"
	)
	cases := []struct {
		kind   string
		fields []string
		want   string
	}{
		{"ExecutionPlan", []string{"name"}, name},
		{"BackendDelegate", []string{"id"}, id},
		{"CompileSpec", []string{"key"}, key},
		{"ExtraTensorInfo", []string{"fully_qualified_name"}, fqn},
		{"Operator", []string{"name"}, opn},
		{"NamedData", []string{"key"}, nd},
		{"ContainerMetadata", []string{"encoded_inp_str", "encoded_out_str"}, ""},
		{"Frame", []string{"filename", "name", "context"}, ""},
		{"String", []string{"string_val"}, ""},
	}
	base := wrErrorFindings(abWrite(t, abProgram()))
	if len(base) != 0 {
		t.Fatalf("base program has errors %v", base)
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			p := abProgram()
			abSetAbsent(t, abTables(p)[c.kind], c.fields...)
			got := wrErrorFindings(abWrite(t, p))
			want := map[string]int{}
			if c.want != "" {
				want[c.want] = 1
			}
			if wrDiff(got, want) != "" {
				t.Errorf("errors %v, want %v", got, want)
			}
			// The same strings present and empty are no error.
			p = abProgram()
			abSetAbsent(t, abTables(p)[c.kind], c.fields...)
			for _, x := range abTables(p) {
				clearAbsent(x)
			}
			if got := wrErrorFindings(abWrite(t, p)); len(got) != 0 {
				t.Errorf("present empty strings: errors %v", got)
			}
		})
	}

	t.Run("Operator overload", func(t *testing.T) {
		p := abProgram()
		abSetAbsent(t, p.Plan(0).Operators[0], "overload")
		f := abWrite(t, p)
		var warned bool
		for _, fd := range f.Verify() {
			warned = warned || (fd.Severity == SeverityWarning && fd.Err.Path == "execution_plan[0].operators[0].overload")
			if fd.Severity == SeverityError {
				t.Errorf("unexpected error %v", fd)
			}
		}
		if !warned {
			t.Error("no warning for an absent overload")
		}
	})
	t.Run("NamedData lookup", func(t *testing.T) {
		p := abProgram()
		p.NamedData = append([]*NamedData{{Absent: []string{"key"}}}, p.NamedData...)
		f := abWrite(t, p)
		_, err := f.NamedData("a")
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Path != "named_data[0].key" || fe.Code != CodeInvalidArgument {
			t.Errorf("NamedData past a keyless entry: err %v, want InvalidArgument at named_data[0].key", err)
		}
		p.NamedData = p.NamedData[1:]
		if _, err := abWrite(t, p).NamedData("a"); err != nil {
			t.Errorf("NamedData: %v", err)
		}
	})
}

// clearAbsent empties the Absent list of a model table.
func clearAbsent(x any) { reflect.ValueOf(x).Elem().FieldByName("Absent").SetZero() }
