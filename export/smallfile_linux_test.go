package export

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEngineSpool adds engines of many sizes to a spool, past several of
// its batches, and reads each back, in order and out of order, whole and
// in part; a spool whose file cannot be made takes no more engines once
// its first batch is full, and still reads back what it took.
func TestEngineSpool(t *testing.T) {
	var engines [][]byte
	for i := range 200 {
		e := make([]byte, 1+(i*997)%maxHeldEngine)
		for k := range e {
			e[k] = byte(i*31 + k)
		}
		engines = append(engines, e)
	}
	check := func(s *engineSpool, offs []int64, order []int) {
		t.Helper()
		for _, i := range order {
			if offs[i] < 0 {
				continue
			}
			e := engines[i]
			got := make([]byte, len(e))
			require.NoError(t, s.readAt(got, offs[i]), "engine %d", i)
			require.True(t, bytes.Equal(e, got), "engine %d", i)
			part := got[:len(e)/2]
			require.NoError(t, s.readAt(part, offs[i]+int64(len(e)-len(part))), "end of engine %d", i)
			require.True(t, bytes.Equal(e[len(e)-len(part):], part), "end of engine %d", i)
		}
	}
	forward, backward := make([]int, len(engines)), make([]int, len(engines))
	for i := range engines {
		forward[i], backward[i] = i, len(engines)-1-i
	}

	s := newEngineSpool()
	defer s.close()
	offs := make([]int64, len(engines))
	for i, e := range engines {
		offs[i] = s.add(e, sha256.Sum256(e))
		require.GreaterOrEqual(t, offs[i], int64(0), "engine %d", i)
	}
	require.Greater(t, s.flushed, int64(2*spoolBuffer), "the engines pass several batches")
	require.NotEmpty(t, s.pending, "the last batch is pending")
	check(s, offs, forward)
	check(s, offs, backward)
	// Sealed, the last batch is written and its buffer is the window.
	s.seal()
	assert.Empty(t, s.pending, "the last batch is written")
	assert.Equal(t, spoolBuffer, cap(s.win), "the window is the batch's buffer")
	check(s, offs, backward)
	check(s, offs, forward)

	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	s = newEngineSpool()
	took := 0
	for i, e := range engines {
		if offs[i] = s.add(e, sha256.Sum256(e)); offs[i] >= 0 {
			took++
		}
	}
	require.True(t, s.failed)
	assert.Nil(t, s.f)
	assert.Positive(t, took)
	assert.Less(t, took, len(engines))
	check(s, offs, backward)
}

// TestEngineDir reads small engine files of two directories, alternating,
// each opened relative to the last directory opened: each read is its
// file's bytes; a file or directory that is missing is reported with the
// whole path; a name with no directory is opened as it is.
func TestEngineDir(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	require.NoError(t, os.Mkdir(a, 0o755))
	require.NoError(t, os.Mkdir(b, 0o755))
	pa := writeEngineFiles(t, a, 10, 20, 30)
	pb := writeEngineFiles(t, b, 40, 50)
	var d engineDir
	defer d.close()
	buf := make([]byte, maxHeldEngine)
	for _, p := range []string{pa[0], pa[1], pb[0], pa[2], pb[1], pb[0], pa[0]} {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		sf, sum, ok, err := readSmallEngine(p, maxHeldEngine, buf, nil, &d)
		require.NoError(t, err, p)
		require.True(t, ok, p)
		assert.Equal(t, sha256.Sum256(data), sum, p)
		assert.Equal(t, int64(len(data)), sf.size, p)
		assert.Equal(t, filepath.Dir(p), d.path, "the last directory is kept open")
	}
	for _, p := range []string{filepath.Join(a, "missing.engine"), filepath.Join(root, "missing", "x.engine")} {
		_, _, _, err := readSmallEngine(p, maxHeldEngine, buf, nil, &d)
		var pe *os.PathError
		require.ErrorAs(t, err, &pe, p)
		assert.Equal(t, p, pe.Path)
		assert.ErrorIs(t, err, os.ErrNotExist)
	}
	fd, name := d.at("x.engine")
	assert.Equal(t, unix.AT_FDCWD, fd)
	assert.Equal(t, "x.engine", name)
	fd, name = d.at("/x.engine")
	assert.Equal(t, unix.AT_FDCWD, fd, "a file of the root directory")
	assert.Equal(t, "/x.engine", name)
}

// TestSpoolHoldsEachEngineOnce is an attack: a manifest naming one small
// engine by many paths (hard links, a symbolic link, another spelling)
// made the spool hold its bytes once per path (20,000 links to one 16 KiB
// engine: 320 MB of $TMPDIR, memory on a tmpfs, for a 4.7 MB program).
// The spool now holds each distinct engine once, and each path reads its
// engine's bytes from it.
func TestSpoolHoldsEachEngineOnce(t *testing.T) {
	dir := t.TempDir()
	engines := writeEngineFiles(t, dir, maxHeldEngine, 1000)
	paths := []string{engines[1]}
	for i := range 40 { // 40 x 16 KiB: past several of the spool's batches
		p := filepath.Join(dir, fmt.Sprintf("link%d.engine", i))
		require.NoError(t, os.Link(engines[0], p))
		paths = append(paths, p)
	}
	sym := filepath.Join(dir, "sym.engine")
	require.NoError(t, os.Symlink(engines[0], sym))
	paths = append(paths, sym, filepath.Join(dir, ".", "e1.engine"), dir+"/./e0.engine")
	b := &built{}
	defer b.close()
	files := map[string]*source{}
	for _, p := range paths {
		src, err := b.open(EngineFile(p), files)
		require.NoError(t, err, p)
		require.True(t, src.summed, p)
		want, err := os.ReadFile(p)
		require.NoError(t, err)
		got := make([]byte, src.size)
		_, err = src.r.ReadAt(got, 0)
		require.NoError(t, err, p)
		require.True(t, bytes.Equal(want, got), "%s: the spool gives other bytes", p)
	}
	require.NotNil(t, b.spool)
	assert.Equal(t, int64(maxHeldEngine+1000), b.spool.flushed+int64(len(b.spool.pending)),
		"bytes in the spool: each distinct engine once")
}
