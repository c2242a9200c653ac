package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/inplace"
	"github.com/ptekit/ptekit/internal/testprog"
)

func TestInPlaceCLI(t *testing.T) {
	if !inplace.Supported() {
		t.Skip("in-place edits need write leases (Linux)")
	}
	path := filepath.Join(t.TempDir(), "p.pte")
	old := testprog.Programs(t)["aligned_4096"]
	require.NoError(t, os.WriteFile(path, old, 0o644))

	r := runCmd("--from", path, "--in-place", "--weight-streaming-budget-per-engine", "2GiB", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	sum := decodeSummary(t, r.stdout)
	assert.True(t, sum.InPlace)
	require.NotNil(t, sum.Rewritten)
	assert.Positive(t, *sum.Rewritten)
	assert.Less(t, *sum.Rewritten, int64(4096), "only the head is written")
	assert.Equal(t, int64(len(old)), sum.Size)
	// A copy is opened: an open file would (rightly) refuse the next
	// in-place re-bake.
	cp := filepath.Join(t.TempDir(), "copy.pte")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cp, data, 0o644))
	for _, specs := range specsOf(openVerified(t, cp)) {
		assert.Contains(t, specs, "weight_streaming_budget=2147483648")
	}

	r = runCmd("--from", path, "--in-place", "--weight-streaming-budget-per-engine", "1GiB")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "re-baked "+path+" in place: rewrote ")

	r = runCmd("--recover", path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "no interrupted in-place re-bake")

	// An edit that stops after the new head is synced, before its undo
	// record goes (the panic stands for a crash), is undone by --recover.
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	inplace.Hook = func(s inplace.Step) {
		if s == inplace.StepSynced {
			panic("crash")
		}
	}
	assert.Panics(t, func() { runCmd("--from", path, "--in-place", "--weight-streaming-budget-per-engine", "3GiB") })
	inplace.Hook = nil
	_, err = os.Stat(inplace.UndoPath(path))
	require.NoError(t, err, "the crash leaves the undo record")
	r = runCmd("--recover", path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "recovered "+path)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after)
}

func TestInPlaceUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--manifest", "m.json", "-o", "x", "--in-place"},
		{"--from", "a.pte", "-o", "b.pte", "--in-place", "--weight-streaming-budget-per-engine", "1"},
		{"--from", "a.pte", "--in-place", "--weight-streaming-budget-per-engine", "1", "--segment-alignment", "64"},
		{"--recover", "a.pte", "--from", "a.pte"},
		{"--recover", "a.pte", "extra"},
	} {
		r := runCmd(args...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "pteexport --help", "%v", args)
	}
}
