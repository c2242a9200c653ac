package export

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/inplace"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/undorecord"
)

// stopThisThread stops the process with SIGSTOP sent to this thread, which
// stops before the call returns (a signal to the process may be taken by
// another thread while this one writes on).
func stopThisThread() {
	syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
}

// TestRebakeInPlaceStoppedWriter (issue 21, defect 7) stops the writer
// (SIGSTOP, in a child process) halfway through the new head. A reader
// opens the file: its open waits for the lease until the kernel breaks it
// (lease-break-time, 1 s here), then it maps the file. On SIGCONT the
// writer notices the broken lease and writes nothing under the mapping;
// when the reader is gone by then, it takes the lease again and puts the
// old head back, else it leaves the undo record for RecoverInPlace.
func TestRebakeInPlaceStoppedWriter(t *testing.T) {
	skipWithoutLeases(t)
	testkit.ShortLeaseBreak(t)
	for _, readerStays := range []bool{true, false} {
		t.Run(fmt.Sprintf("reader stays %v", readerStays), func(t *testing.T) {
			path := inPlaceProgram(t)
			old := readFile(t, path)
			child := childCmd(t, envChild+"="+path, envStop+"="+string(inplace.StepPartial))
			var stderr bytes.Buffer
			child.Stderr = &stderr
			require.NoError(t, child.Start())
			waitStopped(t, child.Process.Pid)

			f, err := os.Open(path) // waits until the kernel breaks the lease
			require.NoError(t, err)
			m, err := syscall.Mmap(int(f.Fd()), 0, len(old), syscall.PROT_READ, syscall.MAP_SHARED)
			require.NoError(t, err)
			f.Close()
			seen := bytes.Clone(m)
			require.NotEqual(t, old, seen, "the reader sees the half the writer wrote before it stopped (what no lease prevents once broken)")
			if !readerStays {
				require.NoError(t, syscall.Munmap(m))
			}

			require.NoError(t, child.Process.Signal(syscall.SIGCONT))
			err = child.Wait()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "the writer fails: %s", stderr.String())
			assert.Contains(t, stderr.String(), "write lease was broken")
			_, recErr := os.Stat(undorecord.Path(path))
			if readerStays {
				assert.Equal(t, seen, m, "nothing was written under the reader's mapping after SIGCONT")
				assert.Contains(t, stderr.String(), "pteexport --recover")
				require.NoError(t, recErr, "the record stays")
				require.NoError(t, syscall.Munmap(m))
				did, err := RecoverInPlace(path)
				require.NoError(t, err)
				assert.True(t, did)
			} else {
				assert.Contains(t, stderr.String(), "the old bytes are back")
				assert.ErrorIs(t, recErr, os.ErrNotExist)
			}
			assert.Equal(t, old, readFile(t, path), "the old program is back")
		})
	}
}

// waitStopped waits until process pid is stopped (state T in
// /proc/PID/stat).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	stat := filepath.Join("/proc", strconv.Itoa(pid), "stat")
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(stat)
		if err != nil {
			return false
		}
		i := bytes.LastIndexByte(b, ')')
		return i >= 0 && i+2 < len(b) && b[i+2] == 'T'
	}, 30*time.Second, 10*time.Millisecond, "the writer did not stop")
}
