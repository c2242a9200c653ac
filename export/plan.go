package export

import (
	"slices"
	"strings"

	"github.com/ptekit/ptekit/internal/jsontree"
	"github.com/ptekit/ptekit/pte"
)

// planTables hands out the tables of the plans of a program, cut from
// blocks shared by its methods: a program of many one-engine methods made
// ten small allocations per method for them.
type planTables struct {
	values  jsontree.Slices[*pte.EValue]
	evs     jsontree.Slices[pte.EValue]
	tensors jsontree.Slices[pte.Tensor]
	allocs  jsontree.Slices[pte.AllocationDetails]
	int32s  jsontree.Slices[int32]
	uint8s  jsontree.Slices[uint8]
	instrs  jsontree.Slices[*pte.Instruction]
	calls   jsontree.Slices[callTables]
	fixed   jsontree.Blocks[fixedTables]
	// A plan's delegates and each delegate's tables.
	delegates jsontree.Slices[*pte.BackendDelegate]
	delegate  jsontree.Blocks[delegateTables]
}

// delegateTables are the tables of one delegate.
type delegateTables struct {
	d   pte.BackendDelegate
	ref pte.BackendDelegateDataReference
}

// callTables are the tables of one call's instruction.
type callTables struct {
	in pte.Instruction
	dc pte.DelegateCall
}

// fixedTables are the tables every plan has once.
type fixedTables struct {
	ep     pte.ExecutionPlan
	cm     pte.ContainerMetadata
	chain  pte.Chain
	chains [1]*pte.Chain
	arenas [2]int64
}

// executionPlan builds the ExecutionPlan of md, its tables taken from tabs.
// delegates are the method's delegates, one per call, in call order.
func executionPlan(md *methodDef, delegates []*pte.BackendDelegate, tabs *planTables) *pte.ExecutionPlan {
	values := planValues(md, tabs)
	// The index lists (the method's and its chain's inputs and outputs,
	// each call's arguments) share one slab, each capped so that an append
	// to one cannot run into the next.
	nidx := 2 * (len(md.inputs) + len(md.outputs))
	for _, c := range md.calls {
		nidx += len(c.inputs) + len(c.outputs)
	}
	slab := tabs.int32s.Make(nidx)[:0]
	indices := func(lists ...[]*tensorDef) []int32 {
		start := len(slab)
		for _, ts := range lists {
			for _, t := range ts {
				slab = append(slab, t.value)
			}
		}
		return slab[start:len(slab):len(slab)]
	}
	inputs, outputs := indices(md.inputs), indices(md.outputs)
	instrs := tabs.instrs.Make(len(md.calls))
	calls := tabs.calls.Make(len(md.calls))
	for i, c := range md.calls {
		calls[i].dc = pte.DelegateCall{DelegateIndex: int32(i), Args: indices(c.inputs, c.outputs)}
		calls[i].in = pte.Instruction{Args: &calls[i].dc}
		instrs[i] = &calls[i].in
	}
	fixed := tabs.fixed.New()
	fixed.cm = pte.ContainerMetadata{
		EncodedInpStr: inputSpec(len(md.inputs)),
		EncodedOutStr: outputSpec(len(md.outputs)),
	}
	fixed.chain = pte.Chain{
		Inputs:       indices(md.inputs),
		Outputs:      indices(md.outputs),
		Instructions: instrs,
	}
	fixed.chains[0] = &fixed.chain
	fixed.arenas = [2]int64{0, md.arena}
	fixed.ep = pte.ExecutionPlan{
		Name:                md.m.Name,
		ContainerMetaType:   &fixed.cm,
		Values:              values,
		Inputs:              inputs,
		Outputs:             outputs,
		Chains:              fixed.chains[:],
		Operators:           []*pte.Operator{},
		Delegates:           delegates,
		NonConstBufferSizes: fixed.arenas[:],
	}
	return &fixed.ep
}

// planValues returns the method's values, one tensor each, planned in
// memory arena 1, their tables taken from tabs.
func planValues(md *methodDef, tabs *planTables) []*pte.EValue {
	n, dims := len(md.tensors), 0
	for _, t := range md.tensors {
		dims += len(t.sizes)
	}
	values := tabs.values.Make(n)
	evs, tensors, allocs := tabs.evs.Make(n), tabs.tensors.Make(n), tabs.allocs.Make(n)
	sizes, orders := tabs.int32s.Make(dims)[:0], tabs.uint8s.Make(dims)[:0]
	for i, t := range md.tensors {
		dyn := pte.TensorShapeDynamismSTATIC
		if t.maxShape != nil {
			dyn = pte.TensorShapeDynamismDYNAMIC_BOUND
		}
		start := len(sizes)
		sizes = append(sizes, t.sizes...)
		for d := range t.sizes {
			orders = append(orders, uint8(d))
		}
		off := uint64(t.offset)
		allocs[i] = pte.AllocationDetails{
			MemoryID:         1,
			MemoryOffsetLow:  uint32(off),
			MemoryOffsetHigh: uint32(off >> 32),
		}
		tensors[i] = pte.Tensor{
			ScalarType:     t.scalar,
			Sizes:          sizes[start:len(sizes):len(sizes)],
			DimOrder:       orders[start:len(orders):len(orders)],
			AllocationInfo: &allocs[i],
			ShapeDynamism:  dyn,
		}
		evs[i] = pte.EValue{Val: &tensors[i]}
		values[i] = &evs[i]
	}
	return values
}

// The container_meta_type strings use the torch JSON pytree format
// (treespec_dumps, protocol 1) that EXIR writes in pip installs: the inputs
// are ((x0, x1, ...), {}), a single output is a bare leaf and several
// outputs are a tuple.
const pytreeLeaf = `{"type": null, "context": null, "children_spec": []}`

func pytreeTuple(children []string) string {
	return `{"type": "builtins.tuple", "context": "null", "children_spec": [` + strings.Join(children, ", ") + `]}`
}

// inputSpec1 is inputSpec(1), the spec of most methods, built once: a
// program of many one-input methods otherwise builds it per method.
var inputSpec1 = buildInputSpec(1)

func inputSpec(n int) string {
	if n == 1 {
		return inputSpec1
	}
	return buildInputSpec(n)
}

func buildInputSpec(n int) string {
	args := pytreeTuple(slices.Repeat([]string{pytreeLeaf}, n))
	kwargs := `{"type": "builtins.dict", "context": "[]", "children_spec": []}`
	return "[1, " + pytreeTuple([]string{args, kwargs}) + "]"
}

// outputSpec1 is outputSpec(1), built once like inputSpec1.
var outputSpec1 = "[1, " + pytreeLeaf + "]"

func outputSpec(n int) string {
	if n == 1 {
		return outputSpec1
	}
	return "[1, " + pytreeTuple(slices.Repeat([]string{pytreeLeaf}, n)) + "]"
}
