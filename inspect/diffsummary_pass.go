package inspect

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"slices"

	"github.com/ptekit/ptekit/compilespec"
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
	src   [2]constSource // A's and B's
	limit int64
	cmps  []*dataCmp
	// fed counts the bytes of a task made as the pass reads one side
	// (flow), err what failed there.
	fed int64
	err error
	// sums digest each side, for a task whose sides are compared by their
	// digests (hashed).
	sums [2]*cutDigest
}

// cutDigest is the SHA-256 of the first bytes of a range, taken at each
// of cuts (increasing) as the bytes are written in order.
type cutDigest struct {
	h    hash.Hash
	n    int64
	cuts []int64
	sums [][]byte
}

func (c *cutDigest) write(b []byte) {
	for len(b) > 0 && len(c.sums) < len(c.cuts) {
		m := min(int64(len(b)), c.cuts[len(c.sums)]-c.n)
		c.h.Write(b[:m])
		c.n, b = c.n+m, b[m:]
		if c.n == c.cuts[len(c.sums)] {
			c.sums = append(c.sums, c.h.Sum(nil))
		}
	}
}

// inFile says the source is a range of the file (not in memory).
func (s constSource) inFile() bool { return !s.inline && s.n > 0 }

// BuildDiffPair is Build of two files with the same options and
// Options.Hash, which it sets, as diff needs them: each file is read once,
// and when both have the same layout (the same segment ranges and size)
// they are read together, the bytes they share hashed once. In the same
// pass it compares the constant data of the tensors at the same method
// and value index of both programs, the two ranges read side by side.
// Comparisons that cannot be made in one forward pass over both files
// (pairings that cross) keep the side the pass reads first in memory and
// are made as it reads the other (holdTasks), up to heldBudget bytes kept;
// the others are compared by the SHA-256 of each side. Every byte of each
// file is read at most once, opening included.
func BuildDiffPair(a, b *pte.File, opts *Options) (*Document, *Document, *ConstantComparison, error) {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.Hash = true
	if a == nil || b == nil || a.Program == nil || b.Program == nil {
		return nil, nil, nil, errNoProgram
	}
	cmps, tasks, err := planConstants(a, b)
	if err != nil {
		return nil, nil, nil, err
	}
	ps, err := passPair(a, b, &o, tasks)
	if err != nil {
		return nil, nil, nil, err
	}
	var docs [2]*Document
	for i, f := range []*pte.File{a, b} {
		if docs[i], err = build(f, &o, ps[i]); err != nil {
			return nil, nil, nil, err
		}
	}
	return docs[0], docs[1], constantResults(cmps), nil
}

// heldBudget bounds the constant bytes BuildDiffPair keeps in memory for
// the crossing pairings. Beyond it a pairing is compared by the digests of
// its two sides alone: exact when they are equal, and when they differ its
// elements are not compared (DataDiff.NotCompared), rather than read twice.
var heldBudget int64 = 256 << 20

// notCompared is DataDiff.NotCompared for a pairing beyond heldBudget.
var notCompared = fmt.Sprintf("the buffers come in another order in B than in A and, with the other such pairings, exceed the %s the diff holds in memory", compilespec.FormatSize(heldBudget))

