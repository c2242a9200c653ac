//go:build linux

package inplace

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/undorecord"
)

// stallUntilLeaseGone is a Hook that, at StepPartial, plays an editor that
// was stopped (SIGSTOP) between two writes for longer than
// lease-break-time: a reader opens the file and the kernel breaks the
// lease under the stalled editor. reader opens the file and returns when
// it has it (its open waited for the kernel to remove the lease).
func stallUntilLeaseGone(t *testing.T, reader func()) func(Step) {
	return func(s Step) {
		if s != StepPartial {
			return
		}
		done := make(chan struct{})
		go func() { reader(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the reader's open still waits: the kernel did not break the lease")
		}
	}
}

// TestWriteStopsWhenLeaseBroken (issue 21, defect 7): an editor whose lease
// the kernel broke while it was stalled writes nothing more; the reader is
// gone by then, so it takes the lease again and puts the old bytes back.
func TestWriteStopsWhenLeaseBroken(t *testing.T) {
	skipWithoutLeases(t)
	testkit.ShortLeaseBreak(t)
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	const old = "0123456789abcdef"
	path := newFile(t, []byte(old))
	var seen bytes.Buffer
	Hook = stallUntilLeaseGone(t, func() {
		cmd := exec.Command(cat, path)
		cmd.Stdout = &seen
		assert.NoError(t, cmd.Run())
	})
	defer func() { Hook = nil }()
	e, err := Open(path)
	require.NoError(t, err)
	changed, err := e.WriteAt([]byte("ABCDEFGH"), 4)
	require.NoError(t, e.Close())
	assert.False(t, changed)
	assert.ErrorIs(t, err, ErrLeaseBroken)
	assert.ErrorContains(t, err, "the old bytes are back")
	assert.Equal(t, "0123ABCD89abcdef", seen.String(), "the stalled editor's reader saw the first half (what the lease could not prevent)")
	got, _ := os.ReadFile(path)
	assert.Equal(t, old, string(got), "no byte written after the lease was broken, and the first half undone")
	_, err = os.Stat(undorecord.Path(path))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestWriteStopsWhenLeaseBrokenReaderStays: when the reader still has the
// file open, the lease cannot be taken again and nothing at all is written
// after the break: the record stays, and Recover applies it once the
// reader is gone.
func TestWriteStopsWhenLeaseBrokenReaderStays(t *testing.T) {
	skipWithoutLeases(t)
	testkit.ShortLeaseBreak(t)
	const old = "0123456789abcdef"
	path := newFile(t, []byte(old))
	var reader *os.File
	Hook = stallUntilLeaseGone(t, func() {
		var err error
		reader, err = os.Open(path)
		assert.NoError(t, err)
	})
	defer func() { Hook = nil }()
	e, err := Open(path)
	require.NoError(t, err)
	_, err = e.WriteAt([]byte("ABCDEFGH"), 4)
	require.NoError(t, e.Close())
	require.NotNil(t, reader)
	assert.ErrorIs(t, err, ErrLeaseBroken)
	assert.ErrorContains(t, err, "pteexport --recover")
	got, _ := os.ReadFile(path)
	assert.Equal(t, "0123ABCD89abcdef", string(got), "the half written before the break, nothing after")
	_, err = os.Stat(undorecord.Path(path))
	require.NoError(t, err, "the record stays")

	// Recover refuses while the reader has the file open, and applies the
	// record once it is closed.
	Hook = nil
	_, err = Recover(path)
	assert.ErrorIs(t, err, ErrBusy)
	require.NoError(t, reader.Close())
	did, err := Recover(path)
	require.NoError(t, err)
	assert.True(t, did)
	got, _ = os.ReadFile(path)
	assert.Equal(t, old, string(got))
}

// TestGuard: what guard makes of F_GETLEASE: a lease held whole lets
// writes go on; one being broken for a reader too, while the reader's open
// still waits (seen whole less than lease-break-time ago); past that, or
// once the lease is given up, no write.
func TestGuard(t *testing.T) {
	skipWithoutLeases(t)
	path := newFile(t, []byte("0123456789"))
	e, err := Open(path)
	require.NoError(t, err)
	defer e.Close()
	held, err := leaseHeld(e.File())
	require.NoError(t, err)
	assert.True(t, held)
	assert.NoError(t, e.guard())
	opened := make(chan *os.File, 1)
	go func() {
		f, _ := os.Open(path)
		opened <- f
	}()
	require.Eventually(t, func() bool {
		held, err := leaseHeld(e.File())
		return err == nil && !held
	}, 10*time.Second, 10*time.Millisecond, "the reader's open breaks the lease")
	if e.grace > time.Second {
		assert.NoError(t, e.guard(), "a reader still waiting is held off: writing may go on")
	}
	e.seen = time.Now().Add(-time.Hour) // the editor was stopped for an hour
	assert.ErrorIs(t, e.guard(), ErrLeaseBroken)
	require.NoError(t, unlease(e.File()))
	f := <-opened
	require.NotNil(t, f)
	f.Close()
	assert.ErrorIs(t, e.guard(), ErrLeaseBroken)
}
