package export

import (
	"bytes"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ptekit/ptekit/delegate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSmallEnginesPastHeldBudget exports the same small engines with all,
// some and none of them held in memory, and as readers of their bytes:
// the programs are byte-identical (a repeated path, a hard link and a
// copy are one blob each time), and at most one engine file is open
// while writing.
func TestSmallEnginesPastHeldBudget(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd")
	}
	dir := t.TempDir()
	paths := writeEngineFiles(t, dir, 1024, 1024, 3000, maxHeldEngine, 9000, 1024)
	link := filepath.Join(dir, "link.engine")
	require.NoError(t, os.Link(paths[2], link))
	cp := filepath.Join(dir, "copy.engine")
	data, err := os.ReadFile(paths[4])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cp, data, 0o644))
	paths = append(paths, link, paths[1], cp)
	m := chainMethod("forward", len(paths))
	for i, p := range paths {
		m.Calls[i].Engine = EngineFile(p)
	}
	prog := &Program{Methods: []*Method{m}}
	var want []byte
	defer func(old int64) { maxHeldEngines = old }(maxHeldEngines)
	for _, budget := range []int64{maxHeldEngines, 4096, 0} {
		maxHeldEngines = budget
		base := openFDs(t)
		w := &fdCountingWriter{t: t}
		res, err := Write(w, prog, nil)
		require.NoError(t, err, "budget %d", budget)
		assert.Equal(t, 6, res.Blobs, "budget %d: distinct engine contents", budget)
		assert.LessOrEqual(t, w.max-base, 1, "budget %d: engine files open at once while writing", budget)
		if want == nil {
			want = bytes.Clone(w.buf.Bytes())
			verifyClean(t, want)
			continue
		}
		assert.True(t, bytes.Equal(want, w.buf.Bytes()), "budget %d: program differs from the one with every engine held", budget)
	}
	// Small engine files are compared by their SHA-256 (dedupSummed);
	// the same bytes given as readers are compared by pte.DedupPayloads:
	// the programs are the same.
	for i, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		m.Calls[i].Engine = EngineReader(bytes.NewReader(data), int64(len(data)))
	}
	var buf bytes.Buffer
	res, err := Write(&buf, prog, nil)
	require.NoError(t, err)
	assert.Equal(t, 6, res.Blobs, "engines as readers: distinct engine contents")
	assert.True(t, bytes.Equal(want, buf.Bytes()), "program of the engines as readers differs from the one of the files")
}

// TestSmallFileReadAt reads a smallFile at every kind of offset, and
// refuses a file replaced after it was read; readSmallEngine gives the
// SHA-256 of the bytes it read.
func TestSmallFileReadAt(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("raw small-file reads are Linux only")
	}
	dir := t.TempDir()
	p := writeEngineFiles(t, dir, 100)[0]
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	buf := make([]byte, 1<<20)
	sf, sum, ok, err := readSmallEngine(p, 100, buf, nil, nil)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, sha256.Sum256(data), sum)
	_, _, ok, err = readSmallEngine(p, 99, buf, nil, nil)
	require.NoError(t, err)
	assert.False(t, ok, "larger than the limit")
	_, _, ok, err = readSmallEngine(dir, 1<<20, buf, nil, nil)
	require.NoError(t, err)
	assert.False(t, ok, "a directory takes the general path")

	buf = make([]byte, 40)
	n, err := sf.ReadAt(buf, 10)
	require.NoError(t, err)
	assert.Equal(t, data[10:50], buf[:n])
	n, err = sf.ReadAt(buf, 80)
	assert.Equal(t, io.EOF, err)
	assert.Equal(t, data[80:], buf[:n])
	n, err = sf.ReadAt(buf, 100)
	assert.Equal(t, io.EOF, err)
	assert.Zero(t, n)
	_, err = sf.ReadAt(buf, -1)
	assert.Error(t, err)

	// The file rewritten in place (same inode, same size) is refused: the
	// export compared it with the others by the bytes it first read. (An
	// attack: only its inode and size were checked, and the program got
	// the new bytes where the dedup had decided by the old ones.)
	changed := bytes.Clone(data)
	changed[50] ^= 1
	require.NoError(t, os.WriteFile(p, changed, 0o644))
	_, err = sf.ReadAt(buf, 0)
	assert.ErrorContains(t, err, "changed during the export")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	n, err = sf.ReadAt(buf, 60)
	require.NoError(t, err)
	assert.Equal(t, data[60:100], buf[:n], "the same bytes written back")

	// Another file put in its place, even of the same size, is refused.
	other := writeEngineFiles(t, t.TempDir(), 100)[0]
	require.NoError(t, os.Rename(other, p))
	_, err = sf.ReadAt(buf, 0)
	assert.ErrorContains(t, err, "changed during the export")
	require.NoError(t, os.Remove(p))
	_, err = sf.ReadAt(buf, 0)
	assert.ErrorContains(t, err, "open")
}

// TestSmallBlobReadsAsDelegateReader: the blob of a small engine file reads
// as delegate.NewBlobReader's at every offset and length, its engine's
// bytes kept in the export's spool or read again from the file. From the
// spool it is the bytes read when the file was opened (whose sum the
// export compared), whatever the file became; read again, an engine file
// cut short is reported.
func TestSmallBlobReadsAsDelegateReader(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("raw small-file reads are Linux only")
	}
	for _, spooled := range []bool{true, false} {
		p := writeEngineFiles(t, t.TempDir(), 300)[0]
		b := &built{}
		if !spooled {
			b.spooled = true // and no spool
		}
		src, err := b.open(EngineFile(p), map[string]*source{})
		require.NoError(t, err)
		require.True(t, src.summed)
		meta := &delegate.Metadata{IOBindings: []delegate.Binding{{Name: "x", DType: "float16", Shape: []int64{1, 8}, IsInput: true}, {Name: "y", DType: "float16", Shape: []int64{1, 8}}}}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		want, err := delegate.NewBlobReader(meta, bytes.NewReader(data), int64(len(data)))
		require.NoError(t, err)
		prefix, err := (*delegate.EncodeOptions)(nil).Prefix(meta, src.size)
		require.NoError(t, err)
		e, err := b.smallBlobEntry(prefix, src)
		require.NoError(t, err)
		got := e.sr
		require.Equal(t, want.Size(), got.Size())
		readsAlike := func() {
			t.Helper()
			for off := int64(0); off <= want.Size(); off += 37 {
				for _, n := range []int{0, 1, 100, 400, int(want.Size())} {
					g, w := make([]byte, n), make([]byte, n)
					gn, gerr := got.ReadAt(g, off)
					wn, werr := want.ReadAt(w, off)
					require.Equal(t, wn, gn, "spooled %v: read %d at %d", spooled, n, off)
					assert.Equal(t, w[:wn], g[:gn], "spooled %v: read %d at %d", spooled, n, off)
					assert.Equal(t, werr == nil, gerr == nil, "spooled %v: read %d at %d: %v, %v", spooled, n, off, werr, gerr)
				}
			}
		}
		readsAlike()
		require.NoError(t, os.Truncate(p, 0))
		if spooled {
			readsAlike()
			b.close()
			continue
		}
		_, err = got.ReadAt(make([]byte, got.Size()), 0)
		assert.ErrorContains(t, err, "changed during the export")
	}
}
