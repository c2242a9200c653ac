package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/export"
	"github.com/ptekit/ptekit/internal/inplace"
	"github.com/ptekit/ptekit/internal/testprog"
)

// TestInspectRecoversInterruptedInPlace: pteinspect of a file that an
// in-place re-bake left torn (its writer died after writing the new head,
// before removing the undo record) first puts the old head back.
func TestInspectRecoversInterruptedInPlace(t *testing.T) {
	if !inplace.Supported() {
		t.Skip("in-place edits need write leases (Linux)")
	}
	path := filepath.Join(t.TempDir(), "p.pte")
	old := testprog.Programs(t)["aligned_4096"]
	require.NoError(t, os.WriteFile(path, old, 0o644))
	inplace.Hook = func(s inplace.Step) {
		if s == inplace.StepPartial {
			panic("crash") // stands for the writer's death
		}
	}
	budget := int64(3 << 30)
	assert.Panics(t, func() {
		export.Rebake(path, path, &export.RebakeOptions{WeightStreamingBudget: &budget, InPlace: true})
	})
	inplace.Hook = nil
	torn, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotEqual(t, old, torn, "the crash left half a head")

	r := runArgs(nil, "--json", path)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"weight_streaming_budget"`)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, old, got, "the old program is back")
	_, err = os.Stat(inplace.UndoPath(path))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
