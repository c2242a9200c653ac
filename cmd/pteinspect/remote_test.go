package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/export"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// counter counts the requests a handler answers and the body bytes it
// writes.
type counter struct {
	h               http.Handler
	requests, bytes atomic.Int64
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.requests.Add(1)
	c.h.ServeHTTP(&countingWriter{ResponseWriter: w, n: &c.bytes}, r)
}

func (c *counter) reset() { c.requests.Store(0); c.bytes.Store(0) }

// countingWriter counts what is written through it (it hides
// io.ReaderFrom, so sendfile cannot bypass the count).
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n.Add(int64(n))
	return n, err
}

// serveDir serves dir over loopback HTTP with http.FileServer
// (http.ServeContent), counting requests and bytes.
func serveDir(t testing.TB, dir string) (*httptest.Server, *counter) {
	c := &counter{h: http.FileServer(http.Dir(dir))}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return srv, c
}

// TestRemoteListReadsLittle: the default view, --json and --verify of a
// 64-engine program over HTTP take at most 3 requests and under 64 KiB,
// as many requests for 2 GiB of engines as for 2 MiB.
func TestRemoteListReadsLittle(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 2 GiB sparse file")
	}
	dir := t.TempDir()
	sizes := map[string]int64{"2MiB.pte": 32 << 10, "2GiB.pte": 32 << 20}
	for name, engine := range sizes {
		p := filepath.Join(dir, name)
		testprog.WriteEngines(t, p, 64, engine)
		st, err := os.Stat(p)
		require.NoError(t, err)
		require.Greater(t, st.Size(), 64*engine, name)
	}
	// The same shape exported from engine files, as pteexport writes it:
	// engines on their own pages (page-congruent layout), so the padding
	// keeps one blob's last byte and the next one's header apart.
	var calls []*export.EngineCall
	for i := range 64 {
		p := filepath.Join(dir, fmt.Sprintf("e%d.engine", i))
		f, err := os.Create(p)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(32<<20+16*int64(i)))
		require.NoError(t, f.Close())
		calls = append(calls, &export.EngineCall{Engine: export.EngineFile(p),
			Inputs:  []*export.Binding{{Name: "in", Tensor: fmt.Sprintf("t%d", i)}},
			Outputs: []*export.Binding{{Name: "out", Tensor: fmt.Sprintf("t%d", i+1), DType: export.Float32, Shape: []int64{4}}}})
	}
	budget := int64(1 << 30)
	_, err := export.WriteFile(filepath.Join(dir, "files.pte"), &export.Program{Methods: []*export.Method{{Name: "forward",
		Inputs:  []*export.Tensor{{Name: "t0", DType: export.Float32, Shape: []int64{4}}},
		Outputs: []*export.Tensor{{Name: "t64"}}, Calls: calls}}}, &export.Options{WeightStreamingBudget: testprog.Budget(budget)})
	require.NoError(t, err)
	sizes["files.pte"] = 32 << 20
	srv, cnt := serveDir(t, dir)
	for _, view := range [][]string{{}, {"--json"}, {"--verify"}, {"--plan"}, {"--compile-specs"}} {
		counts := map[string]int64{}
		for name := range sizes {
			cnt.reset()
			r := runArgs(nil, append(view, srv.URL+"/"+name)...)
			require.Equal(t, 0, r.code, "%v %s: %s", view, name, r.stderr)
			require.NotEmpty(t, r.stdout)
			t.Logf("%v %s: %d requests, %d bytes", view, name, cnt.requests.Load(), cnt.bytes.Load())
			require.LessOrEqual(t, cnt.requests.Load(), int64(3), "%v %s", view, name)
			require.Less(t, cnt.bytes.Load(), int64(64<<10), "%v %s", view, name)
			counts[name] = cnt.requests.Load()
		}
		require.Equal(t, counts["2MiB.pte"], counts["2GiB.pte"], "%v", view)
		require.Equal(t, counts["2MiB.pte"], counts["files.pte"], "%v", view)
	}
}

// TestRemoteJSONEqualsLocal: for every program of the shared tree's
// corpus/ and vectors/pte/, `pteinspect --json URL` (and with --hash)
// prints what `pteinspect --json FILE` prints, with the same exit status,
// apart from the documented file.url member; a failure object's message
// names the input as given, so the URL is put back to the path there.
func TestRemoteJSONEqualsLocal(t *testing.T) {
	shared := testkit.SharedDir(t)
	srv, _ := serveDir(t, shared)
	var files []string
	for _, sub := range []string{"corpus", "vectors/pte"} {
		files = append(files, testkit.Glob(t, filepath.Join(shared, sub), "*.pte")...)
	}
	for _, path := range files {
		rel, err := filepath.Rel(shared, path)
		require.NoError(t, err)
		url := srv.URL + "/" + filepath.ToSlash(rel)
		for _, flags := range [][]string{{"--json"}, {"--json", "--hash"}} {
			local := runArgs(nil, append(flags, path)...)
			remote := runArgs(nil, append(flags, url+"?X-Amz-Signature=s3cr3t")...)
			require.Equal(t, local.code, remote.code, "%s %v: %s", rel, flags, remote.stderr)
			require.NotContains(t, remote.stdout+remote.stderr, "s3cr3t", rel)

			var lv, rv map[string]any
			require.NoError(t, json.Unmarshal([]byte(local.stdout), &lv), rel)
			require.NoError(t, json.Unmarshal([]byte(remote.stdout), &rv), rel)
			if file, ok := rv["file"].(map[string]any); ok {
				require.Equal(t, url, file["url"], "%s: file.url", rel)
				delete(file, "url")
			} else {
				e, ok := rv["error"].(map[string]any) // the failure object
				require.True(t, ok, "%s: %s", rel, remote.stdout)
				e["message"] = strings.ReplaceAll(e["message"].(string), url, path)
			}
			require.Equal(t, lv, rv, "%s %v", rel, flags)
		}
	}
}

