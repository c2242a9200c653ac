package inspect

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// withConstantSegment returns base with one more segment holding buffers
// (a constant segment; offsets[0] is the placeholder, empty buffer) and
// one float tensor per buffer appended to method 0's values.
func withConstantSegment(t testing.TB, base []byte, bufs ...[]float32) []byte {
	t.Helper()
	f, err := pte.NewFile(bytes.NewReader(base), int64(len(base)))
	require.NoError(t, err)
	defer f.Close()
	segs, err := f.SegmentReaders()
	require.NoError(t, err)
	p := f.Program
	var data []byte
	offsets := []uint64{0}
	ep := p.Plan(0)
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
func withInlineConstants(t testing.TB, base []byte, bufs ...[]float32) []byte {
	t.Helper()
	return testprog.Rewrite(t, base, func(p *pte.Program) {
		p.ConstantSegment = nil
		p.ConstantBuffer = []*pte.Buffer{{}}
		ep := p.Plan(0)
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

// summarizeCounting opens both programs through range recorders (the
// reads of opening forgotten), summarizes them with BuildDiffPair's pass,
// calls counted with the recorders and then checks that the summary is
// the one reading every comparison again gives (BuildDiffPair's documents,
// then SummarizeDiff without Constants).
func summarizeCounting(t *testing.T, pair [2][]byte, counted func(files [2]*pte.File, reads [2]*testkit.RangeReaderAt, docs [2]*Document)) *DiffSummary {
	t.Helper()
	var files [2]*pte.File
	var reads [2]*testkit.RangeReaderAt
	for i, data := range pair {
		files[i], reads[i] = openRecording(t, data)
	}
	da, db, cc, err := BuildDiffPair(files[0], files[1], nil)
	require.NoError(t, err)
	got, err := SummarizeDiff(files[0], files[1], &DiffSummaryOptions{Docs: [2]*Document{da, db}, Constants: cc})
	require.NoError(t, err)
	counted(files, reads, [2]*Document{da, db})
	pa, pb, _, err := BuildDiffPair(files[0], files[1], nil)
	require.NoError(t, err)
	want, err := SummarizeDiff(files[0], files[1], &DiffSummaryOptions{Docs: [2]*Document{pa, pb}})
	require.NoError(t, err)
	assert.Equal(t, want, got, "the pass's comparisons are those reading again gives")
	return got
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
			got := summarizeCounting(t, pair, func(files [2]*pte.File, reads [2]*testkit.RangeReaderAt, _ [2]*Document) {
				for i, f := range files {
					assertReadOnce(t, fmt.Sprintf("file %d", i), reads[i], f.Size)
				}
			})

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

// TestDiffPassCrossing: pairings one forward pass cannot make as it reads
// (A's first buffer against B's second and A's second against B's first)
// are made from the bytes the pass kept of one side as it reads the
// other: the summary is the one reading every comparison gives, and no
// byte is read twice. Beyond heldBudget they are compared by the digests
// of their sides, still reading no byte twice: exact when the bytes are
// the same, and differing bytes are reported with their elements not
// compared.
func TestDiffPassCrossing(t *testing.T) {
	progs := genPrograms(t)
	const n = 1 << 18
	a := withConstantSegment(t, progs["segment"], ramp(n, nil), ramp(n, func(int) float32 { return 3 }))
	b := withConstantSegment(t, progs["segment"], ramp(n, nil), ramp(n, func(i int) float32 { return float32(i % 2) }))
	b = swapLastTensors(t, b)
	// The same buffers in the other order, paired crossing.
	moved := swapLastTensors(t, withConstantSegment(t, progs["segment"], ramp(n, func(int) float32 { return 3 }), ramp(n, nil)))
	check := func(t *testing.T, got *DiffSummary) {
		require.Len(t, got.Methods, 1)
		require.Len(t, got.Methods[0].Tensors, 2)
		for _, td := range got.Methods[0].Tensors {
			require.NotNil(t, td.Data)
			assert.Equal(t, int64(n), td.Data.Elements)
		}
	}
	readOnce := func(files [2]*pte.File, reads [2]*testkit.RangeReaderAt, _ [2]*Document) {
		for i, f := range files {
			assertReadOnce(t, fmt.Sprintf("file %d", i), reads[i], f.Size)
		}
	}
	t.Run("held", func(t *testing.T) {
		check(t, summarizeCounting(t, [2][]byte{a, b}, readOnce))
	})
	t.Run("one buffer held", func(t *testing.T) {
		// B's first buffer is read before A's second, which is compared
		// with it as it is read: only B's is held.
		defer func(b int64) { heldBudget = b }(heldBudget)
		heldBudget = 4 * n
		check(t, summarizeCounting(t, [2][]byte{a, b}, readOnce))
	})
	t.Run("over budget", func(t *testing.T) {
		defer func(b int64) { heldBudget = b }(heldBudget)
		heldBudget = 4*n - 1 // not one of the pairing's buffers
		var files [2]*pte.File
		var reads [2]*testkit.RangeReaderAt
		for i, data := range [2][]byte{a, b} {
			files[i], reads[i] = openRecording(t, data)
		}
		got, err := SummarizeDiff(files[0], files[1], nil)
		require.NoError(t, err)
		readOnce(files, reads, [2]*Document{})
		check(t, got)
		// The first pairing is made in file order, the second (A's
		// second buffer against B's first) by digests.
		first, second := got.Methods[0].Tensors[0], got.Methods[0].Tensors[1]
		assert.Empty(t, first.Data.NotCompared)
		assert.Equal(t, int64(n/2), first.Data.Differing)
		assert.True(t, second.BytesDiffer)
		assert.Equal(t, notCompared, second.Data.NotCompared)
		assert.Zero(t, second.Data.Differing)
	})
	t.Run("over budget, same bytes", func(t *testing.T) {
		defer func(b int64) { heldBudget = b }(heldBudget)
		heldBudget = 4*n - 1
		got := summarizeCounting(t, [2][]byte{a, moved}, readOnce)
		require.Len(t, got.Methods, 1)
		require.Len(t, got.Methods[0].Tensors, 2, "data_buffer_idx differs")
		for _, td := range got.Methods[0].Tensors {
			assert.False(t, td.BytesDiffer)
			assert.Nil(t, td.Data)
		}
	})
}

// TestDiffCrossingBeyondHeldReadsOnce: two programs of two constant
// buffers of more than heldBudget each (sparse files of zeros, but for a
// few elements), the buffers paired crossing: the diff reads each byte of
// each file at most once: the pairing made in file order is compared
// element by element, the crossing one by the digests of its sides (its
// bytes differ, its elements are not compared), and neither buffer is
// held.
func TestDiffCrossingBeyondHeldReadsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("reads two sparse files of 514 MiB")
	}
	const elems = heldElems + 1024
	dir := t.TempDir()
	base := genPrograms(t)["segment"]
	var files [2]*pte.File
	var reads [2]*testkit.RangeReaderAt
	for i, name := range []string{"a.pte", "b.pte"} {
		path := filepath.Join(dir, name)
		writeSparseConstants(t, path, base, elems, i == 1)
		fh, err := os.OpenFile(path, os.O_RDWR, 0)
		require.NoError(t, err)
		t.Cleanup(func() { fh.Close() })
		fi, err := fh.Stat()
		require.NoError(t, err)
		reads[i] = testkit.NewRangeReaderAt(fh)
		files[i], err = pte.NewFileWith(reads[i], fi.Size(), &pte.OpenOptions{LazyPlans: true})
		require.NoError(t, err)
		if i == 1 {
			// An element of each of B's buffers: 1.0 at 5 in its first,
			// 2.0 at 7 in its second.
			seg, err := files[1].Segment(int(files[1].Program.ConstantSegment.SegmentIndex))
			require.NoError(t, err)
			_, err = fh.WriteAt([]byte{0, 0, 0x80, 0x3f}, seg.FileOffset+4*5)
			require.NoError(t, err)
			_, err = fh.WriteAt([]byte{0, 0, 0, 0x40}, seg.FileOffset+4*elems+4*7)
			require.NoError(t, err)
		}
	}
	s, err := SummarizeDiff(files[0], files[1], nil)
	require.NoError(t, err)
	for i, f := range files {
		assertReadOnce(t, fmt.Sprintf("file %d", i), reads[i], f.Size)
	}
	require.Len(t, s.Methods, 1)
	require.Len(t, s.Methods[0].Tensors, 2)
	// A's first buffer against B's second, in file order: compared.
	first, second := s.Methods[0].Tensors[0], s.Methods[0].Tensors[1]
	require.NotNil(t, first.Data)
	assert.Empty(t, first.Data.NotCompared)
	assert.Equal(t, int64(1), first.Data.Differing)
	assert.Equal(t, []ElementDiff{{Flat: 7, Index: []int64{7}, A: 0, B: 2}}, first.Data.Samples)
	// A's second against B's first: the pairing crosses, beyond
	// heldBudget.
	assert.True(t, second.BytesDiffer)
	require.NotNil(t, second.Data)
	assert.Equal(t, notCompared, second.Data.NotCompared)
	assert.Equal(t, int64(elems), second.Data.Elements)
}

// heldElems is heldBudget in float32 elements.
const heldElems = 256 << 20 / 4

// writeSparseConstants writes to path, sparse, the program base with a
// constant segment of two zero buffers of elems float32 each, and a
// tensor of each appended to method 0's values, in crossing order when
// crossed.
func writeSparseConstants(t *testing.T, path string, base []byte, elems int64, crossed bool) {
	t.Helper()
	f, err := pte.NewFile(bytes.NewReader(base), int64(len(base)))
	require.NoError(t, err)
	defer f.Close()
	segs, err := f.SegmentReaders()
	require.NoError(t, err)
	p := f.Program
	idx := []uint32{1, 2}
	if crossed {
		idx = []uint32{2, 1}
	}
	for _, i := range idx {
		p.Plan(0).Values = append(p.Plan(0).Values, &pte.EValue{Val: &pte.Tensor{
			ScalarType: pte.ScalarTypeFLOAT, Sizes: []int32{int32(elems)}, DimOrder: []uint8{0}, DataBufferIdx: i,
		}})
	}
	segs = append(segs, io.NewSectionReader(testprog.Zeros{}, 0, 8*elems))
	p.Segments = append(p.Segments, &pte.DataSegment{Size: uint64(8 * elems)})
	p.ConstantSegment = &pte.SubsegmentOffsets{SegmentIndex: uint32(len(segs) - 1), Offsets: []uint64{0, 0, uint64(4 * elems)}}
	out, err := os.Create(path)
	require.NoError(t, err)
	defer out.Close()
	sw := &testprog.SparseWriter{F: out}
	_, err = pte.Write(sw, p, segs, nil)
	require.NoError(t, err)
	require.NoError(t, out.Truncate(sw.Off))
}
