package main

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testprog"
)

// TestRemoteInterrupted: Ctrl-C (SIGINT) while a URL input's read hangs
// stops the read at once: exit 130, one line on stderr.
func TestRemoteInterrupted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.pte")
	testprog.WriteEngines(t, path, 8, 256<<10)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	hung := make(chan struct{}, 1)
	srv := misbehaving(t, data, func(w http.ResponseWriter, req *http.Request) {
		select {
		case hung <- struct{}{}:
		default:
		}
		select {
		case <-req.Context().Done():
		case <-time.After(20 * time.Second):
		}
	})
	cmd := exec.Command(os.Args[0], "-test.run=^TestExtractHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperArgs+"="+strings.Join([]string{"--json", srv.URL + "/p.pte"}, "\n"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	select {
	case <-hung:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the command never made a second request: %s", stderr.String())
	}
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err = cmd.Wait()
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, 130, cmd.ProcessState.ExitCode(), "%v: %s", err, stderr.String())
	require.Contains(t, stderr.String(), "interrupted (SIGINT)")
	require.Equal(t, 1, strings.Count(stderr.String(), "\n"), stderr.String())
}
