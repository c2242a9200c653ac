package pte

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// shWrite writes p with an empty constant segment and returns the bytes.
func shWrite(t *testing.T, p *Program) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Write(&buf, p, []*io.SectionReader{wrSection(nil)}, nil); err != nil {
		t.Fatalf("write: %v", err)
	}
	return buf.Bytes()
}

// shOpen opens b and fails the test on error.
func shOpen(t *testing.T, b []byte) *File {
	t.Helper()
	f, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("NewFile: %v", err)
	}
	return f
}

// shFieldPos returns the absolute position of slot in the table that model
// object x was decoded from.
func shFieldPos(t *testing.T, f *File, x any, slot int) uint32 {
	t.Helper()
	fp := vrTab(t, f, x).field(slot)
	if fp == 0 {
		t.Fatalf("%T slot %d is absent", x, slot)
	}
	return fp
}

// shPointAt rewrites the uoffset at field so that it refers to target.
func shPointAt(b []byte, field, target uint32) {
	binary.LittleEndian.PutUint32(b[field:], target-field)
}

// shTarget returns where the uoffset at field points.
func shTarget(b []byte, field uint32) uint32 {
	return field + binary.LittleEndian.Uint32(b[field:])
}

// TestVerifySharedStrings: the writer shares equal strings
// (CreateSharedString); the verifier must count a shared string once, so
// that realistic stack traces and many methods with one container spec
// read back, and the decoder must copy a shared string once.
func TestVerifySharedStrings(t *testing.T) {
	long := strings.Repeat("x", 4000)

	// 200 instructions whose stack traces repeat file, function and context.
	p := wrProgram(0)
	ep := p.Plan(0)
	ep.ContainerMetaType = &ContainerMetadata{EncodedInpStr: long, EncodedOutStr: long}
	ch := ep.Chains[0]
	ch.Instructions, ch.Stacktrace = []*Instruction{}, []*FrameList{}
	for i := range 200 {
		ch.Instructions = append(ch.Instructions, &Instruction{Args: &FreeCall{ValueIndex: 0}})
		ch.Stacktrace = append(ch.Stacktrace, &FrameList{Items: []*Frame{{
			Filename: "/home/user/project/models/very/long/path/to/model_definition.py", Lineno: int32(i),
			Name: "forward", Context: "x = torch.nn.functional.scaled_dot_product_attention(q, k, v)"}}})
	}
	b := shWrite(t, p)
	f := shOpen(t, b)
	if d := wrDiff(wrWithSegments(p, f.Program.Segments), f.Program); d != "" {
		t.Fatalf("stack trace program: %s", d)
	}
	if errs := wrErrorFindings(f); len(errs) != 0 {
		t.Errorf("stack trace program: Verify errors %v", errs)
	}
	st := f.Program.Plan(0).Chains[0].Stacktrace
	if unsafe.StringData(st[0].Items[0].Filename) != unsafe.StringData(st[199].Items[0].Filename) {
		t.Error("a shared filename was decoded into separate copies")
	}
	cm := f.Program.Plan(0).ContainerMetaType
	if unsafe.StringData(cm.EncodedInpStr) != unsafe.StringData(cm.EncodedOutStr) {
		t.Error("a shared container spec was decoded into separate copies")
	}

	// 11 methods sharing one 4000-byte container spec.
	p = wrProgram(0)
	base := p.Plan(0)
	base.ContainerMetaType = &ContainerMetadata{EncodedInpStr: long, EncodedOutStr: long}
	for i := range 10 {
		c := *base
		c.Name = "m" + string(rune('a'+i))
		p.executionPlan = append(p.executionPlan, &c)
	}
	b = shWrite(t, p)
	if len(b) > 3*len(long) {
		t.Fatalf("%d-byte file: the writer did not share the spec string", len(b))
	}
	f = shOpen(t, b)
	if d := wrDiff(wrWithSegments(p, f.Program.Segments), f.Program); d != "" {
		t.Fatalf("11-method program: %s", d)
	}
	if errs := wrErrorFindings(f); len(errs) != 0 {
		t.Errorf("11-method program: Verify errors %v", errs)
	}

	// Read with LazyPlans, plans decoded concurrently (run with -race)
	// still share one copy of the spec per File.
	lf, err := NewFileWith(bytes.NewReader(b), int64(len(b)), &OpenOptions{LazyPlans: true})
	if err != nil {
		t.Fatal(err)
	}
	specs := make([]string, 2*lf.Program.NumPlans())
	var wg sync.WaitGroup
	for i := range specs {
		wg.Go(func() { specs[i] = lf.Program.Plan(i / 2).ContainerMetaType.EncodedInpStr })
	}
	wg.Wait()
	for i, s := range specs {
		if s != long || unsafe.StringData(s) != unsafe.StringData(specs[0]) {
			t.Fatalf("plan %d of the lazily read program has its own copy of the shared spec", i/2)
		}
	}
}

// TestLazyPlanNamesShared: the names of lazily read plans that share one
// string are copied once (a hostile file could give thousands of plans one
// long name), and PlanIndex copies none.
func TestLazyPlanNamesShared(t *testing.T) {
	long := strings.Repeat("n", 4000)
	p := wrProgram(0)
	p.Plan(0).Name = long
	for range 10 {
		c := *p.Plan(0)
		p.executionPlan = append(p.executionPlan, &c)
	}
	b := shWrite(t, p)
	if len(b) > 3*len(long) {
		t.Fatalf("%d-byte file: the writer did not share the name", len(b))
	}
	f, err := NewFileWith(bytes.NewReader(b), int64(len(b)), &OpenOptions{LazyPlans: true})
	if err != nil {
		t.Fatal(err)
	}
	first := f.Program.PlanName(0)
	for i := range f.Program.NumPlans() {
		if name := f.Program.PlanName(i); name != long || unsafe.StringData(name) != unsafe.StringData(first) {
			t.Fatalf("PlanName(%d) is its own copy of the shared name", i)
		}
	}
	other := long + "x"
	if a := testing.AllocsPerRun(10, func() { f.PlanIndex(other) }); a != 0 {
		t.Errorf("PlanIndex allocated %v times, want 0", a)
	}
	if i := f.PlanIndex(long); i != 0 {
		t.Errorf("PlanIndex = %d, want 0", i)
	}
}

