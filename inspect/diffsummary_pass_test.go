package inspect

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
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
// the one reading every comparison again gives (BuildPair, then
// SummarizeDiff without Constants).
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
	pa, pb, err := BuildPair(files[0], files[1], &Options{Hash: true})
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
// byte is read twice. Beyond heldBudget they are left to SummarizeDiff,
// which reads them again, and only those bytes are read twice.
func TestDiffPassCrossing(t *testing.T) {
	progs := genPrograms(t)
	const n = 1 << 18
	a := withConstantSegment(t, progs["segment"], ramp(n, nil), ramp(n, func(int) float32 { return 3 }))
	b := withConstantSegment(t, progs["segment"], ramp(n, nil), ramp(n, func(i int) float32 { return float32(i % 2) }))
	b = swapLastTensors(t, b)
	check := func(t *testing.T, got *DiffSummary) {
		require.Len(t, got.Methods, 1)
		require.Len(t, got.Methods[0].Tensors, 2)
		for _, td := range got.Methods[0].Tensors {
			require.NotNil(t, td.Data)
			assert.Equal(t, int64(n), td.Data.Elements)
		}
	}
	t.Run("held", func(t *testing.T) {
		check(t, summarizeCounting(t, [2][]byte{a, b}, func(files [2]*pte.File, reads [2]*testkit.RangeReaderAt, _ [2]*Document) {
			for i, f := range files {
				assertReadOnce(t, fmt.Sprintf("file %d", i), reads[i], f.Size)
			}
		}))
	})
	t.Run("one buffer held", func(t *testing.T) {
		// B's first buffer is read before A's second, which is compared
		// with it as it is read: only B's is held.
		defer func(b int64) { heldBudget = b }(heldBudget)
		heldBudget = 4 * n
		check(t, summarizeCounting(t, [2][]byte{a, b}, func(files [2]*pte.File, reads [2]*testkit.RangeReaderAt, _ [2]*Document) {
			for i, f := range files {
				assertReadOnce(t, fmt.Sprintf("file %d", i), reads[i], f.Size)
			}
		}))
	})
	t.Run("over budget", func(t *testing.T) {
		defer func(b int64) { heldBudget = b }(heldBudget)
		heldBudget = 4*n - 1 // not one of the pairing's buffers
		check(t, summarizeCounting(t, [2][]byte{a, b}, func(files [2]*pte.File, reads [2]*testkit.RangeReaderAt, docs [2]*Document) {
			seg, ok := constSegment(files[0], docs[0])
			require.True(t, ok)
			twice, _ := reads[0].Reread()
			inSeg, _ := reads[0].RereadIn(testkit.Range{Off: int64(seg.FileOffset), End: int64(seg.FileOffset + seg.Size)})
			assert.Equal(t, int64(4*n), inSeg, "one buffer of A read again")
			assert.Equal(t, inSeg, twice, "nothing else read again")
		}))
	})
}
