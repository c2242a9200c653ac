package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestS3NeverWrites: no pteinspect view, check, diff or extract of an
// s3:// location sends the store anything but GET and HEAD requests (no
// PUT, POST, DELETE, no multipart upload), whatever it is asked; an
// --extract whose -o is an s3:// location is a usage error, and writes no
// object either.
func TestS3NeverWrites(t *testing.T) {
	srv := s3Server(t)
	dir := t.TempDir()
	for _, name := range []string{"two_methods", "segment"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".pte"), trtPrograms(t)[name], 0o644))
		srv.Put(t, "programs", name+".pte", filepath.Join(dir, name+".pte"))
	}
	loc := "s3://programs/segment.pte"
	// An undo record beside the object, as an interrupted --in-place
	// would leave beside a file.
	srv.Put(t, "programs", ".segment.pte.pteundo", filepath.Join(dir, "two_methods.pte"))
	srv.Reset()
	out := filepath.Join(dir, "payload.bin")
	for _, args := range [][]string{
		{loc}, {"-l", loc}, {"--json", loc}, {"--hash", "--json", loc}, {"--verify", loc}, {"--plan", loc},
		{"--compile-specs", loc}, {"--size", loc},
		{"--extract", "0:0", "-o", out, loc},
		{"--extract", "0:0", "-o", "s3://programs/extracted.bin", loc},
		{"--extract", "0:0", "-o", loc, "--force", loc},
		{"diff", loc, "s3://programs/two_methods.pte"},
		{"diff", "--json", loc, filepath.Join(dir, "segment.pte")},
		{"s3://programs/missing.pte"},
	} {
		r := runArgs(nil, args...)
		t.Logf("%v: exit %d %s", args, r.code, strings.TrimSpace(r.stderr))
	}
	for _, req := range srv.Requests() {
		require.Contains(t, []string{"GET", "HEAD"}, req.Method, "%s %s?%s", req.Method, req.Path, req.Query)
		require.NotContains(t, req.Query, "uploads", req.Path)
	}
	// -o and --html name local files: an s3:// location is a usage
	// error, not a path under a directory "s3:" that may exist.
	for _, args := range [][]string{
		{"--extract", "0:0", "-o", "s3://programs/extracted.bin", loc},
		{"--extract", "0:0", "-o", "S3://programs/extracted.bin", loc},
		{"--extract", "0:0", "-o", "https://example.com/x", loc},
		{"--size", "--html", "s3://programs/page.html", loc},
	} {
		r := runArgs(nil, args...)
		require.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, "local file", args)
	}
	_, err := srv.Get("programs", "extracted.bin")
	require.Error(t, err, "--extract -o s3://... wrote an object")
	got, err := srv.Get("programs", "segment.pte")
	require.NoError(t, err)
	require.Equal(t, trtPrograms(t)["segment"], got)
	require.Empty(t, srv.Uploads(t, "programs"))
}
