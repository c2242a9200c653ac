package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/inplace"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/internal/undorecord"
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
	_, err = os.Stat(undorecord.Path(path))
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

// nobody is the uid and gid of the user "nobody".
const nobody = 65534

// TestRecoverRefusesPlantedRecord (issue 21, defect 1): --recover and
// --in-place apply no record that another user planted (owned by nobody,
// as in a shared 1777 directory) or that anyone may write; they fail with
// exit 1 and a message naming the record, and leave the file and the
// record alone. The planted record is the attack: its "new" bytes are the
// file's own, its old bytes "EVILEVIL".
func TestRecoverRefusesPlantedRecord(t *testing.T) {
	if !inplace.Supported() {
		t.Skip("in-place edits need write leases (Linux)")
	}
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, undo string)
		want  string
	}{
		{"as nobody", func(t *testing.T, undo string) {
			if os.Geteuid() != 0 {
				t.Skip("planting a record as another user needs root")
			}
			require.NoError(t, os.Lchown(undo, nobody, nobody))
		}, "owned by uid 65534"},
		{"writable by others", func(t *testing.T, undo string) {
			require.NoError(t, os.Chmod(undo, 0o646))
		}, "writable by group or others (mode 0646)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.Chmod(dir, 0o1777))
			path := filepath.Join(dir, "model.pte")
			old := testprog.Programs(t)["aligned_4096"]
			require.NoError(t, os.WriteFile(path, old, 0o644))
			undo := undorecord.Path(path)
			rec := undorecord.Encode(int64(len(old)), 0, []byte("EVILEVIL"), old[:8])
			require.NoError(t, os.WriteFile(undo, rec, 0o600))
			tc.plant(t, undo)
			for _, args := range [][]string{
				{"--recover", path},
				{"--from", path, "--in-place", "--weight-streaming-budget-per-engine", "2GiB"},
			} {
				r := runCmd(args...)
				assert.Equal(t, 1, r.code, "%v: %s", args, r.stderr)
				assert.Contains(t, r.stderr, "undo record "+undo, "%v", args)
				assert.Contains(t, r.stderr, tc.want, "%v", args)
				got, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, old, got, "%v: the file is left alone", args)
				gotRec, err := os.ReadFile(undo)
				require.NoError(t, err)
				assert.Equal(t, rec, gotRec, "%v: the record is left alone", args)
			}
			// A re-bake to another file reads the input as it is and warns.
			out := filepath.Join(t.TempDir(), "out.pte")
			r := runCmd("--from", path, "-o", out, "--weight-streaming-budget-per-engine", "2GiB")
			require.Equal(t, 0, r.code, r.stderr)
			assert.Contains(t, r.stderr, "pteexport --recover would refuse it")
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, old, got)
		})
	}
}

// TestRecoverMissingFile (issue 21): --recover of a file that does not
// exist fails; it is not "nothing to undo".
func TestRecoverMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nonexistent.pte")
	r := runCmd("--recover", path)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, path)
	assert.Contains(t, r.stderr, "nothing to recover")
	assert.Contains(t, r.stderr, path+" does not exist")
	assert.NotContains(t, r.stdout, "no interrupted in-place re-bake")
}
