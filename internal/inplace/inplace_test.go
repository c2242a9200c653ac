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
			_, err := os.Stat(UndoPath(path))
			assert.NoError(t, err, "the record exists until the new bytes are synced")
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
	_, err = os.Stat(UndoPath(path))
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
		{"bad checksum", "01abc56789", encodeRecord(10, 2, []byte("234"), []byte("abc")), "01abc56789", "checksum mismatch"},
		{"mixed", "01ab456789", encodeRecord(10, 2, []byte("234"), []byte("abc")), "0123456789", ""},
		{"new", "01abc56789", encodeRecord(10, 2, []byte("234"), []byte("abc")), "0123456789", ""},
		{"old", "0123456789", encodeRecord(10, 2, []byte("234"), []byte("abc")), "0123456789", ""},
		{"other size", "0123456789x", encodeRecord(10, 2, []byte("234"), []byte("abc")), "0123456789x", "for a file of 10 bytes"},
		{"replaced", "01zzz56789", encodeRecord(10, 2, []byte("234"), []byte("abc")), "01zzz56789", "neither the old nor the new"},
		{"damaged", "01abc56789", append(encodeRecord(10, 2, []byte("234"), []byte("abc"))[:40], 'x'), "01abc56789", "not a record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := newFile(t, []byte(tc.file))
			rec := tc.rec
			if tc.name == "bad checksum" {
				// A record whose checksum no longer matches its bytes.
				rec = bytes.Clone(rec)
				rec[40] ^= 1
			}
			require.NoError(t, os.WriteFile(UndoPath(path), rec, 0o644))
			did, err := Recover(path)
			got, _ := os.ReadFile(path)
			assert.Equal(t, tc.want, string(got))
			_, statErr := os.Stat(UndoPath(path))
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				var re *RecordError
				assert.True(t, errors.As(err, &re), "%v", err)
				assert.NoError(t, statErr, "a record that does not apply is left alone")
				return
			}
			require.NoError(t, err)
			assert.True(t, did)
			assert.ErrorIs(t, statErr, os.ErrNotExist)
		})
	}
	did, err := Recover(filepath.Join(t.TempDir(), "none.pte"))
	assert.NoError(t, err)
	assert.False(t, did)
}

// FuzzReadRecord: any bytes as an undo record are refused with an error or
// parsed into ranges that lie inside the file size they state.
func FuzzReadRecord(f *testing.F) {
	f.Add(encodeRecord(10, 2, []byte("234"), []byte("abc")))
	f.Add(encodeRecord(0, 0, nil, nil))
	f.Add([]byte(undoMagic))
	dir := f.TempDir()
	path := filepath.Join(dir, "rec")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := readRecord(path)
		if err != nil {
			if r != nil {
				t.Fatal("a record and an error")
			}
			return
		}
		if r.off < 0 || r.size < 0 || r.off+int64(len(r.old)) > r.size || len(r.old) != len(r.new) {
			t.Fatalf("bad record accepted: size %d off %d len %d/%d", r.size, r.off, len(r.old), len(r.new))
		}
	})
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
