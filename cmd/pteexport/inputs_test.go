package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/pte"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oneEngine is a manifest calling the engine file e1.engine.
const oneEngine = `{"methods": [{"name": "forward",
  "inputs": [{"name": "x", "dtype": "float32", "shape": [2, 2]}], "outputs": ["y"],
  "engines": [{"engine": "e1.engine", "inputs": ["x"], "outputs": [{"binding": "y", "dtype": "float32", "shape": [2, 2]}]}]}]}`

// oneBlob is a manifest passing the blob b1.blob through.
const oneBlob = `{"methods": [{"name": "forward",
  "inputs": [{"name": "x", "dtype": "float32", "shape": [2, 2]}], "outputs": ["y"],
  "engines": [{"blob": "b1.blob", "inputs": ["x"], "outputs": [{"binding": "y", "dtype": "float32", "shape": [2, 2]}]}]}]}`

// TestOutputIsAnInput: an output that is the manifest, an engine or a blob
// the manifest names (by path, symbolic link or hard link) is refused with
// or without --force, exit 1, with a message that names both files and
// never suggests --force; every input is left byte for byte as it was.
func TestOutputIsAnInput(t *testing.T) {
	m := writeManifest(t, oneEngine, map[string]string{"e1.engine": "ENGINE"})
	dir := filepath.Dir(m)
	engine := filepath.Join(dir, "e1.engine")

	// A blob to pass through: the payload of a program built from e1.
	built := filepath.Join(t.TempDir(), "built.pte")
	r := runCmd("--manifest", m, "-o", built)
	require.Equal(t, 0, r.code, r.stderr)
	f, err := pte.Open(built)
	require.NoError(t, err)
	pl, err := f.DelegateData(0, 0)
	require.NoError(t, err)
	blob, err := pl.Data()
	require.NoError(t, err)
	f.Close()
	blobPath := filepath.Join(dir, "b1.blob")
	require.NoError(t, os.WriteFile(blobPath, blob, 0o644))
	mb := filepath.Join(dir, "mb.json")
	require.NoError(t, os.WriteFile(mb, []byte(oneBlob), 0o644))

	link := func(name, target string, hard bool) string {
		p := filepath.Join(dir, name)
		if hard {
			require.NoError(t, os.Link(target, p))
		} else {
			require.NoError(t, os.Symlink(filepath.Base(target), p))
		}
		return p
	}
	engineSym := link("sym.engine", engine, false)
	engineHard := link("hard.engine", engine, true)
	manifestSym := link("sym.json", m, false)
	manifestHard := link("hard.json", m, true)
	blobHard := link("hard.blob", blobPath, true)

	inputs := map[string][]byte{}
	for _, p := range []string{m, engine, blobPath, mb} {
		inputs[p], err = os.ReadFile(p)
		require.NoError(t, err)
	}
	for _, c := range []struct {
		manifest, out, input string
	}{
		{m, engine, engine},
		{m, m, m},
		{m, engineSym, engine},
		{m, engineHard, engine},
		{m, manifestSym, m},
		{m, manifestHard, m},
		{mb, blobPath, blobPath},
		{mb, blobHard, blobPath},
		{mb, mb, mb},
	} {
		for _, force := range []bool{true, false} {
			args := []string{"--manifest", c.manifest, "-o", c.out}
			if force {
				args = append(args, "--force")
			}
			r := runCmd(args...)
			assert.Equal(t, 1, r.code, "%v: %s", args, r.stdout)
			assert.Contains(t, r.stderr, c.out, "%v", args)
			assert.Contains(t, r.stderr, "is the input file", "%v", args)
			assert.Contains(t, r.stderr, filepath.Base(c.input), "%v", args)
			assert.NotContains(t, r.stderr, "--force", "%v", args)
			assert.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
			for p, want := range inputs {
				got, err := os.ReadFile(p)
				require.NoError(t, err)
				require.Equal(t, want, got, "%v replaced %s", args, p)
			}
		}
	}
	// Nothing else appeared in the directory.
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, ents, 9)
}

// TestRebakeOutputIsAnotherNameOfTheInput: a re-bake in place names the
// input by the same path; another name for it (symbolic or hard link) is
// refused like any input.
func TestRebakeOutputIsAnotherNameOfTheInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.pte")
	data, err := os.ReadFile(carrier(t, nil, 64))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(in, data, 0o644))
	sym := filepath.Join(dir, "sym.pte")
	require.NoError(t, os.Symlink("m.pte", sym))
	hard := filepath.Join(dir, "hard.pte")
	require.NoError(t, os.Link(in, hard))
	for _, out := range []string{sym, hard} {
		r := runCmd("--from", in, "-o", out, "--force", "--weight-streaming-budget-per-engine", "1MiB")
		assert.Equal(t, 1, r.code, r.stdout)
		assert.Contains(t, r.stderr, "is the input file "+in)
		assert.NotContains(t, r.stderr, "--force")
		got, _ := os.ReadFile(in)
		require.Equal(t, data, got)
	}
	r := runCmd("--from", in, "-o", dir+"/./m.pte", "--force", "--weight-streaming-budget-per-engine", "1MiB")
	require.Equal(t, 0, r.code, r.stderr)
}
