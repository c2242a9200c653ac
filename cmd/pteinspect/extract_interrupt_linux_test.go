package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// helperArgs, when set in the environment, makes TestExtractHelper run
// pteinspect with these arguments (one a line) and exit with its status.
const helperArgs = "PTEINSPECT_HELPER_ARGS"

func TestExtractHelper(t *testing.T) {
	args := os.Getenv(helperArgs)
	if args == "" {
		t.Skip("run by TestExtractInterrupted")
	}
	os.Exit(run(strings.Split(args, "\n"), os.Stdin, os.Stdout, os.Stderr))
}

// TestExtractInterrupted extracts the 2 GiB engine of a sparse program in
// a subprocess and signals it once it has written some of the output:
// SIGINT exits 130 and SIGTERM 143, with a message; SIGKILL just ends it.
// In every case the output directory stays empty: no output, no hidden
// partial file.
func TestExtractInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 2 GiB sparse file")
	}
	in := bigProgram(t)
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}, {syscall.SIGKILL, -1}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "engine.plan")
			cmd := exec.Command(os.Args[0], "-test.run=^TestExtractHelper$", "-test.count=1")
			cmd.Env = append(os.Environ(), helperArgs+"="+strings.Join([]string{"--extract", "0:0", "--engine", "-o", out, in}, "\n"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()

			// Wait until the child holds a file in dir with data in it.
			deadline := time.Now().Add(30 * time.Second)
			for !writingInto(cmd.Process.Pid, dir) {
				select {
				case err := <-done:
					t.Fatalf("the extract ended before it was signalled: %v, %s", err, stderr.String())
				default:
				}
				require.True(t, time.Now().Before(deadline), "the extract never started writing")
				time.Sleep(time.Millisecond)
			}
			require.NoError(t, cmd.Process.Signal(c.sig))
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatal("the signal did not stop the extract")
			}
			assert.Equal(t, c.code, cmd.ProcessState.ExitCode(), stderr.String())
			if c.sig != syscall.SIGKILL {
				assert.Contains(t, stderr.String(), "interrupted; "+out+" was not written")
			}
			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, ents, "output or litter left behind")
		})
	}
}

// writingInto reports whether process pid has a file open in dir (named
// or not) that holds some data.
func writingInto(pid int, dir string) bool {
	fds, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "fd", "*"))
	if err != nil {
		return false
	}
	for _, fd := range fds {
		target, err := os.Readlink(fd)
		if err != nil || !strings.HasPrefix(target, dir+"/") {
			continue
		}
		if st, err := os.Stat(fd); err == nil && st.Size() > 0 {
			return true
		}
	}
	return false
}
