package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/export"
	"github.com/ptekit/ptekit/internal/inplace"
	"github.com/ptekit/ptekit/internal/s3test"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/internal/undorecord"
)

// patterned is engine bytes that differ at every offset (so that a range
// copied from the wrong place shows), the same for a given seed.
type patterned struct{ seed int64 }

func (p patterned) ReadAt(b []byte, off int64) (int, error) {
	for i := range b {
		x := uint64(off+int64(i)+p.seed*7919) * 0x9E3779B97F4A7C15
		b[i] = byte(x >> 56)
	}
	return len(b), nil
}

// writeProgram writes a program calling n engines of about engine bytes
// each, of patterned bytes, with a 1 GiB budget.
func writeProgram(t testing.TB, path string, n int, engine int64) {
	m := &export.Method{Name: "forward",
		Inputs:  []*export.Tensor{{Name: "t0", DType: export.Float32, Shape: []int64{4}}},
		Outputs: []*export.Tensor{{Name: fmt.Sprintf("t%d", n)}}}
	for i := range n {
		m.Calls = append(m.Calls, &export.EngineCall{
			Engine:  export.EngineReader(patterned{int64(i)}, engine+16*int64(i)),
			Inputs:  []*export.Binding{{Name: "in", Tensor: fmt.Sprintf("t%d", i)}},
			Outputs: []*export.Binding{{Name: "out", Tensor: fmt.Sprintf("t%d", i+1), DType: export.Float32, Shape: []int64{4}}},
		})
	}
	_, err := export.WriteFile(path, &export.Program{Methods: []*export.Method{m}}, &export.Options{WeightStreamingBudget: testprog.Budget(1 << 30)})
	require.NoError(t, err)
}

// s3Input starts a store holding s3://bkt/in.pte, a program of four 6 MiB
// engines (a re-bake of it spans several parts), and returns the store, a
// temporary directory and the input's local copy there.
func s3Input(t *testing.T) (srv *s3test.Server, dir, in string) {
	srv, dir = s3Store(t), t.TempDir()
	in = filepath.Join(dir, "in.pte")
	writeProgram(t, in, 4, 6<<20)
	srv.Put(t, "bkt", "in.pte", in)
	return srv, dir, in
}

// s3Store starts the test store with a bucket "bkt" and points the process's
// AWS environment at it.
func s3Store(t *testing.T) *s3test.Server {
	srv := s3test.Start(t)
	srv.Setenv(t)
	srv.Bucket(t, "bkt")
	return srv
}

// sameObject checks that the object bkt/key holds the file's bytes.
func sameObject(t *testing.T, srv *s3test.Server, key, path string) {
	t.Helper()
	sameObjectIn(t, srv, "bkt", key, path)
}

// sameObjectIn checks that the object bucket/key holds the file's bytes.
func sameObjectIn(t *testing.T, srv *s3test.Server, bucket, key, path string) {
	t.Helper()
	out, err := srv.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	require.NoError(t, err, key)
	defer out.Body.Close()
	h1 := sha256.New()
	_, err = io.Copy(h1, out.Body)
	require.NoError(t, err)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h2 := sha256.New()
	_, err = io.Copy(h2, f)
	require.NoError(t, err)
	require.Equal(t, h2.Sum(nil), h1.Sum(nil), "s3://%s/%s differs from %s", bucket, key, path)
}

// noObject checks that nothing is at bkt/key and no upload to it is left.
func noObject(t *testing.T, srv *s3test.Server, key string) {
	t.Helper()
	_, err := srv.Get("bkt", key)
	require.Error(t, err, "an object appeared at %s", key)
	require.NotContains(t, srv.Uploads(t, "bkt"), key, "a multipart upload to %s was left behind", key)
}

