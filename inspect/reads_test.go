package inspect

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