// shTensorProgram returns a program whose values[1] is a tensor with a
// 200-element sizes vector, followed by n tensors of rank 1. The builder
// writes back to front, so values[1]'s vector lies after the later tensors
// and their (forward) offsets can be pointed at it.
func shTensorProgram(n int) *Program {
	p := wrProgram(0)
	ep := p.Plan(0)
	big := make([]int32, 200)
	for i := range big {
		big[i] = 1
	}
	ep.Values = append(ep.Values, &EValue{Val: &Tensor{ScalarType: ScalarTypeFLOAT, Sizes: big, DimOrder: []uint8{0}}})
	for range n {
		ep.Values = append(ep.Values, &EValue{Val: &Tensor{ScalarType: ScalarTypeFLOAT, Sizes: []int32{1}, DimOrder: []uint8{0}}})
	}
	return p
}

// shSharedSizes writes shTensorProgram(n), points the sizes of its n small
// tensors at the large one's and opens the result.
func shSharedSizes(t *testing.T, n int) ([]byte, error) {
	t.Helper()
	b := shWrite(t, shTensorProgram(n))
	f := shOpen(t, b)
	vals := f.Program.Plan(0).Values
	bigField := shFieldPos(t, f, vals[1].Val, 2)
	for _, v := range vals[2:] {
		shPointAt(b, shFieldPos(t, f, v.Val, 2), shTarget(b, bigField))
	}
	_, err := NewFile(bytes.NewReader(b), int64(len(b)))
	return b, err
}

// TestVerifySharedVectorLimit: decoding copies a scalar vector once per
// reference, so pointing many tables at one large vector must be refused
// before it multiplies memory; a little sharing is accepted and decodes
// into independent slices.
func TestVerifySharedVectorLimit(t *testing.T) {
	b, err := shSharedSizes(t, 2)
	if err != nil {
		t.Fatalf("two tensors sharing a sizes vector: %v", err)
	}
	f := shOpen(t, b)
	vals := f.Program.Plan(0).Values
	s1, s2 := vals[2].Val.(*Tensor).Sizes, vals[3].Val.(*Tensor).Sizes
	if len(s1) != 200 || len(s2) != 200 {
		t.Fatalf("shared sizes decoded as %d and %d elements", len(s1), len(s2))
	}
	s1[0] = 7
	if s2[0] != 1 {
		t.Error("tensors sharing a sizes vector decoded into aliased slices")
	}

	_, err = shSharedSizes(t, 60)
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("60 tensors sharing an 800-byte sizes vector: err %v, want a *FormatError", err)
	}
	if !strings.Contains(fe.Msg, "shared by too many tables") || !strings.HasSuffix(fe.Path, ".sizes") || fe.Code != CodeInvalidProgram {
		t.Errorf("got %v [%v], want the copied-vector limit on a sizes field", fe, fe.Code)
	}
}

// TestVerifyOverlappingStrings: strings at distinct but overlapping
// positions are each verified and copied; their total size is limited so
// that a small buffer cannot decode into a quadratic amount of text.
func TestVerifyOverlappingStrings(t *testing.T) {
	const k = 100
	// A dim_order made of k u32 lengths and a NUL: the string at element j
	// has length 4*(k-j-1) and ends at the NUL. Values are written before
	// operators, so they lie after them and operator names can point there.
	val := make([]byte, 4*k+1)
	for j := range k {
		binary.LittleEndian.PutUint32(val[4*j:], uint32(4*(k-j-1)))
	}
	build := func(t *testing.T, n int) ([]byte, error) {
		p := wrProgram(0)
		ep := p.Plan(0)
		ep.Values = append(ep.Values, &EValue{Val: &Tensor{ScalarType: ScalarTypeFLOAT, Sizes: []int32{1}, DimOrder: val}})
		for j := range n {
			ep.Operators = append(ep.Operators, &Operator{Name: "op" + string(rune('A'+j%26)) + string(rune('A'+j/26)), Overload: ""})
		}
		b := shWrite(t, p)
		f := shOpen(t, b)
		start := uint32(bytes.Index(b, val))
		if start%4 != 0 {
			t.Fatalf("dim_order bytes at unaligned %d", start)
		}
		for j, op := range f.Program.Plan(0).Operators {
			shPointAt(b, shFieldPos(t, f, op, 0), start+4*uint32(j))
		}
		_, err := NewFile(bytes.NewReader(b), int64(len(b)))
		return b, err
	}
	// A few overlapping names are legal FlatBuffers.
	b, err := build(t, 3)
	if err != nil {
		t.Fatalf("3 overlapping names: %v", err)
	}
	if ops := shOpen(t, b).Program.Plan(0).Operators; len(ops[0].Name) != 4*(k-1) || len(ops[2].Name) != 4*(k-3) {
		t.Errorf("overlapping names decoded with %d and %d bytes", len(ops[0].Name), len(ops[2].Name))
	}
	_, err = build(t, k)
	var fe *FormatError
	if !errors.As(err, &fe) || !strings.Contains(fe.Msg, "they overlap") || !strings.HasSuffix(fe.Path, ".name") {
		t.Fatalf("%d overlapping names: err %v, want the distinct-bytes limit on an operator name", k, err)
	}
}