// TestS3Rebake: re-bakes from and to the store give the bytes of the local
// re-bake: s3:// to a file, a file to s3:// (streamed), and s3:// to s3://
// (assembled in the store: the new head sent, the segments copied by the
// store, a few MiB moved for 40 MiB of engines); the --json summary says
// what was sent and copied; no upload is left; an existing key is kept
// without --force.
func TestS3Rebake(t *testing.T) {
	srv := s3Store(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pte")
	writeProgram(t, in, 8, 5<<20)
	srv.Put(t, "bkt", "in.pte", in)
	for _, change := range [][]string{
		{"--weight-streaming-budget-per-engine", "8GiB"},
		{"--weight-streaming-budget-per-engine", "auto", "--target-device", "cuda:1"},
		{"--weight-streaming-budget-per-engine", "1MiB", "--segment-alignment", "64"},
	} {
		local := filepath.Join(dir, "local.pte")
		r := runCmd(append([]string{"--from", in, "-o", local, "--force"}, change...)...)
		require.Equal(t, 0, r.code, r.stderr)

		fromS3 := filepath.Join(dir, "from-s3.pte")
		r = runCmd(append([]string{"--from", "s3://bkt/in.pte", "-o", fromS3, "--force"}, change...)...)
		require.Equal(t, 0, r.code, r.stderr)
		want, err := os.ReadFile(local)
		require.NoError(t, err)
		got, err := os.ReadFile(fromS3)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "%v: the re-bake from s3:// differs from the local one", change)

		r = runCmd(append([]string{"--from", in, "-o", "s3://bkt/streamed.pte", "--force", "--json"}, change...)...)
		require.Equal(t, 0, r.code, r.stderr)
		sameObject(t, srv, "streamed.pte", local)

		srv.Reset()
		r = runCmd(append([]string{"--from", "s3://bkt/in.pte", "-o", "s3://bkt/out.pte", "--force", "--json"}, change...)...)
		require.Equal(t, 0, r.code, r.stderr)
		_, moved := srv.Moved()
		sum := decodeSummary(t, r.stdout)
		t.Logf("%v: %d bytes moved; uploaded %d, copied in the store %d", change, moved, *sum.Uploaded, *sum.CopiedInStore)
		sameObject(t, srv, "out.pte", local)
		require.Equal(t, "s3://bkt/out.pte", sum.Output)
		require.Equal(t, int64(len(want)), sum.Size)
		require.Less(t, moved, int64(16<<20), "bytes moved")
		require.Positive(t, *sum.CopiedInStore)
		require.Equal(t, sum.Size, *sum.Uploaded+*sum.CopiedInStore)
		require.Empty(t, srv.Uploads(t, "bkt"))
		var copies int
		for _, req := range srv.Requests() {
			if src := req.Header.Get("X-Amz-Copy-Source"); src != "" {
				copies++
				require.Equal(t, "bkt/in.pte", src)
				require.NotEmpty(t, req.Header.Get("X-Amz-Copy-Source-If-Match"), "a copy not pinned to the input's ETag")
				require.True(t, strings.HasPrefix(req.Header.Get("X-Amz-Copy-Source-Range"), "bytes="))
			}
		}
		require.Positive(t, copies)
	}
	// Without --force an existing key is kept (exit 1, the hint).
	r := runCmd("--from", "s3://bkt/in.pte", "-o", "s3://bkt/out.pte", "--weight-streaming-budget-per-engine", "1GiB")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "already exists; use --force")
	require.Empty(t, srv.Uploads(t, "bkt"))
}

