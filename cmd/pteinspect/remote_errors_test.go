package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/httprange"
	"github.com/ptekit/ptekit/internal/testprog"
)

// fastRetries makes the transport's retries quick for the test.
func fastRetries(t *testing.T) {
	tuneHTTP = func(o *httprange.Options) {
		o.RetryDelay, o.MaxRetryDelay = time.Millisecond, 5*time.Millisecond
	}
	t.Cleanup(func() { tuneHTTP = nil })
}

// misbehaving returns a server for data that answers the first request
// correctly (http.ServeContent, ETag "v1") and every later one with then.
func misbehaving(t *testing.T, data []byte, then http.HandlerFunc) *httptest.Server {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if n.Add(1) == 1 || then == nil {
			w.Header().Set("ETag", `"v1"`)
			http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(data))
			return
		}
		then(w, req)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRemoteErrors: each way a server can fail gives its documented
// one-line message, hint and exit status through the command, for the
// default view and --json (whose standard output is the failure object),
// never an answer.
func TestRemoteErrors(t *testing.T) {
	fastRetries(t)
	path := filepath.Join(t.TempDir(), "p.pte")
	testprog.WriteEngines(t, path, 8, 256<<10) // 2 MiB: reads past the first block
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	other := bytes.Clone(data)
	other[len(other)-1] ^= 1

	// cut declares the range asked for and sends half of it; a
	// multi-range request gets no answer at all.
	cut := func(w http.ResponseWriter, req *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		var a, b int64
		if _, err := fmt.Sscanf(req.Header.Get("Range"), "bytes=%d-%d", &a, &b); err != nil || strings.Contains(req.Header.Get("Range"), ",") {
			return
		}
		b = min(b, int64(len(data))-1)
		fmt.Fprintf(buf, "HTTP/1.1 206 Partial Content\r\nETag: \"v1\"\r\nContent-Range: bytes %d-%d/%d\r\nContent-Length: %d\r\n\r\n", a, b, len(data), b-a+1)
		buf.Write(data[a : a+(b-a+1)/2])
		buf.Flush()
	}
	var redirects atomic.Int64
	cases := []struct {
		name    string
		then    http.HandlerFunc // nil: the whole server is handler
		handler http.HandlerFunc
		args    []string
		code    int
		message string // in the one line on standard error
	}{
		{name: "changed between reads", then: func(w http.ResponseWriter, req *http.Request) {
			w.Header().Set("ETag", `"v2"`)
			http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(other))
		}, code: 3, message: "replaced on the server while it was read; run again"},
		{name: "no range support", handler: func(w http.ResponseWriter, req *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(len(data)))
			w.Write(data)
		}, code: 1, message: "ignores Range requests; download the file"},
		{name: "416", then: func(w http.ResponseWriter, req *http.Request) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(data)))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
		}, code: 1, message: "416"},
		{name: "redirect chain", handler: func(w http.ResponseWriter, req *http.Request) {
			http.Redirect(w, req, fmt.Sprintf("/hop%d", redirects.Add(1)), http.StatusFound)
		}, code: 1, message: "too many redirects or one from https to http; pass the final URL"},
		{name: "401", handler: func(w http.ResponseWriter, req *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
		}, args: []string{"--header", "Authorization: Bearer t0ps3cret"}, code: 1, message: "set PTEKIT_HTTP_BEARER_TOKEN or pass an Authorization header"},
		{name: "404", handler: http.NotFound, code: 1, message: "404 Not Found (hint: check the URL)"},
		{name: "connection cut mid-body", then: cut, code: 3, message: "the connection failed after retries; run again"},
		{name: "5xx after retries", then: func(w http.ResponseWriter, req *http.Request) {
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}, code: 3, message: "503 Service Unavailable"},
		{name: "slow server past --timeout", then: func(w http.ResponseWriter, req *http.Request) {
			select {
			case <-req.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}, args: []string{"--timeout", "300ms"}, code: 3, message: "raise --timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, view := range [][]string{{}, {"--json"}} {
				var srv *httptest.Server
				if c.handler != nil {
					srv = httptest.NewServer(c.handler)
					t.Cleanup(srv.Close)
				} else {
					srv = misbehaving(t, data, c.then)
				}
				url := srv.URL + "/p.pte?sig=s3cr3t"
				args := append(append(append([]string{}, view...), c.args...), url)
				start := time.Now()
				r := runArgs(nil, args...)
				t.Logf("%v: exit %d: %s", view, r.code, r.stderr)
				require.Less(t, time.Since(start), 5*time.Second, "%v", view)
				require.Equal(t, c.code, r.code, "%v: %s", view, r.stderr)
				require.Contains(t, r.stderr, c.message, "%v", view)
				require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %s", r.stderr)
				require.True(t, strings.HasPrefix(r.stderr, "pteinspect: "), r.stderr)
				for _, secret := range []string{"s3cr3t", "t0ps3cret"} {
					require.NotContains(t, r.stdout+r.stderr, secret)
				}
				if len(view) > 0 {
					require.Contains(t, r.stdout, `"error"`)
					require.Contains(t, r.stdout, `"access_failed"`)
				} else {
					require.Empty(t, r.stdout)
				}
			}
		})
	}
}

// TestRemoteCredentials: the bearer token comes from
// PTEKIT_HTTP_BEARER_TOKEN or --header, and reaches the server.
func TestRemoteCredentials(t *testing.T) {
	data := trtPrograms(t)["segment"]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer t0ps3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(data))
	}))
	defer srv.Close()
	r := runArgs(nil, "--json", srv.URL+"/p.pte")
	require.Equal(t, 1, r.code, r.stderr)
	r = runArgs(nil, "--json", "--header", "Authorization: Bearer t0ps3cret", srv.URL+"/p.pte")
	require.Equal(t, 0, r.code, r.stderr)
	r = runArgs(nil, "--header", "Bad Header", srv.URL+"/p.pte")
	require.Equal(t, 2, r.code, r.stderr)
	t.Setenv(httprange.EnvBearerToken, "t0ps3cret")
	r = runArgs(nil, "--json", srv.URL+"/p.pte")
	require.Equal(t, 0, r.code, r.stderr)
}
