package inspect

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/ptekit/ptekit/pte"
)

// ConstantComparison is the comparison of the two programs' constant data
// made by BuildDiffPair's pass as it read the files, for SummarizeDiff
// (DiffSummaryOptions.Constants), which then reads no constant byte again.
type ConstantComparison struct {
	results map[dataKey]*dataResult
}

// constTask is one comparison of two constant buffers made in the pass:
// every decoding of the same two buffers (comparisons), fed the first
// limit bytes of each.
type constTask struct {
	a, b  constSource
	limit int64
	cmps  []*dataCmp
}

// inFile says the source is a range of the file (not in memory).
func (s constSource) inFile() bool { return !s.inline && s.n > 0 }

// BuildDiffPair is BuildPair (with Options.Hash, which it sets) that also
// compares, in the same pass, the constant data of the tensors at the same
// method and value index of both programs: each file is read once, from
// the front, in chunks; where a tensor's constant bytes are in both files
// the two ranges are read side by side (they may sit at different offsets
// and have different sizes). Comparisons that cannot be made in one
// forward pass over both files (pairings that cross, such as A's first
// buffer against B's second and A's second against B's first, or two
// pairings sharing some bytes with different partners) are left to
// SummarizeDiff, which reads them again; every other byte is read once.
func BuildDiffPair(a, b *pte.File, opts *Options) (*Document, *Document, *ConstantComparison, error) {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.Hash = true
	if a == nil || b == nil || a.Program == nil || b.Program == nil {
		da, db, err := BuildPair(a, b, &o)
		return da, db, nil, err
	}
	cmps, tasks, err := planConstants(a, b)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(tasks) == 0 {
		da, db, err := BuildPair(a, b, &o)
		if err != nil {
			return nil, nil, nil, err
		}
		return da, db, constantResults(cmps), nil
	}
	meter := meterOf(o.Progress, a.Size+b.Size)
	ra, rb := (&builder{f: a}).spans(), (&builder{f: b}).spans()
	var sums [2]digests
	if slices.Equal(ra, rb) && !slices.ContainsFunc(tasks, func(t *constTask) bool {
		return t.a.inFile() && t.b.inFile() && t.a.off != t.b.off
	}) {
		// The same layout, and every pairing at the same offset in both:
		// both files in lockstep, the bytes they share hashed once.
		c, err := newCursor([]io.ReaderAt{a.ReaderAt(), b.ReaderAt()}, a.Size, ra, meter)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, t := range scheduleLockstep(tasks, cmps) {
			if err := t.run([2]*cursor{c, c}, [2]int{0, 1}); err != nil {
				return nil, nil, nil, err
			}
		}
		if sums, err = c.finish(); err != nil {
			return nil, nil, nil, err
		}
	} else {
		ca, err := newCursor([]io.ReaderAt{a.ReaderAt()}, a.Size, ra, meter)
		if err != nil {
			return nil, nil, nil, err
		}
		cb, err := newCursor([]io.ReaderAt{b.ReaderAt()}, b.Size, rb, meter)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, t := range scheduleConstants(tasks, cmps) {
			if err := t.run([2]*cursor{ca, cb}, [2]int{0, 0}); err != nil {
				return nil, nil, nil, err
			}
		}
		for i, c := range []*cursor{ca, cb} {
			d, err := c.finish()
			if err != nil {
				return nil, nil, nil, err
			}
			sums[i] = d[0]
		}
	}
	sa, sb := sums[0], sums[1]
	da, err := build(a, &o, sa)
	if err != nil {
		return nil, nil, nil, err
	}
	db, err := build(b, &o, sb)
	if err != nil {
		return nil, nil, nil, err
	}
	return da, db, constantResults(cmps), nil
}

// constantResults returns the comparisons made.
func constantResults(cmps map[dataKey]*dataCmp) *ConstantComparison {
	c := &ConstantComparison{results: make(map[dataKey]*dataResult, len(cmps))}
	for k, d := range cmps {
		c.results[k] = d.result()
	}
	return c
}

