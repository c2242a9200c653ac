package export

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/ptekit/ptekit/pte"
)

// planAlign is the alignment of planned tensor offsets, as ExecuTorch's
// memory planning uses.
const planAlign = 16

// planMemory places every tensor of md in one arena (memory_id 1). Method
// inputs and outputs are alive for the whole method and never share space;
// an intermediate tensor lives from the call producing it to the last call
// reading it, and two tensors share space only when their lifetimes are
// disjoint. Tensors are placed in value order at the lowest 16-byte aligned
// offset that fits (first fit), which reproduces the sequential layout
// upstream writes when nothing can be shared.
//
// Tensors come in the order of the calls producing them, so a tensor whose
// last use is before the next one's production can never overlap it or
// any later one: it leaves the set that is searched, which keeps the
// planning linear in the number of tensors for a chain of calls.
func planMemory(md *methodDef) error {
	var live []*tensorDef // placed tensors still alive, by offset
	inOrder := slices.IsSortedFunc(md.tensors, func(a, b *tensorDef) int { return a.produced - b.produced })
	for _, t := range md.tensors {
		start := t.produced
		// Candidate offsets: 0 and the aligned end of every placed tensor
		// whose lifetime overlaps t's.
		var busy []*tensorDef
		kept := live[:0]
		for _, p := range live {
			if inOrder && p.lastUse < start {
				continue // dead before t and every later tensor is produced
			}
			kept = append(kept, p)
			if p.produced <= t.lastUse && start <= p.lastUse {
				busy = append(busy, p)
			}
		}
		live = kept
		off := int64(0)
		for _, p := range busy {
			if t.nbytes == 0 || off+t.nbytes <= p.offset {
				break // fits in the gap below p (busy is sorted by offset)
			}
			if p.nbytes == 0 || p.offset+p.nbytes <= off {
				continue // p lies entirely below off
			}
			end, err := alignUp(p.offset + p.nbytes)
			if err != nil {
				return newError(md.m.Name, t.name, "planned memory overflows", err)
			}
			off = end
		}
		t.offset = off
		if off > math.MaxInt64-t.nbytes {
			return newError(md.m.Name, t.name, "planned memory overflows int64", nil)
		}
		if e := off + t.nbytes; e > md.arena {
			md.arena = e
		}
		i := sort.Search(len(live), func(i int) bool { return live[i].offset > t.offset })
		live = slices.Insert(live, i, t)
	}
	a, err := alignUp(md.arena)
	if err != nil {
		return newError(md.m.Name, "", "planned memory overflows", err)
	}
	md.arena = a
	return nil
}

func alignUp(n int64) (int64, error) {
	if n > math.MaxInt64-(planAlign-1) {
		return 0, fmt.Errorf("offset %d cannot be aligned", n)
	}
	return (n + planAlign - 1) &^ (planAlign - 1), nil
}

// executionPlan builds the ExecutionPlan of md. delegates are the method's
// delegates, one per call, in call order.
func executionPlan(md *methodDef, delegates []*pte.BackendDelegate) *pte.ExecutionPlan {
	values := planValues(md)
	// The index lists (the method's and its chain's inputs and outputs,
	// each call's arguments) share one slab, each capped so that an append
	// to one cannot run into the next, and the plan's fixed tables are one
	// allocation: an export of many one-engine methods pays per method.
	nidx := 2 * (len(md.inputs) + len(md.outputs))
	for _, c := range md.calls {
		nidx += len(c.inputs) + len(c.outputs)
	}
	slab := make([]int32, 0, nidx)
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
	instrs := make([]*pte.Instruction, len(md.calls))
	calls := make([]struct {
		in pte.Instruction
		dc pte.DelegateCall
	}, len(md.calls))
	for i, c := range md.calls {
		calls[i].dc = pte.DelegateCall{DelegateIndex: int32(i), Args: indices(c.inputs, c.outputs)}
		calls[i].in = pte.Instruction{Args: &calls[i].dc}
		instrs[i] = &calls[i].in
	}
	fixed := &struct {
		ep     pte.ExecutionPlan
		cm     pte.ContainerMetadata
		chain  pte.Chain
		chains [1]*pte.Chain
		arenas [2]int64
	}{}
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
// memory arena 1. The tables of all values are allocated together, a few
// slices per method instead of five objects per tensor.
func planValues(md *methodDef) []*pte.EValue {
	n, dims := len(md.tensors), 0
	for _, t := range md.tensors {
		dims += len(t.sizes)
	}
	values := make([]*pte.EValue, n)
	evs, tensors, allocs := make([]pte.EValue, n), make([]pte.Tensor, n), make([]pte.AllocationDetails, n)
	sizes, orders := make([]int32, 0, dims), make([]uint8, 0, dims)
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

func leaves(n int) []string {
	l := make([]string, n)
	for i := range l {
		l[i] = pytreeLeaf
	}
	return l
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
	args := pytreeTuple(leaves(n))
	kwargs := `{"type": "builtins.dict", "context": "[]", "children_spec": []}`
	return "[1, " + pytreeTuple([]string{args, kwargs}) + "]"
}

func outputSpec(n int) string {
	if n == 1 {
		return "[1, " + pytreeLeaf + "]"
	}
	return "[1, " + pytreeTuple(leaves(n)) + "]"
}