// passPair reads both files once, hashing their spans, making the constant
// comparison tasks it can as it goes and keeping what the others
// (holdTasks) and the documents need; then it makes the others.
func passPair(a, b *pte.File, o *Options, tasks []*constTask) ([2]*passed, error) {
	meter := meterOf(o.Progress, a.Size+b.Size)
	spans := [2][]span{(&builder{f: a}).spans(), (&builder{f: b}).spans()}
	keeps := [2]*keeper{newKeep(), newKeep()}
	wantHeads(a, keeps[0])
	wantHeads(b, keeps[1])
	var order, held, flowing, hashed []*constTask
	// groups are the files each cursor reads: both in lockstep, or one
	// each; when says at which point of the pass each byte is read.
	groups := [][]*pte.File{{a}, {b}}
	var left []*constTask
	var when [2]func(int64) int64
	if slices.Equal(spans[0], spans[1]) && !slices.ContainsFunc(tasks, func(t *constTask) bool {
		return t.src[0].inFile() && t.src[1].inFile() && t.src[0].off != t.src[1].off
	}) {
		// The same layout, and every pairing at the same offset in both.
		groups = [][]*pte.File{{a, b}}
		order, left = scheduleLockstep(tasks)
		at := func(x int64) int64 { return x }
		when = [2]func(int64) int64{at, at}
	} else {
		order, left = scheduleConstants(tasks)
		when = stepsOf(order)
	}
	held, flowing, hashed = holdTasks(left, keeps, when)
	// cs[i] reads side i, as file lanes[i] of its cursor.
	var cs [2]*cursor
	var lanes [2]int
	side := 0
	for _, g := range groups {
		var rs []io.ReaderAt
		var mem [][]byte
		for _, f := range g {
			rs, mem = append(rs, f.ReaderAt()), append(mem, f.Region())
		}
		c, err := newCursor(rs, g[0].Size, spans[side], meter)
		if err != nil {
			return [2]*passed{}, err
		}
		c.keeps, c.mem = keeps[side:side+len(g)], mem
		for lane := range g {
			cs[side], lanes[side] = c, lane
			side++
		}
	}
	for _, t := range order {
		if err := t.run(cs, lanes); err != nil {
			return [2]*passed{}, err
		}
	}
	var sums [2]digests
	for side := 0; side < 2; side += len(cs[side].rs) {
		d, err := cs[side].finish()
		if err != nil {
			return [2]*passed{}, err
		}
		copy(sums[side:], d[:len(cs[side].rs)])
	}
	for _, t := range flowing {
		if t.err == nil && t.fed != t.limit {
			t.err = fmt.Errorf("inspect: diff: %d of the %d constant bytes compared were read", t.fed, t.limit)
		}
		if t.err != nil {
			return [2]*passed{}, t.err
		}
	}
	for _, t := range held {
		if err := t.runHeld(keeps); err != nil {
			return [2]*passed{}, err
		}
	}
	for _, t := range hashed {
		if err := t.compareSums(); err != nil {
			return [2]*passed{}, err
		}
	}
	return [2]*passed{{sums: sums[0], keep: keeps[0]}, {sums: sums[1], keep: keeps[1]}}, nil
}

// holdTasks arranges the tasks the pass cannot make as it reads one
// range of each file beside the other: one with a side in memory, or
// whose side in one file the pass reads wholly before it begins the other
// (when says at which point of the pass each byte is read), is made as the
// pass reads that other side (flowing), the first side held until then;
// the others are held whole and made after the pass (held). Past
// heldBudget bytes held, each side is hashed instead (hashed).
func holdTasks(tasks []*constTask, keeps [2]*keeper, when [2]func(int64) int64) (held, flowing, hashed []*constTask) {
	budget := heldBudget
	for _, t := range tasks {
		// flow is the side the task is made on as it is read, -1 for
		// none: both are held.
		flow := -1
		switch {
		case !t.src[0].inFile():
			flow = 1
		case !t.src[1].inFile():
			flow = 0
		case when[0](t.src[0].off+t.limit-1) < when[1](t.src[1].off):
			flow = 1
		case when[1](t.src[1].off+t.limit-1) < when[0](t.src[0].off):
			flow = 0
		}
		var need int64
		for i, s := range t.src {
			if s.inFile() && i != flow {
				need += t.limit
			}
		}
		if need > budget {
			t.hash(keeps)
			hashed = append(hashed, t)
			continue
		}
		budget -= need
		for i, s := range t.src {
			if s.inFile() && i != flow {
				keeps[i].want(s.off, t.limit, nil)
			}
		}
		if flow < 0 {
			held = append(held, t)
			continue
		}
		flowing = append(flowing, t)
		t.flow(keeps, flow)
	}
	return held, flowing, hashed
}

