//go:build unix

package atomicfile

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// umask returns the process umask (setting it back at once).
func umask(t *testing.T) fs.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return fs.FileMode(m)
}

// TestNotifyInterrupt delivers SIGINT and SIGTERM to the test process:
// each cancels the context with an *InterruptError carrying the shell's
// exit status.
func TestNotifyInterrupt(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		code int
		name string
	}{{syscall.SIGINT, 130, "SIGINT"}, {syscall.SIGTERM, 143, "SIGTERM"}} {
		ctx, stop := NotifyInterrupt(t.Context())
		require.NoError(t, syscall.Kill(os.Getpid(), c.sig))
		select {
		case <-ctx.Done():
		case <-time.After(timeout):
			t.Fatalf("%s did not cancel the context", c.name)
		}
		ie := Interrupted(ctx, nil)
		require.NotNil(t, ie, c.name)
		assert.Equal(t, c.code, ie.ExitCode())
		assert.Equal(t, "interrupted ("+c.name+")", ie.Error())
		stop()
	}
	// stop without a signal: cancelled, but not interrupted.
	ctx, stop := NotifyInterrupt(t.Context())
	stop()
	<-ctx.Done()
	assert.Nil(t, Interrupted(ctx, nil))
}

// The kill -9 test runs this test binary as a writer (helperEnv set), which
// stops at a stage, says "ready" and waits to be killed.
const helperEnv = "ATOMICFILE_KILL_HELPER"

func TestKillHelper(t *testing.T) {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		t.Skip("run by TestKilledWriterLeavesNothing")
	}
	stage, path, _ := strings.Cut(spec, ":")
	testForceFallback = os.Getenv(helperEnv+"_FALLBACK") != ""
	f, err := Create(path, nil)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	switch stage {
	case "mid":
		f.Write(chunk)
	case "written":
		for range 4 {
			f.Write(chunk)
		}
		f.OSFile().Sync()
	}
	fmt.Println("ready")
	time.Sleep(time.Minute)
	os.Exit(2)
}

// TestKilledWriterLeavesNothing kills (SIGKILL) a writer after Create,
// in the middle of its data and with all of it written but not committed:
// the destination is as it was and, on Linux, nothing else is in the
// directory. On the portable path the hidden temporary file stays, as the
// package documents.
func TestKilledWriterLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	for _, fallback := range []bool{false, true} {
		for _, stage := range []string{"created", "mid", "written"} {
			for _, exists := range []bool{false, true} {
				name := fmt.Sprintf("%s/exists=%v/fallback=%v", stage, exists, fallback)
				t.Run(name, func(t *testing.T) {
					dir := t.TempDir()
					path := filepath.Join(dir, "model.pte")
					if exists {
						require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
					}
					cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$", "-test.count=1")
					cmd.Env = append(os.Environ(), helperEnv+"="+stage+":"+path)
					if fallback {
						cmd.Env = append(cmd.Env, helperEnv+"_FALLBACK=1")
					}
					out, err := cmd.StdoutPipe()
					require.NoError(t, err)
					require.NoError(t, cmd.Start())
					line, err := bufio.NewReader(out).ReadString('\n')
					require.NoError(t, err)
					require.Equal(t, "ready\n", line)
					require.NoError(t, cmd.Process.Kill())
					cmd.Wait()

					left := names(t, dir)
					var want []string
					if exists {
						want = []string{"model.pte"}
						got, _ := os.ReadFile(path)
						assert.Equal(t, "old", string(got))
					}
					if fallback || !unnamedSupported(t, dir) {
						// The documented limitation: one hidden file stays.
						require.Len(t, left, len(want)+1, "%v", left)
						for _, n := range left {
							if n != "model.pte" {
								assert.True(t, strings.HasPrefix(n, ".model.pte.tmp-"), n)
							}
						}
						return
					}
					assert.Equal(t, want, left)
				})
			}
		}
	}
}

// unnamedSupported reports whether the file system of dir takes O_TMPFILE.
func unnamedSupported(t *testing.T, dir string) bool {
	f, err := openUnnamed(dir, "probe")
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// TestRefusesPlantedSymlink: an output named by a symbolic link that
// another user left in a shared sticky directory (/tmp) is not followed,
// as the kernel's fs.protected_symlinks would not follow it: the link
// could point at any file of the user writing (root's /etc/passwd). A
// link of the user's own, or of the directory's owner, is followed.
func TestRefusesPlantedSymlink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a link of another user needs root")
	}
	const nobody = 65534
	shared := filepath.Join(t.TempDir(), "shared")
	require.NoError(t, os.Mkdir(shared, 0o755))
	require.NoError(t, os.Chmod(shared, fs.ModeSticky|0o777))
	target := filepath.Join(t.TempDir(), "precious")
	require.NoError(t, os.WriteFile(target, []byte("precious"), 0o644))
	link := filepath.Join(shared, "out.html")
	require.NoError(t, os.Symlink(target, link))
	require.NoError(t, os.Lchown(link, nobody, nobody))

	_, err := Create(link, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "symbolic link")
	assert.Contains(t, err.Error(), "uid 65534")
	got, _ := os.ReadFile(target)
	assert.Equal(t, "precious", string(got))

	// The user's own link is followed.
	require.NoError(t, os.Lchown(link, 0, 0))
	f, err := Create(link, nil)
	require.NoError(t, err)
	_, err = f.Write([]byte("new"))
	require.NoError(t, err)
	require.NoError(t, f.Commit())
	got, _ = os.ReadFile(target)
	assert.Equal(t, "new", string(got))
}
