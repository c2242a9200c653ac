package inspect

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// rangeReads is a program held in memory that counts, per byte, how many
// times it is read.
type rangeReads struct {
	mu    sync.Mutex
	b     []byte
	times []uint8
}

func (r *rangeReads) ReadAt(p []byte, off int64) (int, error) {
	n, err := bytes.NewReader(r.b).ReadAt(p, off)
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range n {
		if r.times[off+int64(i)] < 255 {
			r.times[off+int64(i)]++
		}
	}
	return n, err
}

// reset forgets the reads so far (those of opening the file).
func (r *rangeReads) reset() { clear(r.times) }

// readTwice counts the bytes from off to off+n read more than once, and
// all the bytes read.
func (r *rangeReads) readTwice(off, n int64) (twice, total int64) {
	for i, k := range r.times {
		total += int64(k)
		if int64(i) >= off && int64(i) < off+n && k > 1 {
			twice++
		}
	}
	return twice, total
}

// withConstantSegment returns base with one more segment holding buffers
// (a constant segment; offsets[0] is the placeholder, empty buffer) and
// one float tensor per buffer appended to method 0's values.
func withConstantSegment(t *testing.T, base []byte, bufs ...[]float32) []byte {
	t.Helper()
	f, err := pte.NewFile(bytes.NewReader(base), int64(len(base)))
	require.NoError(t, err)
	defer f.Close()
	segs, err := f.SegmentReaders()
	require.NoError(t, err)
	p := f.Program
	var data []byte
	offsets := []uint64{0}
	ep := p.ExecutionPlan[0]
	for i, vals := range bufs {
		offsets = append(offsets, uint64(len(data)))
		for _, v := range vals {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
		}
		ep.Values = append(ep.Values, &pte.EValue{Val: &pte.Tensor{
			ScalarType: pte.ScalarTypeFLOAT, Sizes: []int32{int32(len(vals))}, DimOrder: []uint8{0}, DataBufferIdx: uint32(i + 1),
		}})
	}
	segs = append(segs, io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))))
	p.Segments = append(p.Segments, &pte.DataSegment{Size: uint64(len(data))})
	p.ConstantSegment = &pte.SubsegmentOffsets{SegmentIndex: uint32(len(segs) - 1), Offsets: offsets}
	var out bytes.Buffer
	_, err = pte.Write(&out, p, segs, nil)
	require.NoError(t, err)
	return out.Bytes()
}

// withInlineConstants is withConstantSegment with the buffers inline, in
// Program.constant_buffer.
func withInlineConstants(t *testing.T, base []byte, bufs ...[]float32) []byte {
	t.Helper()
	return testprog.Rewrite(t, base, func(p *pte.Program) {
		p.ConstantSegment = nil
		p.ConstantBuffer = []*pte.Buffer{{}}
		ep := p.ExecutionPlan[0]
		for i, vals := range bufs {
			var storage []byte
			for _, v := range vals {
				storage = binary.LittleEndian.AppendUint32(storage, math.Float32bits(v))
			}
			p.ConstantBuffer = append(p.ConstantBuffer, &pte.Buffer{Storage: storage})
			ep.Values = append(ep.Values, &pte.EValue{Val: &pte.Tensor{
				ScalarType: pte.ScalarTypeFLOAT, Sizes: []int32{int32(len(vals))}, DimOrder: []uint8{0}, DataBufferIdx: uint32(i + 1),
			}})
		}
	})
}

// summarizeCounting opens both programs through byte counters (reset
// after opening), summarizes them with BuildDiffPair's pass and checks
// that the summary is the one reading every comparison again gives
// (BuildPair, then SummarizeDiff without Constants), which it reads after
// the counts the caller checks.
func summarizeCounting(t *testing.T, pair [2][]byte) ([2]*pte.File, [2]*rangeReads, [2]*Document, *DiffSummary) {
	t.Helper()
	var files [2]*pte.File
	var reads [2]*rangeReads
	for i, data := range pair {
		reads[i] = &rangeReads{b: data, times: make([]uint8, len(data))}
		f, err := pte.NewFileWith(reads[i], int64(len(data)), &pte.OpenOptions{LazyPlans: true})
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		files[i] = f
		reads[i].reset()
	}
	da, db, cc, err := BuildDiffPair(files[0], files[1], nil)
	require.NoError(t, err)
	got, err := SummarizeDiff(files[0], files[1], &DiffSummaryOptions{Docs: [2]*Document{da, db}, Constants: cc})
	require.NoError(t, err)
	// What the caller checks is counted now; reading again is the check.
	counted := [2]*rangeReads{}
	for i, r := range reads {
		counted[i] = &rangeReads{b: r.b, times: slices.Clone(r.times)}
	}
	pa, pb, err := BuildPair(files[0], files[1], &Options{Hash: true})
	require.NoError(t, err)
	want, err := SummarizeDiff(files[0], files[1], &DiffSummaryOptions{Docs: [2]*Document{pa, pb}})
	require.NoError(t, err)
	assert.Equal(t, want, got, "the pass's comparisons are those reading again gives")
	return files, counted, [2]*Document{da, db}, got
}