// planConstants lists the comparisons SummarizeDiff makes (tensors at the
// same method and value index of both programs): those needing no file
// byte are made here; the others become tasks for the pass, one per pair
// of buffers.
func planConstants(a, b *pte.File) (map[dataKey]*dataCmp, []*constTask, error) {
	cmps := map[dataKey]*dataCmp{}
	// Buffers are the same when their ranges are (or, in memory, their
	// indices).
	type pair struct {
		a, b   uint32
		ra, rb span
	}
	byPair := map[pair]*constTask{}
	var tasks []*constTask
	for i := range min(a.NumPlans(), b.NumPlans()) {
		pa, pb := a.Plan(i), b.Plan(i)
		if pa == nil || pb == nil {
			continue // SummarizeDiff reports it
		}
		for k := range min(len(pa.Values), len(pb.Values)) {
			if pa.Values[k] == nil || pb.Values[k] == nil {
				continue
			}
			ta, okA := pa.Values[k].Val.(*pte.Tensor)
			tb, okB := pb.Values[k].Val.(*pte.Tensor)
			if !okA || !okB || ta == nil || tb == nil {
				continue
			}
			key := dataKey{a: ta.DataBufferIdx, b: tb.DataBufferIdx, st: ta.ScalarType, shape: fmt.Sprint(ta.Sizes)}
			if cmps[key] != nil {
				continue
			}
			sa, err := constantSource(a, ta.DataBufferIdx)
			if err != nil {
				return nil, nil, err
			}
			sb, err := constantSource(b, tb.DataBufferIdx)
			if err != nil {
				return nil, nil, err
			}
			numel, hasNum := numElements(ta.Sizes)
			d := newDataCmp(sa.n, sb.n, ta.ScalarType, numel, hasNum, ta.Sizes)
			cmps[key] = d
			switch {
			case d.limit == 0:
			case !sa.inFile() && !sb.inFile():
				d.feed(sa.mem[:d.limit], sb.mem[:d.limit])
			default:
				p := pair{a: ta.DataBufferIdx, b: tb.DataBufferIdx}
				if sa.inFile() {
					p.a, p.ra = 0, span{sa.off, sa.n}
				}
				if sb.inFile() {
					p.b, p.rb = 0, span{sb.off, sb.n}
				}
				t := byPair[p]
				if t == nil {
					t = &constTask{a: sa, b: sb}
					byPair[p] = t
					tasks = append(tasks, t)
				}
				t.limit = max(t.limit, d.limit)
				t.cmps = append(t.cmps, d)
			}
		}
	}
	return cmps, tasks, nil
}

// scheduleConstants returns the tasks one forward pass over both files
// can make, in the order to make them: on each file their ranges must not
// overlap, and tasks reading both files must come in the same order in
// both. The comparisons of the others are dropped from cmps, for
// SummarizeDiff to make by reading.
func scheduleConstants(tasks []*constTask, cmps map[dataKey]*dataCmp) []*constTask {
	var both, onlyA, onlyB []*constTask
	for _, t := range tasks {
		switch {
		case t.a.inFile() && t.b.inFile():
			both = append(both, t)
		case t.a.inFile():
			onlyA = append(onlyA, t)
		default:
			onlyB = append(onlyB, t)
		}
	}
	var dropped []*constTask
	drop := func(t *constTask) { dropped = append(dropped, t) }
	// Both files: ordered by A's offset, kept while B's offsets go on
	// forward too.
	slices.SortStableFunc(both, func(x, y *constTask) int {
		return cmp.Or(cmp.Compare(x.a.off, y.a.off), cmp.Compare(x.b.off, y.b.off))
	})
	var kept []*constTask
	var endA, endB int64
	for _, t := range both {
		if t.a.off < endA || t.b.off < endB {
			drop(t)
			continue
		}
		kept = append(kept, t)
		endA, endB = t.a.off+t.limit, t.b.off+t.limit
	}
	// One file: kept where they overlap nothing kept on that file.
	fit := func(one []*constTask, side func(*constTask) constSource) []*constTask {
		slices.SortStableFunc(one, func(x, y *constTask) int { return cmp.Compare(side(x).off, side(y).off) })
		var out []*constTask
		var end int64
		for _, t := range one {
			s := side(t)
			// The last kept two-file task starting before this one ends
			// is the only one that may overlap it.
			i, _ := slices.BinarySearchFunc(kept, s.off+t.limit, func(k *constTask, x int64) int { return cmp.Compare(side(k).off, x) })
			if s.off < end || (i > 0 && side(kept[i-1]).off+kept[i-1].limit > s.off) {
				drop(t)
				continue
			}
			out = append(out, t)
			end = s.off + t.limit
		}
		return out
	}
	sideA := func(t *constTask) constSource { return t.a }
	sideB := func(t *constTask) constSource { return t.b }
	onlyA, onlyB = fit(onlyA, sideA), fit(onlyB, sideB)
	dropComparisons(dropped, cmps)
	// The one-file tasks go before the first two-file task that starts
	// after them on their file.
	var order []*constTask
	for _, t := range append(kept, nil) {
		for len(onlyA) > 0 && (t == nil || onlyA[0].a.off < t.a.off) {
			order, onlyA = append(order, onlyA[0]), onlyA[1:]
		}
		for len(onlyB) > 0 && (t == nil || onlyB[0].b.off < t.b.off) {
			order, onlyB = append(order, onlyB[0]), onlyB[1:]
		}
		if t != nil {
			order = append(order, t)
		}
	}
	return order
}

