package executor

import (
	"bytes"
	"io"
	"testing"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// The unit tests build the programs they load with pte.Write and
// delegate.NewBlobReader instead of opening shared vectors by name, so that
// they do not depend on which cases a vectors tree holds. Only the
// conformance tests (vectors_test.go, conformance_test.go) read ../shared,
// and they iterate over whatever cases exist.

// trtCall is one TensorRT delegate call of a built test program: one input
// binding, one output binding, both float32 [2, 2].
type trtCall struct {
	in, out string // binding names
	// specs are the delegate's compile specs; nil means
	// weight_streaming_budget=1 MiB and target_device=cuda:0.
	specs []*pte.CompileSpec
	// engine is the engine size in bytes; 0 means 32.
	engine int
	// blob, when non-nil, is the delegate payload as it is (in, out and
	// engine are then unused).
	blob *io.SectionReader
}

// testMethod is one method of a built test program: its calls run in
// order, each consuming the previous one's output. With addConst, an
// aten::add.out kernel call adds a constant tensor to the first call's
// output (alpha 1) and feeds the sum to the second call.
type testMethod struct {
	name     string
	calls    []trtCall
	addConst bool
}

// utf8Specs returns compile specs with UTF-8 values, in the order given as
// key, value pairs.
func utf8Specs(kv ...string) []*pte.CompileSpec {
	specs := []*pte.CompileSpec{}
	for i := 0; i+1 < len(kv); i += 2 {
		specs = append(specs, &pte.CompileSpec{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return specs
}

// testEngine returns size deterministic stand-in engine bytes.
func testEngine(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(i*131 + 7)
	}
	return b
}

// buildProgram writes a program of TensorRT delegate calls, laid out as
// ExecuTorch writes one today: the constant segment (offsets [0] and the
// constants) is segment 0, every blob is in a segment of its own, and the
// deprecated inline constant_buffer is empty. It returns it opened.
func buildProgram(t testing.TB, methods ...testMethod) *pte.File {
	t.Helper()
	p := &pte.Program{ConstantBuffer: []*pte.Buffer{}}
	segs := []*io.SectionReader{nil}            // the constant segment, filled in last
	offsets, constants := []uint64{0}, []byte{} // offsets[0]: the placeholder of non-constant tensors
	for _, tm := range methods {
		ep := &pte.ExecutionPlan{Name: tm.name, ContainerMetaType: &pte.ContainerMetadata{}, Operators: []*pte.Operator{}}
		var offset uint32
		tensor := func() int32 {
			ep.Values = append(ep.Values, &pte.EValue{Val: &pte.Tensor{
				ScalarType: pte.ScalarType(6), Sizes: []int32{2, 2}, DimOrder: []uint8{0, 1},
				AllocationInfo: &pte.AllocationDetails{MemoryID: 1, MemoryOffsetLow: offset},
			}})
			offset += 16
			return int32(len(ep.Values) - 1)
		}
		cur := tensor()
		ep.Inputs = []int32{cur}
		chain := &pte.Chain{Inputs: []int32{cur}}
		for i, c := range tm.calls {
			if i == 1 && tm.addConst {
				cb := int32(len(ep.Values))
				ep.Values = append(ep.Values,
					&pte.EValue{Val: &pte.Tensor{ScalarType: pte.ScalarType(6), Sizes: []int32{2, 2}, DimOrder: []uint8{0, 1},
						DataBufferIdx: uint32(len(offsets))}},
					&pte.EValue{Val: &pte.Int{IntVal: 1}})
				// 16 bytes each: aligned as ExecuTorch aligns constants, without padding.
				offsets, constants = append(offsets, uint64(len(constants))), append(constants, testEngine(16)...)
				sum := tensor()
				ep.Operators = append(ep.Operators, &pte.Operator{Name: "aten::add", Overload: "out"})
				chain.Instructions = append(chain.Instructions, &pte.Instruction{Args: &pte.KernelCall{
					OpIndex: int32(len(ep.Operators) - 1), Args: []int32{cur, cb, cb + 1, sum, sum}}})
				cur = sum
			}
			out := tensor()
			specs := c.specs
			if specs == nil {
				specs = utf8Specs(budgetSpecKey, "1048576", "target_device", "cuda:0")
			}
			ep.Delegates = append(ep.Delegates, &pte.BackendDelegate{ID: TensorRTBackendID, CompileSpecs: specs,
				Processed: &pte.BackendDelegateDataReference{Location: pte.DataLocation(1), Index: uint32(len(segs))}})
			chain.Instructions = append(chain.Instructions, &pte.Instruction{Args: &pte.DelegateCall{
				DelegateIndex: int32(len(ep.Delegates) - 1), Args: []int32{cur, out}}})
			blob := c.blob
			if blob == nil {
				size := c.engine
				if size == 0 {
					size = 32
				}
				m := &delegate.Metadata{IOBindings: []delegate.Binding{
					{Name: c.in, DType: "float32", Shape: []int64{2, 2}, IsInput: true},
					{Name: c.out, DType: "float32", Shape: []int64{2, 2}}}}
				var err error
				if blob, err = upstreamBlob(m, bytes.NewReader(testEngine(size)), int64(size)); err != nil {
					t.Fatal(err)
				}
			}
			segs = append(segs, blob)
			cur = out
		}
		ep.Outputs = []int32{cur}
		chain.Outputs = []int32{cur}
		ep.Chains = []*pte.Chain{chain}
		ep.NonConstBufferSizes = []int64{0, int64(offset)}
		p.SetPlans(append(testprog.Plans(p), ep))
	}
	p.ConstantSegment = &pte.SubsegmentOffsets{SegmentIndex: 0, Offsets: offsets}
	segs[0] = io.NewSectionReader(bytes.NewReader(constants), 0, int64(len(constants)))
	return openWritten(t, p, segs)
}

// openWritten writes p with its segment payloads (strictly: a test
// program must be valid) and returns it opened.
func openWritten(t testing.TB, p *pte.Program, segs []*io.SectionReader) *pte.File {
	t.Helper()
	var buf bytes.Buffer
	if _, err := pte.Write(&buf, p, segs, &pte.WriteOptions{Strict: true}); err != nil {
		t.Fatal(err)
	}
	f, err := pte.NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// budgetSpecKey is the TensorRT weight streaming budget compile spec key.
const budgetSpecKey = "weight_streaming_budget"

// Programs the unit tests share, by the shape they have.
var (
	// progOneEngine: forward, one call x -> y, budget spec 1 MiB.
	progOneEngine = []testMethod{{name: "forward", calls: []trtCall{{in: "x", out: "y"}}}}
	// progNoBudgetSpec: as progOneEngine without a budget spec.
	progNoBudgetSpec = []testMethod{{name: "forward", calls: []trtCall{
		{in: "x", out: "y", specs: utf8Specs("target_device", "cuda:0")}}}}
	// progBudgetSpecTwice: the budget spec given twice (1024, then 2048).
	progBudgetSpecTwice = []testMethod{{name: "forward", calls: []trtCall{
		{in: "x", out: "y", specs: utf8Specs(budgetSpecKey, "1024", "target_device", "cuda:0", budgetSpecKey, "2048")}}}}
	// progTwoEngines: forward, x -> h -> y, budget specs 1 MiB and 512 KiB.
	progTwoEngines = []testMethod{{name: "forward", calls: []trtCall{
		{in: "x", out: "h"},
		{in: "h", out: "y", specs: utf8Specs(budgetSpecKey, "524288", "target_device", "cuda:0")}}}}
	// progTwoMethods: prefill and decode, one engine each.
	progTwoMethods = []testMethod{
		{name: "prefill", calls: []trtCall{{in: "tokens", out: "logits"}}},
		{name: "decode", calls: []trtCall{{in: "token", out: "logits",
			specs: utf8Specs(budgetSpecKey, "262144", "target_device", "cuda:0")}}}}
	// progKernelBetween: engine, aten::add.out with a constant, engine (the
	// second without a budget spec).
	progKernelBetween = []testMethod{{name: "forward", addConst: true, calls: []trtCall{
		{in: "x", out: "h"},
		{in: "s", out: "y", specs: utf8Specs("target_device", "cuda:0")}}}}
	// progLargeEngine: progOneEngine with a 1 MiB engine.
	progLargeEngine = []testMethod{{name: "forward", calls: []trtCall{{in: "x", out: "y", engine: 1 << 20}}}}
)

// upstreamBlob encodes a blob in upstream-compatible mode, which writes
// metadata that TensorRTBackend init refuses (a negative device_id, unknown
// aliased names or kinds) instead of refusing it: the runtime tests need
// such blobs.
func upstreamBlob(m *delegate.Metadata, engine io.ReaderAt, size int64) (*io.SectionReader, error) {
	return (&delegate.EncodeOptions{UpstreamCompatible: true}).NewBlobReader(m, engine, size)
}
