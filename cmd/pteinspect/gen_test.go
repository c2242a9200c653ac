package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// trtPrograms returns the small TensorRT programs of package testprog
// (written by package export), by name, for the tests and golden views that
// need a program of some shape rather than a named shared vector, which a
// holdout tree may not have.
func trtPrograms(t testing.TB) map[string][]byte {
	t.Helper()
	return testprog.Programs(t)
}

// trtPath writes trtPrograms' program name to a temporary file and returns
// its path.
func trtPath(t *testing.T, name string) string {
	t.Helper()
	data, ok := trtPrograms(t)[name]
	require.True(t, ok, name)
	path := filepath.Join(t.TempDir(), name+".pte")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// rootPastEnd writes a program whose root table offset (bytes 0..4) points
// past the end of the file and returns its path.
func rootPastEnd(t *testing.T) string {
	t.Helper()
	data := slices.Clone(trtPrograms(t)["segment"])
	binary.LittleEndian.PutUint32(data, uint32(len(data)+100))
	path := filepath.Join(t.TempDir(), "root_past_end.pte")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// unreadableFiles writes programs the reader cannot open, made from
// trtPrograms' "segment", and returns each path with the failure kind of
// the --json views: cut in half, a wrong file identifier, cut inside the
// 8-byte prefix, and a missing file.
func unreadableFiles(t *testing.T) map[string]string {
	t.Helper()
	good := trtPrograms(t)["segment"]
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, data, 0o644))
		return path
	}
	ident := slices.Clone(good)
	copy(ident[4:8], "ET13")
	return map[string]string{
		write("trunc_half.pte", good[:len(good)/2]): "invalid_program",
		write("ident.pte", ident):                   "invalid_program",
		write("trunc_7.pte", good[:7]):              "invalid_argument",
		filepath.Join(dir, "missing.pte"):           "access_failed",
	}
}

// otherBackendPath writes trtPrograms' "segment" with its delegate's
// backend id changed to XnnpackBackend (a backend ptekit does not model)
// and returns its path.
func otherBackendPath(t *testing.T) string {
	t.Helper()
	data := testprog.Rewrite(t, trtPrograms(t)["segment"], func(p *pte.Program) {
		p.Plan(0).Delegates[0].ID = "XnnpackBackend"
	})
	path := filepath.Join(t.TempDir(), "xnnpack.pte")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}