// TestS3RebakeLarge: the in-store re-bake of a 2 GiB, 64-engine program
// moves under 16 MiB between pteexport and the store and gives the bytes
// of the local re-bake.
func TestS3RebakeLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("uploads and copies a 2 GiB program")
	}
	srv := s3Store(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pte")
	testprog.WriteEngines(t, in, 64, 32<<20)
	srv.Put(t, "bkt", "big.pte", in)
	local := filepath.Join(dir, "local.pte")
	r := runCmd("--from", in, "-o", local, "--weight-streaming-budget-per-engine", "8GiB")
	require.Equal(t, 0, r.code, r.stderr)
	srv.Reset()
	r = runCmd("--from", "s3://bkt/big.pte", "-o", "s3://bkt/out.pte", "--weight-streaming-budget-per-engine", "8GiB", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	n, moved := srv.Moved()
	t.Logf("2 GiB in-store re-bake: %d requests, %d bytes moved", n, moved)
	require.Less(t, moved, int64(16<<20))
	sameObject(t, srv, "out.pte", local)
	require.Empty(t, srv.Uploads(t, "bkt"))
}

// TestS3RebakeFailures: a server error in the middle of the upload, a
// store that refuses server-side copies, and SIGINT: the first two fail
// or fall back, the last stops; none leaves an object or an upload.
func TestS3RebakeFailures(t *testing.T) {
	srv, dir, in := s3Input(t)
	local := filepath.Join(dir, "local.pte")
	require.Equal(t, 0, runCmd("--from", in, "-o", local, "--weight-streaming-budget-per-engine", "2GiB").code)
	args := func(out string) []string {
		return []string{"--from", "s3://bkt/in.pte", "-o", "s3://bkt/" + out, "--weight-streaming-budget-per-engine", "2GiB"}
	}

	// Every part copy fails with 500 (after the SDK's retries).
	srv.FailWith(func(r *http.Request) int {
		if r.Header.Get("X-Amz-Copy-Source") != "" {
			return http.StatusInternalServerError
		}
		return 0
	})
	r := runCmd(args("fail.pte")...)
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "UploadPartCopy")
	require.NotContains(t, r.stderr, srv.SecretKey)
	noObject(t, srv, "fail.pte")

	// The completion itself fails: the upload is aborted, nothing shows.
	srv.FailWith(func(r *http.Request) int {
		if r.Method == http.MethodPost && r.URL.Query().Get("uploadId") != "" {
			return http.StatusInternalServerError
		}
		return 0
	})
	r = runCmd(args("complete.pte")...)
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "CompleteMultipartUpload")
	noObject(t, srv, "complete.pte")

	// A store without server-side copy: the bytes are streamed instead.
	srv.FailWith(func(r *http.Request) int {
		if r.Header.Get("X-Amz-Copy-Source") != "" {
			return http.StatusNotImplemented
		}
		return 0
	})
	r = runCmd(append(args("streamed.pte"), "--json")...)
	require.Equal(t, 0, r.code, r.stderr)
	sum := decodeSummary(t, r.stdout)
	require.Equal(t, int64(0), *sum.CopiedInStore)
	var kinds []string
	for _, w := range sum.Warnings {
		kinds = append(kinds, w.Kind)
	}
	require.Contains(t, kinds, string(export.WarnCopyRefused))
	sameObject(t, srv, "streamed.pte", local)

	// SIGINT once the first part is on its way.
	interruptFirstPart(t, srv)
	r = runCmd(args("int.pte")...)
	srv.FailWith(nil)
	require.Equal(t, 130, r.code, r.stderr)
	require.Contains(t, r.stderr, "interrupted")
	noObject(t, srv, "int.pte")
}

// TestS3Helper runs pteexport in a child process for TestS3RebakeKilled.
func TestS3Helper(t *testing.T) {
	args := os.Getenv(rebakeHelperArgs + "_S3")
	if args == "" {
		t.Skip("run by TestS3RebakeKilled")
	}
	os.Exit(run(strings.Split(args, "\n"), os.Stdin, os.Stdout, os.Stderr))
}

// TestS3RebakeKilled: a pteexport killed (SIGKILL) in the middle of an
// in-store re-bake leaves no object at the key, only its multipart upload,
// which the next re-bake to the key reports and pteexport --recover
// aborts.
func TestS3RebakeKilled(t *testing.T) {
	srv, _, _ := s3Input(t)
	args := []string{"--from", "s3://bkt/in.pte", "-o", "s3://bkt/out.pte", "--weight-streaming-budget-per-engine", "2GiB"}
	cmd := exec.Command(os.Args[0], "-test.run=^TestS3Helper$", "-test.count=1")
	cmd.Env = append(os.Environ(), rebakeHelperArgs+"_S3="+strings.Join(args, "\n"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var killed atomic.Bool
	srv.FailWith(func(r *http.Request) int {
		if r.Header.Get("X-Amz-Copy-Source") != "" {
			if killed.CompareAndSwap(false, true) {
				cmd.Process.Kill()
			}
			return http.StatusServiceUnavailable
		}
		return 0
	})
	require.NoError(t, cmd.Start())
	err := cmd.Wait()
	srv.FailWith(nil)
	require.True(t, killed.Load(), "the child never copied a part: %s", stderr.String())
	require.Error(t, err)
	_, err = srv.Get("bkt", "out.pte")
	require.Error(t, err, "a killed re-bake left an object")
	require.Equal(t, []string{"out.pte"}, srv.Uploads(t, "bkt"), "the killed upload")

	r := runCmd(append(args, "--json", "--force")...)
	require.Equal(t, 0, r.code, r.stderr)
	sum := decodeSummary(t, r.stdout)
	var kinds []string
	for _, w := range sum.Warnings {
		kinds = append(kinds, w.Kind)
	}
	require.Contains(t, kinds, string(export.WarnOrphanUpload))

	// Just killed, the upload looks like a running writer's: left, and
	// said so, unless --force.
	r = runCmd("--recover", "s3://bkt/out.pte")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "may be a running pteexport's")
	require.Contains(t, r.stderr, "--force")
	require.Equal(t, []string{"out.pte"}, srv.Uploads(t, "bkt"), "a recent upload is left without --force")
	r = runCmd("--recover", "s3://bkt/out.pte", "--force")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "aborted 1 unfinished multipart upload")
	require.Empty(t, srv.Uploads(t, "bkt"))
	r = runCmd("--recover", "s3://bkt/out.pte")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "no unfinished upload")
}