// scheduleLockstep is scheduleConstants for a pass reading both files at
// the same offsets, where every task reading both files reads them at the
// same offset: the tasks in the order of their offset, kept while they do
// not overlap.
func scheduleLockstep(tasks []*constTask, cmps map[dataKey]*dataCmp) []*constTask {
	at := func(t *constTask) int64 {
		if t.a.inFile() {
			return t.a.off
		}
		return t.b.off
	}
	slices.SortStableFunc(tasks, func(x, y *constTask) int { return cmp.Compare(at(x), at(y)) })
	var kept, dropped []*constTask
	var end int64
	for _, t := range tasks {
		if at(t) < end {
			dropped = append(dropped, t)
			continue
		}
		kept = append(kept, t)
		end = at(t) + t.limit
	}
	dropComparisons(dropped, cmps)
	return kept
}

// dropComparisons removes the comparisons of tasks from cmps, for
// SummarizeDiff to make by reading.
func dropComparisons(tasks []*constTask, cmps map[dataKey]*dataCmp) {
	dropped := map[*dataCmp]bool{}
	for _, t := range tasks {
		for _, d := range t.cmps {
			dropped[d] = true
		}
	}
	for k, d := range cmps {
		if dropped[d] {
			delete(cmps, k)
		}
	}
}

// run reads the task's bytes (of each side in a file through its cursor,
// after the bytes before them, lane giving the file of a cursor reading
// two; the others from memory) and feeds them to its comparisons.
func (t *constTask) run(cs [2]*cursor, lane [2]int) error {
	srcs := [2]constSource{t.a, t.b}
	for i, s := range srcs {
		if s.inFile() {
			if err := cs[i].skipTo(s.off); err != nil {
				return err
			}
		}
	}
	for p := int64(0); p < t.limit; {
		m := t.limit - p
		for i, s := range srcs {
			if !s.inFile() {
				continue
			}
			if m = cs[i].avail(m); m <= 0 {
				return fmt.Errorf("inspect: diff: constant bytes %d..%d of %s are past the end of the file (%d bytes)",
					s.off, s.off+t.limit, "AB"[i:i+1], cs[i].size)
			}
		}
		var got [2][][]byte
		var bufs [2][]byte
		for i, s := range srcs {
			switch {
			case !s.inFile():
				bufs[i] = s.mem[p : p+m]
				continue
			case i == 1 && cs[1] == cs[0] && srcs[0].inFile():
				got[1] = got[0] // one read of both files
			default:
				r, err := cs[i].read(m)
				if err != nil {
					return err
				}
				got[i] = r
			}
			bufs[i] = got[i][lane[i]]
		}
		for _, d := range t.cmps {
			d.feed(bufs[0], bufs[1])
		}
		p += m
	}
	return nil
}
