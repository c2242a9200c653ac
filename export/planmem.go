package export

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// planAlign is the alignment of planned tensor offsets, as ExecuTorch's
// memory planning uses.
const planAlign = 16

// planMemory places every tensor of md in one arena (memory_id 1). Method
// inputs and outputs are alive for the whole method and never share space;
// an intermediate tensor lives from the call producing it to the last call
// reading it, and two tensors share space only when their lifetimes
// overlap in no call. Tensors are placed in value order at the lowest
// 16-byte aligned offset where they overlap no placed tensor alive with
// them (first fit by offset); an empty tensor is placed at 0 and takes no
// space. This reproduces the sequential layout upstream writes when
// nothing can be shared.
//
// Tensors come in the order of the calls producing them (the resolver
// declares them so), so the tensors alive with the one being placed are
// exactly the placed ones not yet dead at its production: the planner
// sweeps the calls, keeping the live tensors in a planArena, and each
// placement costs O(log n) in the number of live tensors, however long
// they live (a method of many outputs keeps them all).
func planMemory(md *methodDef) error {
	var a planArena
	return a.plan(md)
}

// reset empties a for the next method, keeping its memory: a program of
// many small methods then allocates one arena, not one per method. The
// placements do not depend on what a held before.
func (a *planArena) reset() {
	a.nodes, a.free, a.root, a.rng, a.byDeath = a.nodes[:min(len(a.nodes), 1)], a.free[:0], 0, 0, a.byDeath[:0]
}

// plan is planMemory, with a's step counter left for the tests.
func (a *planArena) plan(md *methodDef) error {
	// byDeath lists the tensors taking space by their last use: the sweep
	// drops them from the arena in this order.
	if cap(a.byDeath) < len(md.tensors) {
		a.byDeath = make([]int32, 0, len(md.tensors))
	}
	byDeath := a.byDeath[:0]
	for i, t := range md.tensors {
		switch {
		case t.nbytes < 0:
			return newError(md.m.Name, t.name, fmt.Sprintf("internal error: negative tensor size %d", t.nbytes), nil)
		case t.lastUse < t.produced:
			return newError(md.m.Name, t.name, "internal error: tensor is last used before it is produced", nil)
		case i > 0 && t.produced < md.tensors[i-1].produced:
			return newError(md.m.Name, t.name, "internal error: tensors are not in the order of the calls producing them", nil)
		}
		if t.nbytes > 0 {
			byDeath = append(byDeath, int32(i))
		}
	}
	a.byDeath = byDeath
	slices.SortFunc(byDeath, func(x, y int32) int { return cmp.Compare(md.tensors[x].lastUse, md.tensors[y].lastUse) })
	if cap(a.nodes) < len(byDeath)+1 {
		// At most every tensor taking space is alive at once; nodes[0]
		// is the empty subtree.
		a.nodes = make([]arenaNode, 1, len(byDeath)+1)
	}
	dead := 0
	for _, t := range md.tensors {
		if t.nbytes == 0 {
			t.offset = 0
			continue
		}
		// Tensors dead before t is produced are placed (they were produced
		// no later than their death), and overlap neither t nor any later
		// tensor.
		for ; dead < len(byDeath) && md.tensors[byDeath[dead]].lastUse < t.produced; dead++ {
			a.remove(md.tensors[byDeath[dead]].offset)
		}
		off := a.fit(t.nbytes)
		if off > math.MaxInt64-t.nbytes {
			return newError(md.m.Name, t.name, "planned memory overflows int64", nil)
		}
		end := off + t.nbytes
		aend, err := alignUp(end)
		if err != nil {
			return newError(md.m.Name, t.name, "planned memory overflows", err)
		}
		t.offset = off
		md.arena = max(md.arena, end)
		a.insert(off, aend)
	}
	arena, err := alignUp(md.arena)
	if err != nil {
		return newError(md.m.Name, "", "planned memory overflows", err)
	}
	md.arena = arena
	return nil
}

func alignUp(n int64) (int64, error) {
	if n > math.MaxInt64-(planAlign-1) {
		return 0, fmt.Errorf("offset %d cannot be aligned", n)
	}
	return (n + planAlign - 1) &^ (planAlign - 1), nil
}

// planArena holds the space taken by the live tensors of a method being
// planned: non-empty, pairwise disjoint ranges [off, aend) (a tensor's
// offset to its end aligned up, as nothing else can start before that),
// in a treap ordered by offset. Each node also holds, for its subtree, the
// first offset, the last aligned end and the largest gap between two
// consecutive ranges, which lets fit find the lowest gap that holds a
// size in one walk from the root.
type planArena struct {
	nodes []arenaNode // nodes[0] is the empty subtree
	free  []int32     // indices of removed nodes, for reuse
	root  int32
	rng   uint64
	// steps counts the nodes the operations visit: the tests bound the
	// planner's work with it.
	steps int
	// byDeath is plan's list of the tensors by last use, kept for reuse.
	byDeath []int32
}

