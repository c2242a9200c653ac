package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/s3test"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
)

// s3Server starts the test store with a bucket "programs" and points the
// process's AWS environment at it.
func s3Server(t *testing.T) *s3test.Server {
	srv := s3test.Start(t)
	srv.Setenv(t)
	srv.Bucket(t, "programs")
	return srv
}

// TestS3JSONEqualsLocal: every program of the shared tree, uploaded to a
// real S3 server, prints under `pteinspect --json s3://...` (and with
// --hash, which reads every payload) what `pteinspect --json FILE`
// prints, with the same exit status, apart from file.url, which is the
// s3:// location; and the default summary is the local one with the
// location in place of the path. No credential shows anywhere.
func TestS3JSONEqualsLocal(t *testing.T) {
	files := testkit.SharedPrograms(t, 64<<20)
	srv := s3Server(t)
	shared, err := testkit.SharedPath()
	require.NoError(t, err)
	shared, err = filepath.EvalSymlinks(shared)
	require.NoError(t, err)
	for _, path := range files {
		rel, err := filepath.Rel(shared, path)
		require.NoError(t, err)
		loc := srv.Put(t, "programs", filepath.ToSlash(rel), path)
		for _, flags := range [][]string{{"--json"}, {"--json", "--hash"}, {}} {
			local := runArgs(nil, append(flags, path)...)
			remote := runArgs(nil, append(flags, loc)...)
			require.Equal(t, local.code, remote.code, "%s %v: %s", rel, flags, remote.stderr)
			out := remote.stdout + remote.stderr
			require.NotContains(t, out, srv.SecretKey, rel)
			require.NotContains(t, out, "Signature=", rel)
			if len(flags) == 0 {
				require.Equal(t, local.stdout, strings.ReplaceAll(remote.stdout, loc, path), rel)
				continue
			}
			var lv, rv map[string]any
			require.NoError(t, json.Unmarshal([]byte(local.stdout), &lv), rel)
			require.NoError(t, json.Unmarshal([]byte(remote.stdout), &rv), rel)
			if file, ok := rv["file"].(map[string]any); ok {
				require.Equal(t, loc, file["url"], "%s: file.url", rel)
				delete(file, "url")
			} else {
				e, ok := rv["error"].(map[string]any)
				require.True(t, ok, "%s: %s", rel, remote.stdout)
				e["message"] = strings.ReplaceAll(e["message"].(string), loc, path)
			}
			require.Equal(t, lv, rv, "%s %v", rel, flags)
		}
	}
}

// TestS3ListReadsLittle: listing a 64-engine program of 2 GiB in the
// store moves under 64 KiB, in as many requests as for the same program
// with 2 MiB of engines. S3 serves one range per request (no multi-range
// answers), so the blob headers the views read cost a request each where
// HTTP sends them in one; but a blob's header and metadata come in one
// read, merged with the previous blob's last byte: at most 2 requests
// (the open, the last blob's last byte) plus 1 per engine.
func TestS3ListReadsLittle(t *testing.T) {
	if testing.Short() {
		t.Skip("uploads a 2 GiB program")
	}
	srv := s3Server(t)
	dir := t.TempDir()
	const engines = 64
	sizes := map[string]int64{"2MiB.pte": 32 << 10, "2GiB.pte": 32 << 20}
	for name, engine := range sizes {
		p := filepath.Join(dir, name)
		testprog.WriteEngines(t, p, engines, engine)
		st, err := os.Stat(p)
		require.NoError(t, err)
		require.Greater(t, st.Size(), engines*engine)
		srv.Put(t, "programs", "big/"+name, p)
	}
	for _, view := range [][]string{{}, {"--json"}, {"--verify"}, {"--plan"}, {"--compile-specs"}} {
		counts := map[string]int{}
		for name := range sizes {
			srv.Reset()
			r := runArgs(nil, append(view, "s3://programs/big/"+name)...)
			require.Equal(t, 0, r.code, "%v: %s", view, r.stderr)
			n, moved := srv.Moved()
			t.Logf("%v %s: %d requests, %d bytes", view, name, n, moved)
			require.LessOrEqual(t, n, 2+engines, "%v %s", view, name)
			require.Less(t, moved, int64(64<<10), "%v %s", view, name)
			for _, req := range srv.Requests() {
				require.NotContains(t, req.Header.Get("Range"), ",", "a multi-range request reached the store")
			}
			counts[name] = n
		}
		require.Equal(t, counts["2MiB.pte"], counts["2GiB.pte"], "%v", view)
	}
}

// TestS3Views: diff of two locations or a location and a file, --data
// from the store, and the errors of a missing object and bad
// credentials, which name the location and no credential.
func TestS3Views(t *testing.T) {
	srv := s3Server(t)
	dir := t.TempDir()
	for _, name := range []string{"two_methods", "segment"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".pte"), trtPrograms(t)[name], 0o644))
		srv.Put(t, "programs", name+".pte", filepath.Join(dir, name+".pte"))
	}
	loc := func(name string) string { return "s3://programs/" + name + ".pte" }
	local := func(name string) string { return filepath.Join(dir, name+".pte") }
	for _, pair := range [][2]string{{loc("segment"), loc("segment")}, {loc("segment"), local("segment")}} {
		r := runArgs(nil, "diff", pair[0], pair[1])
		require.Equal(t, 0, r.code, "%v: %s %s", pair, r.stdout, r.stderr)
	}
	l := runArgs(nil, "diff", "--json", local("segment"), local("two_methods"))
	r := runArgs(nil, "diff", "--json", loc("segment"), local("two_methods"))
	require.Equal(t, 1, r.code, r.stderr)
	require.Equal(t, l.stdout, r.stdout)

	r = runArgs(nil, loc("missing"))
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, loc("missing"))

	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-"+srv.SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "tok-"+srv.AccessKey+"-secret")
	for _, args := range [][]string{{loc("segment")}, {"--json", loc("segment")}, {"diff", loc("segment"), local("segment")}} {
		r = runArgs(nil, args...)
		require.NotEqual(t, 0, r.code, "%v", args)
		out := r.stdout + r.stderr
		require.Contains(t, out, loc("segment"))
		require.NotContains(t, out, srv.SecretKey)
		require.NotContains(t, out, "tok-"+srv.AccessKey)
		require.NotContains(t, out, "Signature=")
	}
}

// TestS3Data: --data s3://... resolves a program's external data as the
// local file does, for every recorded pair of the shared corpus.
func TestS3Data(t *testing.T) {
	dir := testkit.SharedDir(t, "corpus")
	srv := s3Server(t)
	checked := 0
	for _, run := range testkit.Pairs(t, dir) {
		if len(run.DataFiles) == 0 {
			continue
		}
		largs := []string{"--verify", "--json", run.Program}
		rargs := []string{"--verify", "--json", run.Program}
		ok := true
		for _, d := range run.DataFiles {
			if _, err := os.Stat(d); err != nil {
				ok = false
				break
			}
			largs = append(largs, "--data", d)
			rargs = append(rargs, "--data", srv.Put(t, "programs", "data/"+filepath.Base(d), d))
		}
		if !ok {
			continue
		}
		l, r := runArgs(nil, largs...), runArgs(nil, rargs...)
		require.Equal(t, l.code, r.code, "%s: %s", run.Run, r.stderr)
		for _, d := range run.DataFiles {
			r.stdout = strings.ReplaceAll(r.stdout, "s3://programs/data/"+filepath.Base(d), d)
		}
		require.Equal(t, l.stdout, r.stdout, run.Run)
		checked++
	}
	require.Positive(t, checked, "no pair with data files")
}
