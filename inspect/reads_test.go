package inspect

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/delegate"
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
// does) through a recorder of the ranges read, opening included: what a
// test checks is what the whole command reads.
func openRecording(t testing.TB, data []byte) (*pte.File, *testkit.RangeReaderAt) {
	t.Helper()
	r := testkit.NewRangeReaderAt(bytes.NewReader(data))
	f, err := pte.NewFileWith(r, int64(len(data)), &pte.OpenOptions{LazyPlans: true})
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
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
// an edited engine, an edited blob header and a blob whose segment a
// delegate of another backend names first: what the documents show of
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
	// A delegate of another backend names the second blob's segment
	// before the blob's own delegate does.
	shared := testprog.Rewrite(t, base, func(p *pte.Program) {
		d := p.ExecutionPlan[0].Delegates
		d[0].ID, d[0].Processed.Index = "XnnpackBackend", d[1].Processed.Index
	})
	pairs := map[string][2][]byte{
		"blob named by another backend": {shared, base},
		"equal":                         {base, base}, "crossed": {base, crossed}, "crossed back": {crossed, base},
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

// metadataRanges returns what a view must read of the program raw (read
// here without recording): the head and flatbuffer region, and of each
// delegate payload in a segment its first bytes (a TensorRT blob's header)
// and of a TensorRT blob its last byte and metadata; merged, by offset.
func metadataRanges(t testing.TB, f *pte.File, raw io.ReaderAt) []testkit.Range {
	t.Helper()
	out := []testkit.Range{{Off: 0, End: int64(len(f.Region()))}}
	for pi := range f.NumPlans() {
		for di, d := range f.PlanDelegates(pi) {
			pl, err := f.DelegateData(pi, di)
			if d == nil || err != nil || pl.FileOffset < 0 {
				continue
			}
			off, size := pl.FileOffset, pl.Size()
			out = append(out, testkit.Range{Off: off, End: off + min(size, delegate.HeaderSize)})
			if !delegate.IsTensorRT(d.ID) || size < delegate.HeaderSize {
				continue
			}
			out = append(out, testkit.Range{Off: off + size - 1, End: off + size})
			hdr := make([]byte, delegate.HeaderSize)
			_, err = raw.ReadAt(hdr, off)
			require.NoError(t, err)
			h, _ := delegate.ParseHeader(hdr)
			mo, mn := int64(h.MetadataOffset), int64(h.MetadataSize)
			out = append(out, testkit.Range{Off: off + mo, End: off + mo + mn})
		}
	}
	slices.SortFunc(out, func(x, y testkit.Range) int { return cmp.Compare(x.Off, y.Off) })
	merged := out[:1]
	for _, r := range out[1:] {
		if last := &merged[len(merged)-1]; r.Off <= last.End {
			last.End = max(last.End, r.End)
		} else {
			merged = append(merged, r)
		}
	}
	return merged
}

// within says whether r lies in one of the merged ranges allowed.
func within(r testkit.Range, allowed []testkit.Range) bool {
	i, _ := slices.BinarySearchFunc(allowed, r.Off+1, func(a testkit.Range, off int64) int { return cmp.Compare(a.Off, off) })
	return i > 0 && allowed[i-1].Off <= r.Off && r.End <= allowed[i-1].End
}

// TestViewsReadOnlyMetadata: --size (Size) reads nothing after opening, so
// no segment byte at all; the summary view (Summarize) reads, besides the
// region opening reads, only what it shows of each delegate payload (a
// TensorRT blob's header, last byte and metadata), never an engine byte;
// neither reads a byte twice, opening included. On built programs (64
// engines; constants; an inline blob) and, without -short, a program of 2
// GiB of engines.
func TestViewsReadOnlyMetadata(t *testing.T) {
	progs := testprog.Programs(t)
	sources := map[string]func(t *testing.T) io.ReaderAt{}
	for _, name := range []string{"engines_64", "two_methods", "inline", "chain"} {
		sources[name] = func(*testing.T) io.ReaderAt { return bytes.NewReader(progs[name]) }
	}
	sources["constants"] = func(t *testing.T) io.ReaderAt {
		return bytes.NewReader(withConstantSegment(t, progs["segment"], ramp(1000, nil), ramp(10, nil)))
	}
	if !testing.Short() {
		sources["2 GiB"] = func(t *testing.T) io.ReaderAt {
			path := filepath.Join(t.TempDir(), "2GiB.pte")
			testprog.WriteEngines(t, path, 64, 32<<20)
			fh, err := os.Open(path)
			require.NoError(t, err)
			t.Cleanup(func() { fh.Close() })
			return fh
		}
	}
	for name, source := range sources {
		t.Run(name, func(t *testing.T) {
			raw := source(t)
			size := int64(0)
			switch r := raw.(type) {
			case *bytes.Reader:
				size = r.Size()
			case *os.File:
				fi, err := r.Stat()
				require.NoError(t, err)
				size = fi.Size()
			}
			open := func() (*pte.File, *testkit.RangeReaderAt) {
				rr := testkit.NewRangeReaderAt(raw)
				f, err := pte.NewFileWith(rr, size, &pte.OpenOptions{LazyPlans: true})
				require.NoError(t, err)
				t.Cleanup(func() { f.Close() })
				return f, rr
			}

			f, rr := open()
			opened := len(rr.Ranges())
			rep, err := Size(f, nil)
			require.NoError(t, err)
			requireSizeSums(t, rep, size)
			require.Equal(t, opened, len(rr.Ranges()), "Size read %v after opening", rr.Ranges()[opened:])
			for _, r := range rr.Ranges() {
				require.LessOrEqual(t, r.End, int64(len(f.Region())), "read %v past the region", r)
			}
			assertReadOnce(t, "--size", rr, int64(len(f.Region())))

			f, rr = open()
			_, _, err = Summarize(f, nil)
			require.NoError(t, err)
			allowed := metadataRanges(t, f, raw)
			var must int64
			for _, r := range allowed {
				must += r.End - r.Off
			}
			for _, r := range rr.Ranges() {
				require.True(t, within(r, allowed), "summary read %v, not metadata", r)
			}
			assertReadOnce(t, "summary", rr, must)
		})
	}
}

// TestDiff2GiBReadsEachByteOnce: the acceptance case of issue 25, diff of
// two 2 GiB programs (64 engines of 32 MiB, one engine byte apart, so the
// files are read in lockstep until they differ): the whole diff, opening
// included, reads every byte of each file once, and none twice.
func TestDiff2GiBReadsEachByteOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("reads two 2 GiB sparse files")
	}
	dir := t.TempDir()
	var files [2]*pte.File
	var reads [2]*testkit.RangeReaderAt
	for i, name := range []string{"a.pte", "b.pte"} {
		path := filepath.Join(dir, name)
		testprog.WriteEngines(t, path, 64, 32<<20)
		fh, err := os.OpenFile(path, os.O_RDWR, 0)
		require.NoError(t, err)
		t.Cleanup(func() { fh.Close() })
		fi, err := fh.Stat()
		require.NoError(t, err)
		if i == 1 {
			// A byte of the last engine.
			_, err = fh.WriteAt([]byte{1}, fi.Size()-1000)
			require.NoError(t, err)
		}
		reads[i] = testkit.NewRangeReaderAt(fh)
		files[i], err = pte.NewFileWith(reads[i], fi.Size(), &pte.OpenOptions{LazyPlans: true})
		require.NoError(t, err)
		require.Greater(t, files[i].Size, int64(2<<30))
	}
	s, err := SummarizeDiff(files[0], files[1], nil)
	require.NoError(t, err)
	require.False(t, s.BitwiseEqual)
	require.Len(t, s.TensorRT, 1, "the one engine that differs")
	for i, f := range files {
		assert.Equal(t, f.Size, reads[i].Bytes(), "file %d read whole", i)
		assertReadOnce(t, fmt.Sprintf("file %d", i), reads[i], f.Size)
	}
}
