package inspect

import (
	"cmp"
	"container/heap"
	"io"
	"slices"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/pte"
)

// keeper holds bytes of a file that a hashing pass reads and something after
// the pass needs again: the heads of delegate payloads and constant
// buffers the diff compares after the pass. Each range is asked for before
// the pass reaches it (want), filled as the pass goes by, and then read
// from memory (reader). A range asked for after its first bytes went by is
// kept only when ranges held have those bytes.
type keeper struct {
	store lane    // ranges held
	flow  lane    // ranges handed on (pass)
	done  []*kept // complete ranges held, by offset (byOffset)
	asked map[span]*kept
	// pos is where the bytes being fed begin: those before it went by.
	pos int64
}

// lane is ranges a pass fills or hands on: those not begun, by offset, and
// those begun.
type lane struct {
	waiting keptHeap
	open    []*kept
}

// kept is one range: its bytes so far (got of them), and what to do when
// it is whole (each then, in the order asked); or, with sink, a range whose bytes are handed to sink as
// they go by instead of being held.
type kept struct {
	off, n, got int64
	data        []byte
	then        []func(k *keeper, data []byte)
	sink        func(off int64, b []byte)
}

func newKeep() *keeper { return &keeper{asked: map[span]*kept{}} }

// want asks for the n bytes at off; then (may be nil) is called with them
// once the pass has read them all (at once when they are held already),
// and may ask for more. The same range asked for again is held once, and
// each then is called.
func (k *keeper) want(off, n int64, then func(k *keeper, data []byte)) {
	if k == nil || n <= 0 || off < 0 {
		return
	}
	if x := k.asked[span{off, n}]; x != nil {
		switch {
		case then == nil:
		case x.got == x.n:
			then(k, x.data)
		default:
			x.then = append(x.then, then)
		}
		return
	}
	x := &kept{off: off, n: n}
	if then != nil {
		x.then = append(x.then, then)
	}
	k.asked[span{off, n}] = x
	if off < k.pos {
		// Its first bytes went by: taken from a range held, if one has
		// them (a blob's metadata that overlaps its header).
		held, ok := k.at(off, min(n, k.pos-off))
		if !ok {
			return
		}
		x.data = append(make([]byte, 0, n), held...)
		x.got = int64(len(held))
		if x.got == n {
			k.insertDone(x)
			return
		}
	}
	heap.Push(&k.store.waiting, x)
}

// insertDone adds the complete range x to those held and calls its then.
func (k *keeper) insertDone(x *kept) {
	// Ranges end in the order the pass reads them, mostly that of their
	// offsets: the place is nearly always the end.
	i, _ := slices.BinarySearchFunc(k.done, x, byOffset)
	k.done = slices.Insert(k.done, i, x)
	for _, then := range x.then {
		then(k, x.data)
	}
}

// pass asks for the n bytes at off to be handed to sink, piece by piece,
// in order, as the pass reads them, held by nobody. The pass hands them on
// after every keeper has held its bytes of the same read, so that sink may
// use bytes held from the other file.
func (k *keeper) pass(off, n int64, sink func(off int64, b []byte)) {
	if n > 0 && off >= 0 {
		heap.Push(&k.flow.waiting, &kept{off: off, n: n, sink: sink})
	}
}

// feed takes the bytes b the pass read at pos: every range held that has
// begun takes its part of them.
func (k *keeper) feed(pos int64, b []byte) {
	if k == nil {
		return
	}
	end := pos + int64(len(b))
	k.pos = pos
	for {
		whole := k.store.advance(pos, b)
		for _, x := range whole {
			k.insertDone(x)
		}
		// A range asked for by then may begin in these bytes too.
		if len(whole) == 0 || len(k.store.waiting) == 0 || k.store.waiting[0].off >= end {
			return
		}
	}
}

// flowTo hands the bytes b the pass read at pos to the sinks of the ranges
// they hold bytes of.
func (k *keeper) flowTo(pos int64, b []byte) {
	if k != nil {
		k.flow.advance(pos, b)
	}
}

