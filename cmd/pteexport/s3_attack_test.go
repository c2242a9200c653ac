package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
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
