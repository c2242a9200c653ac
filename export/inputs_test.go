package export

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteFileRefusesItsInputs: an output that is an engine file the
// program reads, or one of Options.Inputs, is refused with or without
// NoOverwrite, by path, symbolic link or hard link, and the input is
// left intact.
func TestWriteFileRefusesItsInputs(t *testing.T) {
	dir := t.TempDir()
	engine := filepath.Join(dir, "e1.engine")
	require.NoError(t, os.WriteFile(engine, []byte("engine"), 0o644))
	manifest := filepath.Join(dir, "m.json")
	require.NoError(t, os.WriteFile(manifest, []byte("{}"), 0o644))
	sym := filepath.Join(dir, "sym.engine")
	require.NoError(t, os.Symlink("e1.engine", sym))
	hard := filepath.Join(dir, "hard.json")
	require.NoError(t, os.Link(manifest, hard))

	m := chainMethod("forward", 1)
	m.Calls[0].Engine = EngineFile(engine)
	p := &Program{Methods: []*Method{m}}
	for _, c := range []struct{ out, in, via string }{
		{engine, engine, ""},
		{sym, engine, "symbolic link"},
		{manifest, manifest, ""},
		{hard, manifest, "hard link"},
	} {
		for _, noOverwrite := range []bool{false, true} {
			_, err := WriteFile(c.out, p, &Options{Inputs: []string{manifest}, NoOverwrite: noOverwrite})
			var ie *InputError
			require.ErrorAs(t, err, &ie, "%s", c.out)
			assert.Equal(t, c.in, ie.Input)
			assert.Equal(t, c.via, ie.Via)
		}
	}
	got, _ := os.ReadFile(engine)
	assert.Equal(t, "engine", string(got))
	got, _ = os.ReadFile(manifest)
	assert.Equal(t, "{}", string(got))

	// Anywhere else it is written.
	out := filepath.Join(dir, "model.pte")
	_, err := WriteFile(out, p, &Options{Inputs: []string{manifest}})
	require.NoError(t, err)
	assert.FileExists(t, out)
}