// TestS3RebakeProgress: an in-store re-bake reports its progress after
// every part (the head, then each copy), not only at its start and end.
func TestS3RebakeProgress(t *testing.T) {
	srv := s3Store(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pte")
	writeProgram(t, in, 8, 5<<20)
	srv.Put(t, "bkt", "in.pte", in)
	var mu sync.Mutex
	var reports [][2]int64
	progressHook = func(_ context.Context, written, total int64) {
		mu.Lock()
		reports = append(reports, [2]int64{written, total})
		mu.Unlock()
	}
	defer func() { progressHook = nil }()
	r := runCmd("--from", "s3://bkt/in.pte", "-o", "s3://bkt/out.pte", "--weight-streaming-budget-per-engine", "8GiB", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	size := decodeSummary(t, r.stdout).Size
	var between int
	for i, rep := range reports {
		require.Equal(t, size, rep[1], "report %d of %v: the total is the output's size", i, reports)
		if i > 0 {
			require.GreaterOrEqual(t, rep[0], reports[i-1][0], "reports %v", reports)
		}
		if rep[0] > 0 && rep[0] < size {
			between++
		}
	}
	require.Equal(t, [2]int64{0, size}, reports[0])
	require.Equal(t, [2]int64{size, size}, reports[len(reports)-1])
	// The head part (5 MiB) and the copy of the rest: one report between.
	require.GreaterOrEqual(t, between, 1, "reports %v", reports)
}

// TestS3Build: a build from a manifest to s3:// streams the program into
// one multipart upload: the object holds the bytes of the same build to
// a file, the --json summary says all of it was uploaded, an existing key
// is kept without --force. A store failing a part mid-upload and SIGINT
// while a part is on its way leave neither an object nor an upload; a
// bad location is a usage error.
func TestS3Build(t *testing.T) {
	srv := s3Store(t)
	m := writeManifest(t, twoEngines, map[string]string{
		"a.engine": string(exampleEngine("a", 9<<20)), "b.engine": string(exampleEngine("b", 7<<20))})
	local := filepath.Join(t.TempDir(), "local.pte")
	r := runCmd("--manifest", m, "-o", local, "--weight-streaming-budget-per-engine", "4GiB")
	require.Equal(t, 0, r.code, r.stderr)
	want, err := os.ReadFile(local)
	require.NoError(t, err)

	var mu sync.Mutex
	var reports []int64
	progressHook = func(_ context.Context, written, _ int64) {
		mu.Lock()
		reports = append(reports, written)
		mu.Unlock()
	}
	r = runCmd("--manifest", m, "-o", "s3://bkt/built.pte", "--weight-streaming-budget-per-engine", "4GiB", "--json")
	progressHook = nil
	require.Equal(t, 0, r.code, r.stderr)
	sameObject(t, srv, "built.pte", local)
	sum := decodeSummary(t, r.stdout)
	require.Equal(t, "s3://bkt/built.pte", sum.Output)
	require.Equal(t, int64(len(want)), sum.Size)
	require.Equal(t, sum.Size, *sum.Uploaded)
	require.Equal(t, int64(0), *sum.CopiedInStore)
	require.Empty(t, srv.Uploads(t, "bkt"))
	require.Greater(t, len(reports), 3, "progress after every part: %v", reports)
	require.Equal(t, sum.Size, reports[len(reports)-1])

	r = runCmd("--manifest", m, "-o", "s3://bkt/built.pte")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "already exists; use --force")
	require.Empty(t, srv.Uploads(t, "bkt"))
	r = runCmd("--manifest", m, "-o", "s3://bkt/built.pte", "--force", "--weight-streaming-budget-per-engine", "4GiB")
	require.Equal(t, 0, r.code, r.stderr)
	sameObject(t, srv, "built.pte", local)

	// The second part fails (after the SDK's retries).
	srv.FailWith(func(r *http.Request) int {
		if r.Method == http.MethodPut && r.URL.Query().Get("partNumber") == "2" {
			return http.StatusInternalServerError
		}
		return 0
	})
	r = runCmd("--manifest", m, "-o", "s3://bkt/fail.pte")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "UploadPart")
	require.NotContains(t, r.stderr, srv.SecretKey)
	noObject(t, srv, "fail.pte")

	// SIGINT while the first part is on its way.
	interruptFirstPart(t, srv)
	r = runCmd("--manifest", m, "-o", "s3://bkt/int.pte")
	srv.FailWith(nil)
	require.Equal(t, 130, r.code, r.stderr)
	require.Contains(t, r.stderr, "interrupted; s3://bkt/int.pte was not written")
	noObject(t, srv, "int.pte")

	r = runCmd("--manifest", m, "-o", "s3://bkt/a/../b.pte")
	require.Equal(t, 2, r.code, r.stderr)
}

