package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExtractOutputSafety: --extract never writes over its input (not even
// through another name for the same file, nor with --force), and replaces
// an existing output file only with --force.
func TestExtractOutputSafety(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "a.pte")
	data := seedPrograms(t)["segment"]
	require.NoError(t, os.WriteFile(in, data, 0o644))
	link := filepath.Join(dir, "link.pte")
	require.NoError(t, os.Link(in, link))
	sym := filepath.Join(dir, "sym.pte")
	require.NoError(t, os.Symlink("a.pte", sym))

	for _, args := range [][]string{
		{"--extract", "0:0", "-o", in, in},
		{"--extract", "0:0", "-o", in, "--force", in},
		{"--extract", "0:0", "-o", link, "--force", in},
		{"--extract", "0:0", "-o", filepath.Join(dir, ".", "a.pte"), "--force", in},
		{"--extract", "0:0", "-o", sym, "--force", in},
		{"--extract", "0:0", "-o", in, "--force", sym},
	} {
		r := runArgs(nil, args...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", args, r.stdout)
		assert.Contains(t, r.stderr, "is the input file", "%v", args)
		assert.NotContains(t, r.stderr, "--force", "%v", args)
		got, err := os.ReadFile(in)
		require.NoError(t, err)
		require.Equal(t, data, got, "%v replaced the input", args)
	}

	out := filepath.Join(dir, "payload.bin")
	require.NoError(t, os.WriteFile(out, []byte("keep"), 0o644))
	r := runArgs(nil, "--extract", "0:0", "-o", out, in)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "--force")
	got, _ := os.ReadFile(out)
	assert.Equal(t, "keep", string(got))

	r = runArgs(nil, "--extract", "0:0", "-o", out, "--force", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	got, _ = os.ReadFile(out)
	assert.NotEqual(t, "keep", string(got))
	assert.NotEmpty(t, got)

	r = runArgs(nil, "--force", in)
	assert.Equal(t, exitUsage, r.code, "--force without --extract")
}