type arenaNode struct {
	off, aend   int64
	prio        uint64
	left, right int32
	// The subtree's lowest offset, highest aligned end and largest gap
	// between consecutive ranges (-1 when it has one range).
	minOff, maxAend, gap int64
}

// fit returns the lowest aligned offset where n > 0 bytes overlap no
// range: the first gap, from 0 up, of at least n bytes, else the end of
// the last range.
func (a *planArena) fit(n int64) int64 {
	lo := int64(0) // the aligned end of the range before subtree v, or 0
	for v := a.root; v != 0; {
		a.steps++
		nd := &a.nodes[v]
		if n <= nd.minOff-lo {
			return lo // the gap before the subtree
		}
		if l := nd.left; l != 0 {
			if a.nodes[l].gap >= n {
				v = l // the first fitting gap is inside the left subtree
				continue
			}
			lo = a.nodes[l].maxAend
		}
		if n <= nd.off-lo {
			return lo // between the left subtree and v
		}
		lo = nd.aend
		v = nd.right
	}
	return lo
}

// insert adds the range [off, aend), which overlaps none.
func (a *planArena) insert(off, aend int64) {
	// xorshift64: the priorities only shape the tree; a fixed seed keeps
	// the work the same from run to run.
	if a.rng == 0 {
		a.rng = 0x9e3779b97f4a7c15
	}
	a.rng ^= a.rng << 13
	a.rng ^= a.rng >> 7
	a.rng ^= a.rng << 17
	nd := arenaNode{off: off, aend: aend, prio: a.rng}
	var v int32
	if k := len(a.free); k > 0 {
		v, a.free = a.free[k-1], a.free[:k-1]
		a.nodes[v] = nd
	} else {
		if len(a.nodes) == 0 {
			a.nodes = append(a.nodes, arenaNode{}) // the empty subtree
		}
		v = int32(len(a.nodes))
		a.nodes = append(a.nodes, nd)
	}
	a.pull(v)
	l, r := a.split(a.root, off)
	a.root = a.merge(a.merge(l, v), r)
}

// remove drops the range starting at off.
func (a *planArena) remove(off int64) {
	a.root = a.removeFrom(a.root, off)
}

func (a *planArena) removeFrom(v int32, off int64) int32 {
	if v == 0 {
		return 0 // not there: nothing to drop
	}
	a.steps++
	nd := &a.nodes[v]
	switch {
	case off < nd.off:
		nd.left = a.removeFrom(nd.left, off)
	case off > nd.off:
		nd.right = a.removeFrom(nd.right, off)
	default:
		a.free = append(a.free, v)
		return a.merge(nd.left, nd.right)
	}
	a.pull(v)
	return v
}

// split splits subtree v into the ranges starting below off and the rest.
func (a *planArena) split(v int32, off int64) (int32, int32) {
	if v == 0 {
		return 0, 0
	}
	a.steps++
	nd := &a.nodes[v]
	if nd.off < off {
		l, r := a.split(nd.right, off)
		nd.right = l
		a.pull(v)
		return v, r
	}
	l, r := a.split(nd.left, off)
	nd.left = r
	a.pull(v)
	return l, v
}

// merge joins subtrees l and r, every range of l below every range of r.
func (a *planArena) merge(l, r int32) int32 {
	if l == 0 {
		return r
	}
	if r == 0 {
		return l
	}
	a.steps++
	if ln := &a.nodes[l]; ln.prio > a.nodes[r].prio {
		ln.right = a.merge(ln.right, r)
		a.pull(l)
		return l
	}
	rn := &a.nodes[r]
	rn.left = a.merge(l, rn.left)
	a.pull(r)
	return r
}

// pull recomputes v's subtree summary from its children's.
func (a *planArena) pull(v int32) {
	nd := &a.nodes[v]
	nd.minOff, nd.maxAend, nd.gap = nd.off, nd.aend, -1
	if l := nd.left; l != 0 {
		ln := &a.nodes[l]
		nd.minOff = ln.minOff
		nd.gap = max(ln.gap, nd.off-ln.maxAend)
	}
	if r := nd.right; r != 0 {
		rn := &a.nodes[r]
		nd.maxAend = rn.maxAend
		nd.gap = max(nd.gap, rn.gap, rn.minOff-nd.aend)
	}
}