// TestS3RebakeUndoRecord: a local input that an interrupted --in-place
// left half re-baked (its undo record beside it) is re-baked to s3:// as
// to a file: read as it is, with the same undo-record warning, on stderr
// and in --json.
func TestS3RebakeUndoRecord(t *testing.T) {
	if !inplace.Supported() {
		t.Skip("in-place edits need write leases (Linux)")
	}
	srv := s3Store(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "p.pte")
	require.NoError(t, os.WriteFile(path, testprog.Programs(t)["aligned_4096"], 0o644))
	inplace.Hook = func(s inplace.Step) {
		if s == inplace.StepSynced {
			panic("crash")
		}
	}
	assert.Panics(t, func() { runCmd("--from", path, "--in-place", "--weight-streaming-budget-per-engine", "3GiB") })
	inplace.Hook = nil
	_, err := os.Stat(undorecord.Path(path))
	require.NoError(t, err, "the crash leaves the undo record")

	warning := func(r cmdResult) string {
		sum := decodeSummary(t, r.stdout)
		for _, w := range sum.Warnings {
			if w.Kind == string(export.WarnUndoRecord) {
				return w.Message
			}
		}
		return ""
	}
	local := runCmd("--from", path, "-o", filepath.Join(dir, "out.pte"), "--weight-streaming-budget-per-engine", "1GiB", "--json")
	require.Equal(t, 0, local.code, local.stderr)
	want := warning(local)
	require.Contains(t, want, undorecord.Path(path))
	remote := runCmd("--from", path, "-o", "s3://bkt/out.pte", "--weight-streaming-budget-per-engine", "1GiB", "--json")
	require.Equal(t, 0, remote.code, remote.stderr)
	require.Equal(t, want, warning(remote))
	require.Contains(t, remote.stderr, undorecord.Path(path))
	sameObject(t, srv, "out.pte", filepath.Join(dir, "out.pte"))
	_, err = os.Stat(undorecord.Path(path))
	require.NoError(t, err, "the record is reported, never applied")
}

