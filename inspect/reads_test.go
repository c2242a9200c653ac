package inspect

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/export"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// TestBuildReadsEachBlobOnce: the delegate list and the problems share one
// reading of a TensorRT blob, which also gives its magic: header, last byte
// and metadata, 3 reads, where each view used to read them again and the
// magic once more (7).
func TestBuildReadsEachBlobOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "large.pte")
	require.NoError(t, os.WriteFile(path, genPrograms(t)["large_engine"], 0o644))
	f, cr := openCounting(t, path)
	before := cr.Calls()
	doc, err := Build(f, nil)
	require.NoError(t, err)
	require.Len(t, doc.Delegates, 1)
	require.NotNil(t, doc.Delegates[0].TensorRT)
	assert.LessOrEqual(t, cr.Calls()-before, int64(3), "reads of a one-blob program")
}

// openRecording opens the program data (with LazyPlans, as pteinspect
// does) through a recorder of the ranges read, the reads of opening it
// forgotten.
func openRecording(t testing.TB, data []byte) (*pte.File, *testkit.RangeReaderAt) {
	t.Helper()
	r := testkit.NewRangeReaderAt(bytes.NewReader(data))
	f, err := pte.NewFileWith(r, int64(len(data)), &pte.OpenOptions{LazyPlans: true})
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	r.Reset()
	return f, r
}

// assertReadOnce checks that r read no byte twice, and at most size bytes.
func assertReadOnce(t testing.TB, what string, r *testkit.RangeReaderAt, size int64) {
	t.Helper()
	twice, first := r.Reread()
	assert.Zero(t, twice, "%s: %d bytes read twice, the first %d..%d", what, twice, first.Off, first.End)
	assert.LessOrEqual(t, r.Bytes(), size, "%s: bytes read", what)
}

// swapLastTensors returns the program data with the constant buffers of
// method 0's last two values swapped: paired with data, each buffer meets
// the other's, in crossing order.
func swapLastTensors(t testing.TB, data []byte) []byte {
	t.Helper()
	return testprog.Rewrite(t, data, func(p *pte.Program) {
		vals := p.ExecutionPlan[0].Values
		t1, t2 := vals[len(vals)-2].Val.(*pte.Tensor), vals[len(vals)-1].Val.(*pte.Tensor)
		t1.DataBufferIdx, t2.DataBufferIdx = t2.DataBufferIdx, t1.DataBufferIdx
	})
}

// TestDiffReadsEachByteOnce: the whole diff (BuildDiffPair's pass and the
// summary) reads no byte of either file twice, and at most each file's
// size, on programs of many TensorRT delegates, each blob in its own
// segment, with constant buffers paired in crossing order, a moved layout,
// an edited engine and an edited blob header: what the documents show of
// each blob (header, last byte, metadata) comes from the pass.
func TestDiffReadsEachByteOnce(t *testing.T) {
	var w bytes.Buffer
	_, err := export.Write(&w, &export.Program{Methods: []*export.Method{testprog.DistinctEngines(200, 1024)}}, &export.Options{SegmentAlignment: 16})
	require.NoError(t, err)
	many := w.Bytes()
	const n = 3 << 16
	plus := func(d float32) func(int) float32 { return func(int) float32 { return d } }
	base := withConstantSegment(t, many, ramp(10, nil), ramp(n, nil), ramp(n, plus(3)))
	crossed := swapLastTensors(t, base)
	moved := swapLastTensors(t, withConstantSegment(t, many, ramp(10, plus(2)), ramp(n+7, nil), ramp(n, plus(1))))
	f, err := pte.NewFile(bytes.NewReader(base), int64(len(base)))
	require.NoError(t, err)
	engine, header := bytes.Clone(base), bytes.Clone(base)
	pl, err := f.DelegateData(0, 150)
	require.NoError(t, err)
	engine[pl.FileOffset+pl.Size()-3] ^= 0xff
	header[pl.FileOffset+20] ^= 0x01 // a byte of the engine size: the blob now lies
	pairs := map[string][2][]byte{
		"equal": {base, base}, "crossed": {base, crossed}, "crossed back": {crossed, base},
		"moved": {base, moved}, "moved and crossed": {moved, crossed},
		"engine": {base, engine}, "blob header": {header, base},
	}
	for name, pair := range pairs {
		t.Run(name, func(t *testing.T) {
			got := summarizeCounting(t, pair, func(files [2]*pte.File, reads [2]*testkit.RangeReaderAt, _ [2]*Document) {
				for i, f := range files {
					require.Equal(t, 200, len(f.PlanDelegates(0)))
					assertReadOnce(t, fmt.Sprintf("file %d", i), reads[i], f.Size)
				}
			})
			assert.Equal(t, bytes.Equal(pair[0], pair[1]), got.BitwiseEqual)
		})
	}
}