func ramp(n int, edit func(i int) float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i % 1000)
		if edit != nil {
			v[i] += edit(i)
		}
	}
	return v
}

// TestDiffPassReadsEachByteOnce: two programs whose constant data differ
// (buffers of several chunks, at other offsets and of other sizes in B)
// are summarized reading every byte of each file at most once, with the
// summary the programs' bytes read side by side give.
func TestDiffPassReadsEachByteOnce(t *testing.T) {
	progs := genPrograms(t)
	const n = 3 << 18 // 3 MiB of float32
	edit := func(i int) float32 {
		if i%100_000 == 7 {
			return 0.5
		}
		return 0
	}
	a := withConstantSegment(t, progs["segment"], ramp(n, nil), ramp(4096, nil), ramp(10, nil))
	// B's first buffer is longer (what follows moves), its second has
	// changed elements across chunks, its third is the same.
	b := withConstantSegment(t, progs["segment"], ramp(n+1001, nil), ramp(4096, edit), ramp(10, nil))
	b2 := withConstantSegment(t, progs["segment"], ramp(n, edit), ramp(4096, nil), ramp(10, func(int) float32 { return 1 }))
	inline := withInlineConstants(t, progs["segment"], ramp(n, edit), ramp(4096, nil), ramp(10, func(int) float32 { return 1 }))
	for name, pair := range map[string][2][]byte{"moved": {a, b}, "same layout": {a, b2}, "inline in B": {a, inline}} {
		t.Run(name, func(t *testing.T) {
			files, reads, docs, got := summarizeCounting(t, pair)
			for i, f := range files {
				var off, size int64
				if seg, ok := constSegment(f, docs[i]); ok {
					off, size = int64(seg.FileOffset), int64(seg.Size)
				}
				twice, total := reads[i].readTwice(off, size)
				assert.Zero(t, twice, "file %d: constant bytes read twice", i)
				// Every byte once, and the heads of delegate payloads again.
				assert.Less(t, total, f.Size+2*4096, "file %d: %d bytes read of %d", i, total, f.Size)
			}

			require.Len(t, got.Methods, 1)
			differing := map[int64]int64{}
			for _, td := range got.Methods[0].Tensors {
				if td.Data != nil {
					differing[td.ByteSizeA] = td.Data.Differing
				}
			}
			if name == "moved" {
				assert.Equal(t, map[int64]int64{4 * n: 0, 4 * 4096: 1}, differing)
			} else {
				assert.Equal(t, map[int64]int64{4 * n: 8, 4 * 10: 10}, differing)
			}
		})
	}
}

// TestDiffPassCrossing: pairings one forward pass cannot make (A's first
// buffer against B's second and A's second against B's first) are left to
// SummarizeDiff, which reads them again: the summary is still the one
// reading every comparison gives, and only those bytes are read twice.
func TestDiffPassCrossing(t *testing.T) {
	progs := genPrograms(t)
	const n = 1 << 18
	a := withConstantSegment(t, progs["segment"], ramp(n, nil), ramp(n, func(int) float32 { return 3 }))
	b := withConstantSegment(t, progs["segment"], ramp(n, nil), ramp(n, func(i int) float32 { return float32(i % 2) }))
	b = testprog.Rewrite(t, b, func(p *pte.Program) {
		vals := p.ExecutionPlan[0].Values
		t1, t2 := vals[len(vals)-2].Val.(*pte.Tensor), vals[len(vals)-1].Val.(*pte.Tensor)
		t1.DataBufferIdx, t2.DataBufferIdx = t2.DataBufferIdx, t1.DataBufferIdx
	})
	files, reads, docs, got := summarizeCounting(t, [2][]byte{a, b})
	seg, ok := constSegment(files[0], docs[0])
	require.True(t, ok)
	twice, _ := reads[0].readTwice(int64(seg.FileOffset), int64(seg.Size))
	assert.Equal(t, int64(4*n), twice, "one buffer of A read again")
	require.Len(t, got.Methods, 1)
	require.Len(t, got.Methods[0].Tensors, 2)
	for _, td := range got.Methods[0].Tensors {
		require.NotNil(t, td.Data)
		assert.Equal(t, int64(n), td.Data.Elements)
	}
}