// TestS3CompleteCut: SIGINT while the request completing the upload is
// out. When the store completed it (its answer held back by the proxy),
// pteexport says the object was written, and it is there, whole; when the
// request never reached the store, that it was not, and nothing is there.
// Either way no upload is left.
func TestS3CompleteCut(t *testing.T) {
	srv, dir, in := s3Input(t)
	local := filepath.Join(dir, "local.pte")
	require.Equal(t, 0, runCmd("--from", in, "-o", local, "--weight-streaming-budget-per-engine", "2GiB").code)
	isComplete := func(method, query string) bool {
		return method == http.MethodPost && strings.Contains(query, "uploadId=")
	}
	for i, from := range []string{"s3://bkt/in.pte", in} {
		key := fmt.Sprintf("cut-%d.pte", i)
		sigint := sigintOnce(t)
		srv.HoldAnswer(func(r s3test.Request) time.Duration {
			if isComplete(r.Method, r.Query) && r.Status == http.StatusOK {
				sigint()
				return 5 * time.Second
			}
			return 0
		})
		r := runCmd("--from", from, "-o", "s3://bkt/"+key, "--weight-streaming-budget-per-engine", "2GiB")
		srv.HoldAnswer(nil)
		require.Equal(t, 130, r.code, r.stderr)
		require.Contains(t, r.stderr, "interrupted, but s3://bkt/"+key+" was written", from)
		sameObject(t, srv, key, local)
		require.Empty(t, srv.Uploads(t, "bkt"))

		key = fmt.Sprintf("lost-%d.pte", i)
		sigint = sigintOnce(t)
		srv.FailWith(func(r *http.Request) int {
			if isComplete(r.Method, r.URL.RawQuery) {
				sigint()
				time.Sleep(300 * time.Millisecond)
				return http.StatusServiceUnavailable // never passed on
			}
			return 0
		})
		r = runCmd("--from", from, "-o", "s3://bkt/"+key, "--weight-streaming-budget-per-engine", "2GiB")
		srv.FailWith(nil)
		require.Equal(t, 130, r.code, r.stderr)
		require.Contains(t, r.stderr, "interrupted; s3://bkt/"+key+" was not written", from)
		noObject(t, srv, key)
	}
}

// TestS3ReplacedVersion: replacing an object (--force) of a versioned
// bucket says which version the store kept, and copying that version back
// restores the object; in a bucket without versions nothing is said (the
// replaced object is gone, as a file --force replaces).
func TestS3ReplacedVersion(t *testing.T) {
	srv := s3test.Start(t, s3test.Versioned())
	srv.Setenv(t)
	srv.Bucket(t, "bkt")
	srv.Bucket(t, "plain")
	_, err := srv.Client().PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{
		Bucket: aws.String("bkt"), VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}})
	require.NoError(t, err)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pte")
	writeProgram(t, in, 2, 1<<20)
	for _, bucket := range []string{"bkt", "plain"} {
		srv.Put(t, bucket, "out.pte", in)
		head, err := srv.Client().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("out.pte")})
		require.NoError(t, err)
		r := runCmd("--from", in, "-o", "s3://"+bucket+"/out.pte", "--force", "--weight-streaming-budget-per-engine", "3GiB", "--json")
		require.Equal(t, 0, r.code, r.stderr)
		var msg string
		for _, w := range decodeSummary(t, r.stdout).Warnings {
			if w.Kind == string(export.WarnReplacedVersion) {
				msg = w.Message
			}
		}
		if bucket == "plain" {
			require.Empty(t, msg)
			continue
		}
		v := aws.ToString(head.VersionId)
		require.NotEmpty(t, v)
		require.Contains(t, msg, "version "+v)
		require.Contains(t, r.stderr, "version "+v)
		_, err = srv.Client().CopyObject(context.Background(), &s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String("out.pte"),
			CopySource: aws.String(bucket + "/out.pte?versionId=" + v)})
		require.NoError(t, err)
		sameObjectIn(t, srv, bucket, "out.pte", in)
	}
}

// sigintOnce returns a function that sends this process SIGINT the first
// time it is called and does nothing after.
func sigintOnce(t *testing.T) func() {
	var once sync.Once
	return func() { once.Do(func() { assert.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT)) }) }
}

// interruptFirstPart makes the store's proxy send this process SIGINT
// when the first part of an upload reaches it, and pass each part on
// 100 ms late, so that the interrupt comes while a part is on its way;
// FailWith(nil) ends it.
func interruptFirstPart(t *testing.T, srv *s3test.Server) {
	sigint := sigintOnce(t)
	srv.FailWith(func(r *http.Request) int {
		if r.Method == http.MethodPut && r.URL.Query().Get("partNumber") != "" {
			sigint()
			time.Sleep(100 * time.Millisecond)
		}
		return 0
	})
}
