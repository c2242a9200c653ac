package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/pte"
)

// TestShrunkFileHint is an attack by a second user: a program cut short
// after pteinspect opened it (checking its size) and before the pass read
// its segments failed with "unexpected EOF" and no hint. The failure now
// names the file and says it changed while it was read.
func TestShrunkFileHint(t *testing.T) {
	data := trtPrograms(t)["segment"]
	path := filepath.Join(t.TempDir(), "shrinks.pte")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	f, err := pte.Open(path)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, os.Truncate(path, int64(len(data)/2)))
	_, _, _, err = inspect.BuildDiffPair(f, f, &inspect.Options{Hash: true})
	require.Error(t, err)
	var stderr strings.Builder
	failErr(&stderr, path, err)
	assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), stderr.String())
	assert.Contains(t, stderr.String(), "(hint: the file changed while it was read, "+path+" is shorter now")
}
