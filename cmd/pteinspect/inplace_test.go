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
	"github.com/ptekit/ptekit/internal/undorecord"
)

// TestInspectReportsInterruptedInPlace: pteinspect of a file that an
// in-place re-bake left torn (its writer died halfway through the new
// head, leaving its undo record) shows the file as it is and says how to
// undo the edit; it applies nothing (issue 21: a viewer never writes).
func TestInspectReportsInterruptedInPlace(t *testing.T) {
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
		export.Rebake(path, path, &export.RebakeOptions{WeightStreamingBudget: testprog.BudgetPtr(budget), InPlace: true})
	})
	inplace.Hook = nil
	torn, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotEqual(t, old, torn, "the crash left half a head")
	rec, err := os.ReadFile(undorecord.Path(path))
	require.NoError(t, err)

	for _, args := range [][]string{{"--json"}, {"--verify"}, {}, {"--compile-specs"}} {
		r := runArgs(nil, append(args, path)...)
		assert.Contains(t, r.stdout+r.stderr, "pteexport --recover "+path+" puts the old bytes back", "%v", args)
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, torn, got, "%v: the file is not changed", args)
		gotRec, err := os.ReadFile(undorecord.Path(path))
		require.NoError(t, err, "%v: the record stays", args)
		assert.Equal(t, rec, gotRec)
	}
}