// TestRemoteViews: the other views take a URL as they take a file, with
// the same output: --verify, --plan, --compile-specs (text and JSON, the
// file named by its redacted URL), --extract to a local file, and diff of
// two URLs or a URL and a file.
func TestRemoteViews(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"two_methods", "segment", "aliased"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".pte"), trtPrograms(t)[name], 0o644))
	}
	srv, _ := serveDir(t, dir)
	url := func(name string) string { return srv.URL + "/" + name + ".pte?sig=s3cr3t" }
	local := func(name string) string { return filepath.Join(dir, name+".pte") }
	same := func(args ...string) {
		t.Helper()
		n := len(args) - 1
		l := runArgs(nil, append(args[:n:n], local(args[n]))...)
		r := runArgs(nil, append(args[:n:n], url(args[n]))...)
		require.Equal(t, l.code, r.code, "%v: %s", args, r.stderr)
		shown := srv.URL + "/" + args[n] + ".pte"
		require.Equal(t, l.stdout, strings.ReplaceAll(r.stdout, shown, local(args[n])), "%v", args)
		require.NotContains(t, r.stdout+r.stderr, "s3cr3t")
	}
	for _, args := range [][]string{
		{"--verify"}, {"--verify", "--json"}, {"--plan"}, {"--plan", "--json"},
		{"--compile-specs"}, {"--compile-specs", "--json"}, {"--method", "decode"},
	} {
		same(append(args, "two_methods")...)
	}
	same("--extract", "0:0", "-o", "-", "aliased")
	same("--extract", "0:0", "--engine", "-o", "-", "aliased")

	out := filepath.Join(t.TempDir(), "blob")
	r := runArgs(nil, "--extract", "prefill:0", "-o", out, url("two_methods"))
	require.Equal(t, 0, r.code, r.stderr)
	want := runArgs(nil, "--extract", "prefill:0", "-o", "-", local("two_methods"))
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, want.stdout, string(got))

	for _, pair := range [][2]string{{url("segment"), url("segment")}, {url("segment"), local("segment")}} {
		r := runArgs(nil, "diff", pair[0], pair[1])
		require.Equal(t, 0, r.code, "%v: %s %s", pair, r.stdout, r.stderr)
	}
	l := runArgs(nil, "diff", "--json", local("segment"), local("two_methods"))
	r = runArgs(nil, "diff", "--json", url("segment"), local("two_methods"))
	require.Equal(t, 1, r.code, r.stderr)
	require.Equal(t, l.stdout, r.stdout)
	r = runArgs(nil, "diff", url("segment"), srv.URL+"/missing.pte")
	require.Equal(t, 2, r.code, r.stderr)
}

// BenchmarkRemoteJSON runs `pteinspect --json URL` on 64-engine programs of
// 2 MiB and 2 GiB served over loopback, and reports requests and bytes per
// run beside the local file's preads and bytes for the same view.
func BenchmarkRemoteJSON(b *testing.B) {
	dir := b.TempDir()
	srv, cnt := serveDir(b, dir)
	for _, c := range []struct {
		name   string
		engine int64
	}{{"2MiB", 32 << 10}, {"2GiB", 32 << 20}} {
		path := filepath.Join(dir, c.name+".pte")
		testprog.WriteEngines(b, path, 64, c.engine)
		b.Run(c.name, func(b *testing.B) {
			cr, size := testkit.OpenCounting(b, path)
			f, err := pte.NewFile(cr, size)
			require.NoError(b, err)
			doc, err := inspect.Build(f, nil)
			require.NoError(b, err)
			require.NoError(b, inspect.Encode(io.Discard, doc))
			cnt.reset()
			for b.Loop() {
				if r := runArgs(nil, "--json", srv.URL+"/"+c.name+".pte"); r.code != 0 {
					b.Fatal(r.stderr)
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(cnt.requests.Load())/n, "requests/op")
			b.ReportMetric(float64(cnt.bytes.Load())/n, "http-bytes/op")
			b.ReportMetric(float64(cr.Calls()), "local-preads/op")
			b.ReportMetric(float64(cr.Bytes()), "local-bytes/op")
		})
	}
}

// TestRemoteDiffFetchesOnce: diff of two programs over HTTP fetches each
// byte of each at most once in all (the server sends no more than both
// files' sizes), however many engines they have.
func TestRemoteDiffFetchesOnce(t *testing.T) {
	dir := t.TempDir()
	sizes := map[string]int64{}
	for name, n := range map[string]int{"a.pte": 64, "b.pte": 65} {
		path := filepath.Join(dir, name)
		testprog.WriteEngines(t, path, n, 256<<10)
		fi, err := os.Stat(path)
		require.NoError(t, err)
		sizes[name] = fi.Size()
	}
	srv, cnt := serveDir(t, dir)
	r := runArgs(nil, "diff", srv.URL+"/a.pte", srv.URL+"/b.pte")
	require.Equal(t, exitFail, r.code, r.stderr)
	require.LessOrEqual(t, cnt.bytes.Load(), sizes["a.pte"]+sizes["b.pte"], "bytes served for %d requests", cnt.requests.Load())
}
