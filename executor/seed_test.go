package executor

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

// seedProgram builds, from scratch, a small program that exercises every
// instruction type and a TensorRT delegate with an aliased pair: the
// fuzzing seed of FuzzLoad and a fixture for the loader tests.
func seedProgram(t testing.TB, meta *delegate.Metadata) *pte.Program {
	t.Helper()
	tensor := func() *pte.EValue {
		return &pte.EValue{Val: &pte.Tensor{ScalarType: pte.ScalarTypeFLOAT, Sizes: []int32{2}, DimOrder: []uint8{0}}}
	}
	return programOf([]*pte.ExecutionPlan{{
		Name: "forward",
		Values: []*pte.EValue{
			tensor(), tensor(), // 0 x, 1 y
			{Val: &pte.Int{IntVal: 1}},                            // 2
			{Val: &pte.Bool{BoolVal: true}},                       // 3
			{Val: &pte.TensorList{Items: []int32{0}}},             // 4
			{Val: &pte.Null{}},                                    // 5
			{Val: &pte.IntList{Items: []int64{2}}},                // 6
			{Val: &pte.OptionalTensorList{Items: []int32{-1, 1}}}, // 7
			tensor(), // 8 kv cache
		},
		Inputs:  []int32{0, 8},
		Outputs: []int32{1},
		Chains: []*pte.Chain{{Inputs: []int32{0}, Outputs: []int32{1}, Instructions: []*pte.Instruction{
			{Args: &pte.DelegateCall{DelegateIndex: 0, Args: []int32{0, 8, 1, 8}}},
			{Args: &pte.JumpFalseCall{CondValueIndex: 3, DestinationInstruction: 0}},
			{Args: &pte.MoveCall{MoveFrom: 1, MoveTo: 1}},
			{Args: &pte.KernelCall{OpIndex: 0, Args: []int32{1, 1, 2, 1}}},
			{Args: &pte.FreeCall{ValueIndex: 0}},
		}}},
		Operators: []*pte.Operator{{Name: "aten::add", Overload: "out"}},
		Delegates: []*pte.BackendDelegate{{
			ID:           TensorRTBackendID,
			Processed:    &pte.BackendDelegateDataReference{Location: pte.DataLocationSEGMENT, Index: 0},
			CompileSpecs: []*pte.CompileSpec{budgetSpec("4096")},
		}},
		NonConstBufferSizes: []int64{0, 64},
	}})
}

// seedMetadata is the blob metadata of seedProgram's delegate: inputs x
// and cache, outputs y and cache_out, cache_out updating cache in place.
func seedMetadata() *delegate.Metadata {
	return &delegate.Metadata{
		IOBindings: []delegate.Binding{{Name: "x", IsInput: true}, {Name: "cache", IsInput: true}, {Name: "y"}, {Name: "cache_out"}},
		AliasedIO:  []delegate.AliasedIO{{Output: "cache_out", Input: "cache", Kind: delegate.KindKVCacheUpdate}},
	}
}

// writeProgram encodes p with meta's blob as segment 0.
func writeProgram(t testing.TB, p *pte.Program, meta *delegate.Metadata) []byte {
	t.Helper()
	engine := []byte("ENGINE")
	blob, err := upstreamBlob(meta, bytes.NewReader(engine), int64(len(engine)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := pte.Write(&buf, p, []*io.SectionReader{blob}, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestWriteFuzzSeeds checks that the committed seed of FuzzLoad is what
// seedProgram writes today; -update rewrites it.
func TestWriteFuzzSeeds(t *testing.T) {
	data := writeProgram(t, seedProgram(t, seedMetadata()), seedMetadata())
	testkit.Golden(t, filepath.Join("testdata", "fuzz", "FuzzLoad", "seed-program"), testkit.FuzzCorpusFile(data))
}

// programOf returns a program with just these plans.
func programOf(plans []*pte.ExecutionPlan) *pte.Program {
	p := &pte.Program{}
	p.SetPlans(plans)
	return p
}
