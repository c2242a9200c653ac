package export

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/pte"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeEngineFiles writes engines of the given sizes, each with distinct
// bytes, and returns their paths.
func writeEngineFiles(t *testing.T, dir string, sizes ...int) []string {
	t.Helper()
	var paths []string
	for i, n := range sizes {
		b := make([]byte, n)
		for k := range b {
			b[k] = byte(k*13) ^ byte(k>>9) ^ byte(i*31+1)
		}
		p := filepath.Join(dir, fmt.Sprintf("e%d.engine", i))
		require.NoError(t, os.WriteFile(p, b, 0o644))
		paths = append(paths, p)
	}
	return paths
}

// enginePageOffsets returns, for each delegate of plan 0, the file offset
// of its engine modulo 4096, and checks each blob with the deployed reader.
func enginePageOffsets(t *testing.T, f *pte.File) []int64 {
	t.Helper()
	var out []int64
	for j := range f.Program.Plan(0).Delegates {
		p, err := f.DelegateData(0, j)
		require.NoError(t, err)
		rep, err := delegate.Check(p, p.Size())
		require.NoError(t, err)
		require.NoError(t, rep.Err, "delegate %d", j)
		require.True(t, rep.Deployed.OK, "delegate %d: the deployed reader accepts it", j)
		out = append(out, (p.FileOffset+int64(rep.Blob.Header.EngineOffset))%4096)
	}
	return out
}

// TestExportPageCongruent exports engines of 64 KiB and more from files:
// each engine lands on a page boundary of the output (its offset in its
// own file), small engines keep ExecuTorch's layout, the program verifies
// clean, and a re-bake that grows the head keeps every segment where it
// was relative to a base moved by whole pages, with no layout warning.
func TestExportPageCongruent(t *testing.T) {
	dir := t.TempDir()
	paths := writeEngineFiles(t, dir, 200<<10, 1000, 64<<10, 300<<10+7)
	m := chainMethod("forward", len(paths))
	for i, p := range paths {
		m.Calls[i].Engine = EngineFile(p)
	}
	out := filepath.Join(dir, "out.pte")
	_, err := WriteFile(out, &Program{Methods: []*Method{m}}, nil)
	require.NoError(t, err)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	f := verifyClean(t, data)
	pages := enginePageOffsets(t, f)
	assert.Equal(t, int64(0), pages[0], "200 KiB engine")
	assert.Equal(t, int64(0), pages[2], "64 KiB engine")
	assert.Equal(t, int64(0), pages[3], "300 KiB engine")
	h := f.Header
	assert.Zero(t, h.SegmentBaseOffset%pte.DefaultSegmentAlignment, "base %d", h.SegmentBaseOffset)
	segs := f.Program.Segments
	assert.Equal(t, upstreamNext(segs[1]), segs[2].Offset, "the 1000-byte engine's segment follows ExecuTorch's rule")

	budget := int64(1 << 30)
	in, again, res := rebakeFile(t, out, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget), TargetDevice: "cuda:0"})
	for _, w := range res.Warnings {
		assert.NotEqual(t, WarnLayout, w.Kind, "%v", w)
	}
	require.Greater(t, again.Header.ProgramSize, in.Header.ProgramSize, "the head grew")
	assert.Zero(t, (again.Header.SegmentBaseOffset-in.Header.SegmentBaseOffset)%4096, "base %d -> %d", in.Header.SegmentBaseOffset, again.Header.SegmentBaseOffset)
	for i, s := range in.Program.Segments {
		assert.Equal(t, *s, *again.Program.Segments[i], "segment %d", i)
	}
	assert.Equal(t, pages, enginePageOffsets(t, again))
}

// upstreamNext is where ExecuTorch's serializer puts the segment after s
// at the default alignment.
func upstreamNext(s *pte.DataSegment) uint64 {
	return roundUp(s.Offset+s.Size, pte.DefaultSegmentAlignment)
}

// TestExportOpensOneFileAtATime exports more engine files than a small
// descriptor budget and checks, at every write, that at most one engine
// file is open; paths naming the same file (a hard link, the same path
// twice) are one blob.
func TestExportOpensOneFileAtATime(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd")
	}
	dir := t.TempDir()
	const n = 120
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = maxHeldEngine + 1 // read from the files, not held in memory
	}
	paths := writeEngineFiles(t, dir, sizes...)
	link := filepath.Join(dir, "link.engine")
	require.NoError(t, os.Link(paths[0], link))
	paths = append(paths, link, paths[1])
	m := chainMethod("forward", len(paths))
	for i, p := range paths {
		m.Calls[i].Engine = EngineFile(p)
	}
	base := openFDs(t)
	w := &fdCountingWriter{t: t}
	res, err := Write(w, &Program{Methods: []*Method{m}}, nil)
	require.NoError(t, err)
	assert.Equal(t, n, res.Blobs, "a hard link and a repeated path are the same blob")
	assert.LessOrEqual(t, w.max-base, 1, "engine files open at once while writing")
	verifyClean(t, w.buf.Bytes())
}

type fdCountingWriter struct {
	t   *testing.T
	buf bytes.Buffer
	max int
}

func (w *fdCountingWriter) Write(p []byte) (int, error) {
	w.max = max(w.max, openFDs(w.t))
	return w.buf.Write(p)
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

var _ io.Writer = (*fdCountingWriter)(nil)
