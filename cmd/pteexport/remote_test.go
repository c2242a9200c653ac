package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testprog"
)

// serve serves dir over loopback HTTP with http.FileServer. The files
// already in dir are dated an hour back: http.FileServer sends no ETag, and
// a Last-Modified pins a file only when it is at least a second older than
// the response (a file written within the second is not pinned, and a
// re-bake refuses it).
func serve(t testing.TB, dir string) *httptest.Server {
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	old := time.Now().Add(-time.Hour)
	for _, e := range entries {
		require.NoError(t, os.Chtimes(filepath.Join(dir, e.Name()), old, old))
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv
}

// TestRebakeFromURL: `pteexport --from URL -o out.pte` writes the bytes the
// local re-bake of the same program writes, for each test program and
// each kind of change.
func TestRebakeFromURL(t *testing.T) {
	dir := t.TempDir()
	progs := testprog.Programs(t)
	for name, data := range progs {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".pte"), data, 0o644))
	}
	srv := serve(t, dir)
	out := t.TempDir()
	for name := range progs {
		if name == "budget_twice" {
			continue // refused as input (init fails), locally too
		}
		for i, change := range [][]string{
			{"--weight-streaming-budget-per-engine", "2GiB"},
			{"--weight-streaming-budget-per-engine", "auto", "--target-device", "cuda:1"},
			{"--weight-streaming-budget-per-engine", "1MiB", "--segment-alignment", "64"},
		} {
			lpath := filepath.Join(out, name+"-local.pte")
			rpath := filepath.Join(out, name+"-remote.pte")
			l := runCmd(append([]string{"--from", filepath.Join(dir, name+".pte"), "-o", lpath, "--force"}, change...)...)
			r := runCmd(append([]string{"--from", srv.URL + "/" + name + ".pte?sig=s3cr3t", "-o", rpath, "--force"}, change...)...)
			require.Equal(t, l.code, r.code, "%s %d: %s", name, i, r.stderr)
			require.Equal(t, 0, r.code, "%s %d: %s", name, i, r.stderr)
			require.NotContains(t, r.stdout+r.stderr, "s3cr3t")
			want, err := os.ReadFile(lpath)
			require.NoError(t, err)
			got, err := os.ReadFile(rpath)
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, got), "%s %d: remote re-bake differs from the local one", name, i)
		}
	}
}

// TestRebakeFromURLErrors: a missing program exits 1 with the hint, a
// --timeout passed exits 3, and neither leaves an output.
func TestRebakeFromURLErrors(t *testing.T) {
	srv := serve(t, t.TempDir())
	out := filepath.Join(t.TempDir(), "o.pte")
	r := runCmd("--from", srv.URL+"/missing.pte?sig=s3cr3t", "-o", out, "--weight-streaming-budget-per-engine", "1GiB")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "404 Not Found (hint: check the URL)")
	require.NotContains(t, r.stderr, "s3cr3t")
	require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
	require.NoFileExists(t, out)

	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { <-req.Context().Done() }))
	defer slow.Close()
	r = runCmd("--from", slow.URL+"/p.pte", "-o", out, "--weight-streaming-budget-per-engine", "1GiB", "--timeout", "200ms")
	require.Equal(t, 3, r.code, r.stderr)
	require.Contains(t, r.stderr, "raise --timeout")
	require.NoFileExists(t, out)

	r = runCmd("--from", srv.URL+"/p.pte", "-o", out, "--weight-streaming-budget-per-engine", "1GiB", "--header", "no colon")
	require.Equal(t, 2, r.code, r.stderr)
}

// rebakeHelperArgs, when set in the environment, makes TestRebakeHelper
// run pteexport with these arguments (one a line) and exit with its status.
const rebakeHelperArgs = "PTEEXPORT_HELPER_ARGS"

func TestRebakeHelper(t *testing.T) {
	args := os.Getenv(rebakeHelperArgs)
	if args == "" {
		t.Skip("run by TestRebakeFromURLMemory")
	}
	os.Exit(run(strings.Split(args, "\n"), os.Stdin, os.Stdout, os.Stderr))
}

// TestRebakeFromURLMemory re-bakes a 2 GiB, 64-engine program from a
// loopback server in a child process: the output is complete, and the
// child's peak RSS (getrusage) stays under 64 MiB.
func TestRebakeFromURLMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 2 GiB over loopback and writes it")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "big.pte")
	testprog.WriteEngines(t, in, 64, 32<<20)
	srv := serve(t, dir)
	out := filepath.Join(t.TempDir(), "out.pte")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRebakeHelper$", "-test.count=1")
	args := []string{"--from", srv.URL + "/big.pte", "-o", out, "--weight-streaming-budget-per-engine", "512MiB"}
	cmd.Env = append(os.Environ(), rebakeHelperArgs+"="+strings.Join(args, "\n"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	rss := float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024 // KiB on Linux
	st, err := os.Stat(out)
	require.NoError(t, err)
	require.Greater(t, st.Size(), int64(2<<30))
	t.Logf("re-baked %d bytes from a URL, peak RSS %.1f MiB", st.Size(), rss)
	require.Less(t, rss, 64.0, "peak RSS")
	require.NoError(t, os.Remove(out))
}

// TestRebakeFromUnpinnedServer: a re-bake from a server that gives no
// strong validator (a weak ETag, no validator, a Last-Modified of the same
// second as its Date), whose file changes after the first request, exits
// 1 saying so, with a hint, and writes nothing: never a mix of two
// versions. The same server with a strong ETag gives exit 3 ("changed").
func TestRebakeFromUnpinnedServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.pte")
	testprog.WriteEngines(t, path, 4, 256<<10)
	v0, err := os.ReadFile(path)
	require.NoError(t, err)
	v1 := bytes.Clone(v0)
	v1[len(v1)-1] ^= 1 // the last engine's bytes
	for _, c := range []struct {
		name      string
		validator func(h http.Header, version int)
		code      int
		message   string
	}{
		{"weak ETag", func(h http.Header, v int) { h.Set("ETag", fmt.Sprintf(`W/"v%d"`, v)) }, 1, `weak ETag W/"v0"`},
		{"no validator", func(h http.Header, v int) {}, 1, "no ETag and no Last-Modified"},
		{"fresh Last-Modified", func(h http.Header, v int) {
			now := time.Now().UTC().Format(http.TimeFormat)
			h.Set("Last-Modified", now)
			h.Set("Date", now)
		}, 1, "Last-Modified less than a second"},
		{"strong ETag", func(h http.Header, v int) { h.Set("ETag", fmt.Sprintf(`"v%d"`, v)) }, 3, "replaced on the server"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var n atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				data, version := v0, 0
				if n.Add(1) > 1 {
					data, version = v1, 1
				}
				c.validator(w.Header(), version)
				http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(data))
			}))
			defer srv.Close()
			out := filepath.Join(t.TempDir(), "o.pte")
			r := runCmd("--from", srv.URL+"/p.pte?sig=s3cr3t", "-o", out, "--weight-streaming-budget-per-engine", "1MiB")
			t.Log(r.stderr)
			require.Equal(t, c.code, r.code, r.stderr)
			require.Contains(t, r.stderr, c.message)
			require.Contains(t, r.stderr, "(hint: ")
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
			require.NotContains(t, r.stderr, "s3cr3t")
			require.NoFileExists(t, out)
		})
	}
}
