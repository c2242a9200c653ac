package export

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/pte"
)

// TestRebakeFileLazyPlans is issue 22's acceptance: a two-delegate program
// opened with pte.OpenOptions.LazyPlans re-bakes through RebakeFile exactly
// as the program read whole does, byte for byte. It was refused as having
// no TensorRTBackend delegate when the plans were a field, nil for it.
func TestRebakeFileLazyPlans(t *testing.T) {
	in := twoEngineProgram(t, 128)
	budget := int64(2 << 30)
	rebakeWith := func(opts *pte.OpenOptions) []byte {
		f, err := pte.OpenWith(in, opts)
		require.NoError(t, err)
		defer f.Close()
		out := filepath.Join(t.TempDir(), "out.pte")
		res, err := RebakeFile(context.Background(), f, in, out, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)})
		require.NoError(t, err)
		assert.Equal(t, 2, res.Delegates)
		data, err := os.ReadFile(out)
		require.NoError(t, err)
		return data
	}
	whole := rebakeWith(nil)
	lazy := rebakeWith(&pte.OpenOptions{LazyPlans: true})
	assert.True(t, bytes.Equal(whole, lazy), "the lazily opened program re-bakes to other bytes")
}