// hash has the pass hash each side of the task (both in the file) as it
// reads it, up to each comparison's limit.
func (t *constTask) hash(keeps [2]*keeper) {
	var cuts []int64
	for _, d := range t.cmps {
		cuts = append(cuts, d.limit)
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	for i, s := range t.src {
		c := &cutDigest{h: sha256.New(), cuts: cuts}
		t.sums[i] = c
		keeps[i].pass(s.off, t.limit, func(_ int64, b []byte) { c.write(b) })
	}
}

// compareSums makes a hashed task's comparisons: bytes that are the same
// on both sides need nothing more; differing elements cannot be compared.
func (t *constTask) compareSums() error {
	for _, d := range t.cmps {
		i, _ := slices.BinarySearch(t.sums[0].cuts, d.limit)
		for side, c := range t.sums {
			if i >= len(c.sums) {
				s := t.src[side]
				return fmt.Errorf("inspect: diff: constant bytes %d..%d of %s were not read", s.off, s.off+d.limit, "AB"[side:side+1])
			}
		}
		if bytes.Equal(t.sums[0].sums[i], t.sums[1].sums[i]) {
			continue
		}
		d.res.differ = true
		if d.dec != nil && d.n > 0 {
			d.data.NotCompared = notCompared
		}
	}
	return nil
}

// flow makes the task as the pass reads its side side, the other taken
// from memory or from what keeps held of it.
func (t *constTask) flow(keeps [2]*keeper, side int) {
	s, o := t.src[side], t.src[1-side]
	other := o.mem
	keeps[side].pass(s.off, t.limit, func(off int64, b []byte) {
		if t.err != nil {
			return
		}
		if other == nil {
			var ok bool
			if other, ok = keeps[1-side].at(o.off, t.limit); !ok {
				t.err = fmt.Errorf("inspect: diff: constant bytes %d..%d of %s were not read before %s's", o.off, o.off+t.limit, "AB"[1-side:2-side], "AB"[side:side+1])
				return
			}
		}
		p := off - s.off
		ob := other[p : p+int64(len(b))]
		for _, d := range t.cmps {
			if side == 0 {
				d.feed(b, ob)
			} else {
				d.feed(ob, b)
			}
		}
		t.fed += int64(len(b))
	})
}

// stepsOf returns, for a pass by two cursors that make the tasks of order
// in turn and then read the rest of A and then of B, at which step each
// byte of each file is read: the index in order of the task whose reading
// reaches it, len(order) for the rest of A, len(order)+1 for B's. Within a
// step both cursors move, so only a smaller step is surely earlier.
func stepsOf(order []*constTask) [2]func(int64) int64 {
	var ends, steps [2][]int64
	for i, t := range order {
		for side, s := range t.src {
			if s.inFile() {
				ends[side] = append(ends[side], s.off+t.limit)
				steps[side] = append(steps[side], int64(i))
			}
		}
	}
	var out [2]func(int64) int64
	for side := range out {
		e, st, rest := ends[side], steps[side], int64(len(order)+side)
		out[side] = func(x int64) int64 {
			// The first task whose range ends past x reads it (its
			// cursor moves there in that step).
			if i, _ := slices.BinarySearch(e, x+1); i < len(e) {
				return st[i]
			}
			return rest
		}
	}
	return out
}

// runHeld makes a task from the bytes keeps held of it (and memory).
func (t *constTask) runHeld(keeps [2]*keeper) error {
	var bufs [2][]byte
	for i, s := range t.src {
		if !s.inFile() {
			bufs[i] = s.mem[:t.limit]
			continue
		}
		b, ok := keeps[i].at(s.off, t.limit)
		if !ok {
			return fmt.Errorf("inspect: diff: constant bytes %d..%d of %s were not read (past the end of the file?)",
				s.off, s.off+t.limit, "AB"[i:i+1])
		}
		bufs[i] = b
	}
	for _, d := range t.cmps {
		d.feed(bufs[0], bufs[1])
	}
	return nil
}

// constantResults returns the comparisons made.
func constantResults(cmps map[dataKey]*dataCmp) *ConstantComparison {
	c := &ConstantComparison{results: make(map[dataKey]*dataResult, len(cmps))}
	for k, d := range cmps {
		c.results[k] = d.result(k.n)
	}
	return c
}

// planConstants lists the comparisons SummarizeDiff makes, one reading of
// each pair of buffers as each type (pairKey) giving those of every
// element count: those needing no file byte are made here; the others
// become tasks for the pass, one per pair of buffers.
func planConstants(a, b *pte.File) (map[dataKey]*dataCmp, []*constTask, error) {
	for i, f := range []*pte.File{a, b} {
		if err := cmp.Or(checkInlineOverlap(f, i), checkConstantSegmentOverlap(f, i)); err != nil {
			return nil, nil, err
		}
	}
	cmps := map[dataKey]*dataCmp{}
	type reading struct {
		d      *dataCmp
		sa, sb constSource
	}
	byType := map[pairKey]*reading{}
	var readings []*reading
	for i := range min(a.Program.NumPlans(), b.Program.NumPlans()) {
		pa, pb := a.Program.Plan(i), b.Program.Plan(i)
		if pa == nil || pb == nil {
			continue // SummarizeDiff reports it
		}
		for k := range min(len(pa.Values), len(pb.Values)) {
			ta, _ := valueAt(pa, k).(*pte.Tensor)
			tb, _ := valueAt(pb, k).(*pte.Tensor)
			if ta == nil || tb == nil {
				continue
			}
			sa, sb, key, err := tensorComparison(a, b, ta, tb)
			if err != nil {
				return nil, nil, err
			}
			pk := pairKey{a: bytesOf(sa), b: bytesOf(sb), st: ta.ScalarType}
			r := byType[pk]
			if r == nil {
				r = &reading{d: newDataCmp(sa.n, sb.n, ta.ScalarType), sa: sa, sb: sb}
				byType[pk] = r
				readings = append(readings, r)
			}
			r.d.want(key.n)
			cmps[key] = r.d
		}
	}
	// One task per pair of buffers, for all its types.
	type pair struct{ a, b bytesID }
	byPair := map[pair]*constTask{}
	var tasks []*constTask
	for _, r := range readings {
		switch d := r.d; {
		case d.limit == 0:
		case !r.sa.inFile() && !r.sb.inFile():
			d.feed(r.sa.mem[:d.limit], r.sb.mem[:d.limit])
		default:
			p := pair{bytesOf(r.sa), bytesOf(r.sb)}
			t := byPair[p]
			if t == nil {
				t = &constTask{src: [2]constSource{r.sa, r.sb}}
				byPair[p] = t
				tasks = append(tasks, t)
			}
			t.limit = max(t.limit, d.limit)
			t.cmps = append(t.cmps, d)
		}
	}
	return cmps, tasks, nil
}

// checkInlineOverlap refuses a program (side says which of a diff's, -1
// for a program hashed alone) two of whose inline byte vectors, or two of
// whose segments, overlap without being the same bytes. ExecuTorch's
// verifier allows it, and a vector of 1 MiB shifted by 4 bytes 2,000 times
// costs 8 KiB of program but 2 GiB of bytes compared or hashed.
func checkInlineOverlap(f *pte.File, side int) error {
	var vecs, segs namedRanges
	inline := func(b []byte, list string, i int) {
		vecs.add(bytesOf(constSource{inline: true, mem: b, n: int64(len(b))}), list, i)
	}
	for i, buf := range f.Program.ConstantBuffer {
		if buf != nil {
			inline(buf.Storage, "constant_buffer", i)
		}
	}
	for i, d := range f.Program.BackendDelegateData {
		if d != nil {
			inline(d.Data, "backend_delegate_data", i)
		}
	}
	b := &builder{f: f}
	for i, s := range f.Program.Segments {
		if off, ok := b.segmentRange(i); ok {
			segs.add(bytesID{at: int64(off), n: int64(s.Size)}, "segments", i)
		}
	}
	return cmp.Or(vecs.overlap(side), segs.overlap(side)) // memory, then the file
}

// checkConstantSegmentOverlap is checkInlineOverlap for the buffers of
// the constant segment (constantSource): disjoint when the offsets
// increase, but a crafted table (0, 4, end, 8, end, ...) makes each buffer
// run to the segment's end.
func checkConstantSegmentOverlap(f *pte.File, side int) error {
	cs := f.Program.ConstantSegment
	if cs == nil {
		return nil
	}
	var bufs namedRanges
	for i := range cs.Offsets {
		s, err := constantSource(f, uint32(i))
		if err != nil {
			return err
		}
		bufs.add(bytesOf(s), "constant_segment.offsets", i)
	}
	return bufs.overlap(side)
}

// namedRanges are byte ranges (of memory, or of the file), each named,
// without empty or repeated ones.
type namedRanges struct {
	seen map[bytesID]bool
	list []namedRange
}

type namedRange struct {
	id   bytesID
	name string
}

// add adds the range id, named list[i], unless it is empty or already in.
func (rs *namedRanges) add(id bytesID, list string, i int) {
	if id.n <= 0 || rs.seen[id] {
		return
	}
	if rs.seen == nil {
		rs.seen = map[bytesID]bool{}
	}
	rs.seen[id] = true
	rs.list = append(rs.list, namedRange{id, fmt.Sprintf("%s[%d]", list, i)})
}

// overlap returns an *OverlapError naming two of the ranges that overlap,
// or nil.
func (rs *namedRanges) overlap(side int) error {
	slices.SortFunc(rs.list, func(x, y namedRange) int { return cmp.Or(cmp.Compare(x.id.at, y.id.at), cmp.Compare(x.id.n, y.id.n)) })
	for i := 1; i < len(rs.list); i++ {
		// Sorted by start: ranges overlap only if two neighbours do.
		if p := rs.list[i-1]; rs.list[i].id.at < p.id.at+p.id.n {
			return &OverlapError{Side: side, First: p.name, Second: rs.list[i].name}
		}
	}
	return nil
}

// OverlapError is the refusal, by the diff or by a document with
// Options.Hash, of a program two of whose inline byte vectors, or two of
// whose segments, overlap without being the same bytes: comparing or
// hashing each would be quadratic in the program's size.
type OverlapError struct {
	// Side is the program: 0 for A, 1 for B, -1 for a program hashed
	// alone.
	Side int
	// First and Second name two vectors that overlap, as
	// "constant_buffer[3]", "backend_delegate_data[0]" or "segments[2]".
	First, Second string
}

// Error names the program and the vectors.
func (e *OverlapError) Error() string {
	if e.Side < 0 {
		return fmt.Sprintf("inspect: %s and %s overlap without being the same bytes (a crafted program): "+
			"hashing each would read the bytes they share once for each", e.First, e.Second)
	}
	return fmt.Sprintf("inspect: diff: %s and %s of %s overlap without being the same bytes (a crafted program): "+
		"comparing or hashing each would read the bytes they share once for each", e.First, e.Second, "AB"[e.Side:e.Side+1])
}

// scheduleConstants returns the tasks one forward pass over both files
// can make, in the order to make them (on each file their ranges must not
// overlap, and tasks reading both files must come in the same order in
// both), and the others.
func scheduleConstants(tasks []*constTask) (order, left []*constTask) {
	var both []*constTask
	var one [2][]*constTask // reading A alone, B alone
	for _, t := range tasks {
		switch {
		case t.src[0].inFile() && t.src[1].inFile():
			both = append(both, t)
		case t.src[0].inFile():
			one[0] = append(one[0], t)
		default:
			one[1] = append(one[1], t)
		}
	}
	// Both files: ordered by A's offset, kept while B's offsets go on
	// forward too.
	slices.SortStableFunc(both, func(x, y *constTask) int {
		return cmp.Or(cmp.Compare(x.src[0].off, y.src[0].off), cmp.Compare(x.src[1].off, y.src[1].off))
	})
	var kept []*constTask
	var endA, endB int64
	for _, t := range both {
		if t.src[0].off < endA || t.src[1].off < endB {
			left = append(left, t)
			continue
		}
		kept = append(kept, t)
		endA, endB = t.src[0].off+t.limit, t.src[1].off+t.limit
	}
	// One file: kept where they overlap nothing kept on that file.
	for side := range one {
		slices.SortStableFunc(one[side], func(x, y *constTask) int { return cmp.Compare(x.src[side].off, y.src[side].off) })
		var out []*constTask
		var end int64
		for _, t := range one[side] {
			s := t.src[side]
			// The last kept two-file task starting before this one ends
			// is the only one that may overlap it.
			i, _ := slices.BinarySearchFunc(kept, s.off+t.limit, func(k *constTask, x int64) int { return cmp.Compare(k.src[side].off, x) })
			if s.off < end || (i > 0 && kept[i-1].src[side].off+kept[i-1].limit > s.off) {
				left = append(left, t)
				continue
			}
			out = append(out, t)
			end = s.off + t.limit
		}
		one[side] = out
	}
	// The one-file tasks go before the first two-file task that starts
	// after them on their file.
	for _, t := range append(kept, nil) {
		for side := range one {
			for len(one[side]) > 0 && (t == nil || one[side][0].src[side].off < t.src[side].off) {
				order, one[side] = append(order, one[side][0]), one[side][1:]
			}
		}
		if t != nil {
			order = append(order, t)
		}
	}
	return order, left
}

// scheduleLockstep is scheduleConstants for a pass reading both files at
// the same offsets, where every task reading both files reads them at the
// same offset: the tasks in the order of their offset, kept while they do
// not overlap, and the others.
func scheduleLockstep(tasks []*constTask) (kept, left []*constTask) {
	at := func(t *constTask) int64 {
		if t.src[0].inFile() {
			return t.src[0].off
		}
		return t.src[1].off
	}
	slices.SortStableFunc(tasks, func(x, y *constTask) int { return cmp.Compare(at(x), at(y)) })
	var end int64
	for _, t := range tasks {
		if at(t) < end {
			left = append(left, t)
			continue
		}
		kept = append(kept, t)
		end = at(t) + t.limit
	}
	return kept, left
}

// run reads the task's bytes (of each side in a file through its cursor,
// after the bytes before them, lane giving the file of a cursor reading
// two; the others from memory) and feeds them to its comparisons.
func (t *constTask) run(cs [2]*cursor, lane [2]int) error {
	for i, s := range t.src {
		if s.inFile() {
			if err := cs[i].skipTo(s.off); err != nil {
				return err
			}
		}
	}
	for p := int64(0); p < t.limit; {
		m := t.limit - p
		for i, s := range t.src {
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
		for i, s := range t.src {
			switch {
			case !s.inFile():
				bufs[i] = s.mem[p : p+m]
				continue
			case i == 1 && cs[1] == cs[0] && t.src[0].inFile():
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
