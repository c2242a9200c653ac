package inplace

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/undorecord"
)

func skipWithoutLeases(t *testing.T) {
	t.Helper()
	if !Supported() {
		t.Skip("in-place edits need write leases (Linux)")
	}
}

func newFile(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.pte")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

func TestEditWritesAndRemovesRecord(t *testing.T) {
	skipWithoutLeases(t)
	path := newFile(t, []byte("0123456789"))
	var steps []Step
	Hook = func(s Step) {
		steps = append(steps, s)
		if s == StepSynced {
			st, err := os.Stat(undorecord.Path(path))
			if assert.NoError(t, err, "the record exists until the new bytes are synced") {
				assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "Recover trusts only a record that nobody else may write")
			}
		}
	}
	defer func() { Hook = nil }()
	e, err := Open(path)
	require.NoError(t, err)
	changed, err := e.WriteAt([]byte("abc"), 2)
	require.NoError(t, err)
	assert.True(t, changed)
	changed, err = e.WriteAt([]byte("abc"), 2)
	require.NoError(t, err)
	assert.False(t, changed, "the same bytes again change nothing")
	_, err = e.WriteAt([]byte("abc"), 8)
	assert.ErrorContains(t, err, "outside the file")
	require.NoError(t, e.Close())
	got, _ := os.ReadFile(path)
	assert.Equal(t, "01abc56789", string(got))
	assert.Equal(t, []Step{StepUndoWritten, StepPartial, StepWritten, StepSynced, StepUndoRemoved}, steps)
	_, err = os.Stat(undorecord.Path(path))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestOpenRefusedWhileOpenElsewhere(t *testing.T) {
	skipWithoutLeases(t)
	path := newFile(t, []byte("0123456789"))
	// Another open file description, even in this process, breaks the
	// lease condition.
	other, err := os.Open(path)
	require.NoError(t, err)
	_, err = Open(path)
	assert.ErrorIs(t, err, ErrBusy)
	other.Close()
	e, err := Open(path)
	require.NoError(t, err)
	require.NoError(t, e.Close())
}

func TestRecover(t *testing.T) {
	skipWithoutLeases(t)
	for _, tc := range []struct {
		name, file string
		rec        []byte
		want       string // file afterwards
		err        string // "" when recovered
	}{
		{"bad checksum", "01abc56789", undorecord.Encode(10, 2, []byte("234"), []byte("abc")), "01abc56789", "checksum mismatch"},
		{"mixed", "01ab456789", undorecord.Encode(10, 2, []byte("234"), []byte("abc")), "0123456789", ""},
		{"new", "01abc56789", undorecord.Encode(10, 2, []byte("234"), []byte("abc")), "0123456789", ""},
		{"old", "0123456789", undorecord.Encode(10, 2, []byte("234"), []byte("abc")), "0123456789", ""},
		{"other size", "0123456789x", undorecord.Encode(10, 2, []byte("234"), []byte("abc")), "0123456789x", "for a file of 10 bytes"},
		{"replaced", "01zzz56789", undorecord.Encode(10, 2, []byte("234"), []byte("abc")), "01zzz56789", "neither the old nor the new"},
		{"damaged", "01abc56789", append(undorecord.Encode(10, 2, []byte("234"), []byte("abc"))[:40], 'x'), "01abc56789", "not a record"},
		{"not a record", "01abc56789", bytes.Repeat([]byte("x"), 70), "01abc56789", "not an undo record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := newFile(t, []byte(tc.file))
			rec := tc.rec
			if tc.name == "bad checksum" {
				// A record whose checksum no longer matches its bytes.
				rec = bytes.Clone(rec)
				rec[40] ^= 1
			}
			require.NoError(t, os.WriteFile(undorecord.Path(path), rec, 0o600))
			did, err := Recover(path)
			got, _ := os.ReadFile(path)
			assert.Equal(t, tc.want, string(got))
			_, statErr := os.Stat(undorecord.Path(path))
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				var re *undorecord.Error
				assert.True(t, errors.As(err, &re), "%v", err)
				assert.NoError(t, statErr, "a record that does not apply is left alone")
				return
			}
			require.NoError(t, err)
			assert.True(t, did)
			assert.ErrorIs(t, statErr, os.ErrNotExist)
		})
	}
	did, err := Recover(newFile(t, []byte("0123456789")))
	assert.NoError(t, err, "no record: nothing to do")
	assert.False(t, did)
	// A program that does not exist is an error, not "nothing to undo".
	_, err = Recover(filepath.Join(t.TempDir(), "none.pte"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.ErrorContains(t, err, "none.pte")
}

// TestReaderWaitsForTheEdit: a process that opens the file while the
// lease is held waits until the edit is over and then reads the new bytes;
// the lease-break signal (SIGIO) that the kernel sends the editor does not
// stop it.
func TestReaderWaitsForTheEdit(t *testing.T) {
	if !Supported() {
		t.Skip("in-place edits need write leases (Linux)")
	}
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	path := newFile(t, []byte("0123456789"))
	e, err := Open(path)
	require.NoError(t, err)
	var out bytes.Buffer
	cmd := exec.Command(cat, path)
	cmd.Stdout = &out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("the reader did not wait for the lease: %v, read %q", err, out.String())
	case <-time.After(200 * time.Millisecond):
	}
	_, err = e.WriteAt([]byte("abc"), 0)
	require.NoError(t, err)
	require.NoError(t, e.Close())
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the reader still waits after the lease was released")
	}
	assert.Equal(t, "abc3456789", out.String())
}
