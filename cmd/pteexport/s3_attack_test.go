package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testkit"
)

// TestS3RebakeOntoItself: -o naming the --from object is refused without
// --force (the key exists), and with --force replaces it with exactly the
// local re-bake of the old bytes (every copy is made before the upload
// completes, pinned to the old ETag), for a program under S3's 5 MiB
// part minimum and one of several parts; no upload is left.
func TestS3RebakeOntoItself(t *testing.T) {
	srv := s3Store(t)
	dir := t.TempDir()
	for _, shape := range []struct {
		n      int
		engine int64
	}{{2, 100 << 10}, {3, 6 << 20}, {1, 5 << 20}} {
		in := filepath.Join(dir, "in.pte")
		writeProgram(t, in, shape.n, shape.engine)
		srv.Put(t, "bkt", "self.pte", in)
		local := filepath.Join(dir, "local.pte")
		budget := []string{"--weight-streaming-budget-per-engine", "3GiB"}
		r := runCmd(append([]string{"--from", in, "-o", local, "--force"}, budget...)...)
		require.Equal(t, 0, r.code, r.stderr)
		r = runCmd(append([]string{"--from", "s3://bkt/self.pte", "-o", "s3://bkt/self.pte"}, budget...)...)
		require.Equal(t, 1, r.code, r.stderr)
		sameObject(t, srv, "self.pte", in)
		r = runCmd(append([]string{"--from", "s3://bkt/self.pte", "-o", "s3://bkt/self.pte", "--force"}, budget...)...)
		if r.code != 0 {
			t.Logf("%d x %d: refused: %s", shape.n, shape.engine, r.stderr)
			sameObject(t, srv, "self.pte", in)
		} else {
			sameObject(t, srv, "self.pte", local)
		}
		require.Empty(t, srv.Uploads(t, "bkt"))
		want, _ := os.ReadFile(local)
		old, _ := os.ReadFile(in)
		require.False(t, bytes.Equal(want, old), "the re-bake changed nothing")
	}
}

// TestS3RebakeSharedPrograms: for every program of the shared tree, the
// in-store re-bake (s3:// to s3://) ends as the local re-bake does (the
// same exit status) and, when it succeeds, the object holds the local
// output byte for byte, for a budget change and an alignment change.
func TestS3RebakeSharedPrograms(t *testing.T) {
	files := testkit.SharedPrograms(t, 64<<20)
	srv := s3Store(t)
	dir := t.TempDir()
	ok := 0
	for i, path := range files {
		key := fmt.Sprintf("in%d.pte", i)
		srv.Put(t, "bkt", key, path)
		for _, change := range [][]string{
			{"--weight-streaming-budget-per-engine", "3MiB"},
			{"--weight-streaming-budget-per-engine", "8GiB", "--segment-alignment", "4096"},
		} {
			local := filepath.Join(dir, "local.pte")
			os.Remove(local)
			l := runCmd(append([]string{"--from", path, "-o", local, "--force"}, change...)...)
			r := runCmd(append([]string{"--from", "s3://bkt/" + key, "-o", "s3://bkt/out.pte", "--force"}, change...)...)
			require.Equal(t, l.code, r.code, "%s %v: local %s; s3 %s", path, change, l.stderr, r.stderr)
			if l.code == 0 {
				sameObject(t, srv, "out.pte", local)
				ok++
			}
			require.Empty(t, srv.Uploads(t, "bkt"))
		}
	}
	require.Positive(t, ok, "no shared program re-baked")
	t.Logf("%d programs, %d re-bakes compared", len(files), ok)
}

// TestS3RebakeSourceReplacedMidway: the input object replaced by another
// program after pteexport opened it, when the store is asked for the first
// server-side copy, fails the re-bake with exit 3, worth running again (the copies are pinned to the ETag
// read at open), with nothing at the output key and no upload left; the
// output never mixes the two versions.
func TestS3RebakeSourceReplacedMidway(t *testing.T) {
	srv := s3Store(t)
	dir := t.TempDir()
	in, other := filepath.Join(dir, "in.pte"), filepath.Join(dir, "other.pte")
	writeProgram(t, in, 3, 6<<20)
	writeProgram(t, other, 4, 6<<20)
	srv.Put(t, "bkt", "in.pte", in)
	var once sync.Once
	srv.FailWith(func(r *http.Request) int {
		if r.Header.Get("X-Amz-Copy-Source") != "" {
			once.Do(func() { srv.Put(t, "bkt", "in.pte", other) })
		}
		return 0
	})
	r := runCmd("--from", "s3://bkt/in.pte", "-o", "s3://bkt/out.pte", "--weight-streaming-budget-per-engine", "2GiB")
	srv.FailWith(nil)
	require.Equal(t, 3, r.code, "worth running again: %s", r.stderr)
	require.Contains(t, r.stderr, "changed", r.stderr)
	noObject(t, srv, "out.pte")
	require.Empty(t, srv.Uploads(t, "bkt"))
	t.Log(r.stderr)
}