// advance gives the bytes b read at pos to the ranges of l they hold bytes
// of (beginning those that start in them) and returns the ranges held that
// they complete.
func (l *lane) advance(pos int64, b []byte) (whole []*kept) {
	end := pos + int64(len(b))
	for len(l.waiting) > 0 && l.waiting[0].off < end {
		x := heap.Pop(&l.waiting).(*kept)
		if x.off+x.got < pos {
			continue // its first bytes went by before it was asked for
		}
		if x.sink == nil && x.data == nil {
			x.data = make([]byte, 0, x.n)
		}
		l.open = append(l.open, x)
	}
	l.open = slices.DeleteFunc(l.open, func(x *kept) bool {
		from := x.off + x.got
		to := min(x.off+x.n, end)
		if from < pos {
			return true // bytes of it went unread: it cannot be whole
		}
		if from >= to {
			return false
		}
		if x.sink != nil {
			x.sink(from, b[from-pos:to-pos])
		} else {
			x.data = append(x.data, b[from-pos:to-pos]...)
		}
		if x.got += to - from; x.got < x.n {
			return false
		}
		if x.sink == nil {
			whole = append(whole, x)
		}
		return true
	})
	return whole
}

// at returns the n bytes at off when a complete range holds them.
func (k *keeper) at(off, n int64) ([]byte, bool) {
	if k == nil || len(k.done) == 0 {
		return nil, false
	}
	byOff := func(x *kept, t int64) int { return cmp.Compare(x.off, t) }
	// A read starts where a range asked for does: the longest range
	// starting at off comes first.
	if i, ok := slices.BinarySearchFunc(k.done, off, byOff); ok && k.done[i].n >= n {
		return k.done[i].data[:n], true
	}
	i, _ := slices.BinarySearchFunc(k.done, off+1, byOff)
	// Else the ranges starting before off, nearest first: a few at most
	// hold the same bytes (a payload's head and its metadata).
	for j := i - 1; j >= 0 && j >= i-8; j-- {
		if x := k.done[j]; x.off+x.n >= off+n {
			return x.data[off-x.off : off-x.off+n], true
		}
	}
	return nil, false
}

// reader returns r reading what k holds from memory.
func (k *keeper) reader(r io.ReaderAt) io.ReaderAt {
	if k == nil {
		return r
	}
	return keptReader{r: r, k: k}
}

// keptReader reads from k's ranges when one holds the bytes asked for,
// else from r.
type keptReader struct {
	r io.ReaderAt
	k *keeper
}

func (kr keptReader) ReadAt(p []byte, off int64) (int, error) {
	if b, ok := kr.k.at(off, int64(len(p))); ok {
		return copy(p, b), nil
	}
	return kr.r.ReadAt(p, off)
}

// byOffset orders ranges by offset, the longest first at one offset.
func byOffset(x, y *kept) int { return cmp.Or(cmp.Compare(x.off, y.off), cmp.Compare(y.n, x.n)) }

// keptHeap orders ranges by offset.
type keptHeap []*kept

func (h keptHeap) Len() int           { return len(h) }
func (h keptHeap) Less(i, j int) bool { return h[i].off < h[j].off }
func (h keptHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *keptHeap) Push(x any)        { *h = append(*h, x.(*kept)) }
func (h *keptHeap) Pop() any {
	x := (*h)[len(*h)-1]
	*h = (*h)[:len(*h)-1]
	return x
}

// headBudget bounds the metadata of TensorRT blobs wantHeads has a keeper
// hold: a small file can claim a great deal of distinct metadata, and the
// metadata beyond the budget is read from the file one blob at a time.
// Real metadata is a few KiB per engine.
var headBudget int64 = 256 << 20

// wantHeads asks k for what the document reads of f's delegate payloads in
// the file: the first bytes of each and of each TensorRT blob its last
// byte and, once the header is known, its metadata (within headBudget):
// what delegate.Check reads.
func wantHeads(f *pte.File, k *keeper) {
	b := &builder{f: f, r: f.ReaderAt()}
	budget := headBudget
	for pi := range f.Program.NumPlans() {
		for _, d := range f.Program.PlanDelegates(pi) {
			if d == nil || d.Processed == nil || d.Processed.Location != pte.DataLocationSEGMENT {
				continue
			}
			pl, ok := b.locate(d.Processed)
			if !ok || pl.size == 0 {
				continue
			}
			off, size := pl.off, pl.size
			if !delegate.IsTensorRT(d.ID) {
				k.want(off, min(size, delegate.HeaderSize), nil)
				continue
			}
			k.want(off, min(size, delegate.HeaderSize), func(k *keeper, hdr []byte) {
				if len(hdr) < delegate.HeaderSize {
					return
				}
				h, _ := delegate.ParseHeader(hdr)
				mo, mn := int64(h.MetadataOffset), int64(h.MetadataSize)
				if mn > 0 && mn <= delegate.MaxMetadataSize && mo+mn <= size && mn <= budget {
					budget -= mn
					k.want(off+mo, mn, nil)
				}
			})
			if size > delegate.HeaderSize {
				k.want(off+size-1, 1, nil)
			}
		}
	}
}
