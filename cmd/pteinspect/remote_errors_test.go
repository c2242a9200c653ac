package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/httprange"
	"github.com/ptekit/ptekit/internal/testprog"
)

// fastRetries makes the transport's retries quick for the test, and
// applies more tuning.
func fastRetries(t *testing.T, more ...func(*httprange.Options)) {
	tuneHTTP = func(o *httprange.Options) {
		o.RetryDelay, o.MaxRetryDelay = time.Millisecond, 5*time.Millisecond
		for _, f := range more {
			f(o)
		}
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

// halfBody returns a handler that declares the range asked for, sends half
// of it and then, once hold is closed (at once when nil), closes the
// connection; a multi-range request gets no answer at all.
func halfBody(data []byte, hold <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
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
		if hold != nil {
			<-hold
		}
	}
}

// twoVersions returns a 2 MiB program with 8 engines (views read past the
// first block) and another version differing in its last byte.
func twoVersions(t *testing.T) (data, other []byte) {
	path := filepath.Join(t.TempDir(), "p.pte")
	testprog.WriteEngines(t, path, 8, 256<<10)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	other = bytes.Clone(data)
	other[len(other)-1] ^= 1
	return data, other
}

// TestRemoteErrors: each way a server can fail gives its documented
// one-line message, hint and exit status through the command, for the
// default view and --json (whose standard output is the failure object),
// never an answer.
func TestRemoteErrors(t *testing.T) {
	fastRetries(t)
	data, other := twoVersions(t)

	cut := halfBody(data, nil)
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

// TestRemoteHostileServers: a server that accepts and never answers, a
// body that stalls, and an object with a weak ETag replaced between reads
// each end the command with its one-line message, hint and exit status
// (3: run again), in every view, never a hang and never an answer.
func TestRemoteHostileServers(t *testing.T) {
	fastRetries(t, func(o *httprange.Options) {
		o.ResponseHeaderTimeout, o.IdleTimeout, o.MaxRetries = 100*time.Millisecond, 100*time.Millisecond, 1
	})
	data, other := twoVersions(t)

	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	// silent accepts the connection and the request, and never answers.
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-done:
		case <-req.Context().Done():
		}
	}))
	t.Cleanup(silent.Close)
	stall := halfBody(data, done)
	var weakHits atomic.Int64
	weak := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		content, tag := data, `W/"v0"`
		if weakHits.Add(1) > 1 {
			content, tag = other, `W/"v1"`
		}
		w.Header().Set("ETag", tag)
		http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(content))
	}))
	t.Cleanup(weak.Close)

	cases := []struct {
		name    string
		url     func() string
		message string
	}{
		{"silent server", func() string { return silent.URL + "/p.pte?sig=s3cr3t" },
			"no response headers from the server within 100ms (hint: the server stopped answering"},
		{"stalling body", func() string { return misbehaving(t, data, stall).URL + "/p.pte?sig=s3cr3t" },
			"no body data from the server within 100ms (hint: the server stopped answering"},
		{"weak ETag replaced", func() string { weakHits.Store(0); return weak.URL + "/p.pte?sig=s3cr3t" },
			`ETag is now W/"v1", was W/"v0" (hint: the file was replaced on the server while it was read; run again)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, view := range [][]string{{}, {"--json"}, {"--verify"}} {
				start := time.Now()
				r := runArgs(nil, append(view, c.url())...)
				t.Logf("%v: exit %d: %s", view, r.code, r.stderr)
				require.Less(t, time.Since(start), 5*time.Second, "%v", view)
				require.Equal(t, 3, r.code, "%v: %s", view, r.stderr)
				require.Contains(t, r.stderr, c.message, "%v", view)
				require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
				require.NotContains(t, r.stdout+r.stderr, "s3cr3t")
			}
		})
	}
}

// TestRemoteRedirectLeaksNothing: `pteinspect` of a URL with user
// information and a signed query, with a bearer token, --header and a
// cookie, redirected to another host: that host sees no Referer, no
// credential and no part of the first URL's query or user information,
// and the command's output shows none of them either.
func TestRemoteRedirectLeaksNothing(t *testing.T) {
	data := trtPrograms(t)["segment"]
	var (
		mu    sync.Mutex
		seen  int
		leaks []string
	)
	storage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var all strings.Builder
		req.Header.Write(&all)
		all.WriteString(req.URL.String())
		mu.Lock()
		seen++
		for _, s := range []string{"s3cr3t", "X-Amz", "Referer", "Authorization", "Cookie", "X-Api-Key"} {
			if strings.Contains(all.String(), s) {
				leaks = append(leaks, all.String())
			}
		}
		mu.Unlock()
		w.Header().Set("ETag", `"v1"`)
		http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(data))
	}))
	defer storage.Close()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer TOKEN-s3cr3t" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		http.Redirect(w, req, storage.URL+"/blob?X-Storage-Own=1", http.StatusFound)
	}))
	defer front.Close()
	t.Setenv(httprange.EnvBearerToken, "TOKEN-s3cr3t")
	t.Setenv(httprange.EnvHeaders, "Cookie: c=COOKIE-s3cr3t")
	u := strings.Replace(front.URL, "http://", "http://user:PASS-s3cr3t@", 1) + "/m.pte?X-Amz-Signature=SIG-s3cr3t"
	for _, view := range [][]string{{}, {"--json"}, {"--verify"}, {"--compile-specs"}} {
		r := runArgs(nil, append(append(view, "--header", "X-Api-Key: KEY-s3cr3t"), u)...)
		require.Equal(t, 0, r.code, "%v: %s", view, r.stderr)
		require.NotContains(t, r.stdout+r.stderr, "s3cr3t", "%v", view)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Positive(t, seen, "the storage host was never asked")
	require.Empty(t, leaks, "the storage host saw the first host's secrets")
}

// TestRemotePermanentErrors: an unknown host, TLS to a plain HTTP port and
// an untrusted certificate fail at once, exit 1, with a hint saying that
// retrying will not help: one connection, no retries.
func TestRemotePermanentErrors(t *testing.T) {
	var conns atomic.Int64
	counted := func(srv *httptest.Server) *httptest.Server {
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		return srv
	}
	plain := counted(httptest.NewUnstartedServer(http.NotFoundHandler()))
	plain.Start()
	defer plain.Close()
	untrusted := counted(httptest.NewUnstartedServer(http.NotFoundHandler()))
	untrusted.StartTLS()
	defer untrusted.Close()
	cases := []struct{ name, url, message string }{
		{"unknown host", "http://ptekit-test.invalid/p.pte?sig=s3cr3t", "no such host"},
		{"TLS to a plain port", strings.Replace(plain.URL, "http://", "https://", 1) + "/p.pte?sig=s3cr3t", "does not speak TLS"},
		{"untrusted certificate", untrusted.URL + "/p.pte?sig=s3cr3t", "certificate is not trusted"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "unknown host" {
				_, err := net.DefaultResolver.LookupHost(t.Context(), "ptekit-test.invalid")
				if de, ok := err.(*net.DNSError); !ok || !de.IsNotFound {
					t.Skipf("the resolver does not answer NXDOMAIN for .invalid here: %v", err)
				}
			}
			conns.Store(0)
			r := runArgs(nil, "--json", c.url)
			t.Log(r.stderr)
			require.Equal(t, 1, r.code, r.stderr)
			require.Contains(t, r.stderr, c.message)
			require.Contains(t, r.stderr, "(hint: retrying will not help")
			require.NotContains(t, r.stderr, "retries failed")
			require.NotContains(t, r.stdout+r.stderr, "s3cr3t")
			if c.name != "unknown host" {
				require.Equal(t, int64(1), conns.Load(), "connections: one, no retries")
			}
		})
	}
}

// endlessZeros is standard input of zeros without end, counting what is
// read.
type endlessZeros struct{ n atomic.Int64 }

func (z *endlessZeros) Read(p []byte) (int, error) {
	clear(p)
	z.n.Add(int64(len(p)))
	return len(p), nil
}

// TestStdinZeros: `head -c 2G /dev/zero | pteinspect -` fails at once on
// the identifier, having read only the program's head, in every view.
func TestStdinZeros(t *testing.T) {
	for _, view := range [][]string{{}, {"--json"}, {"--verify"}, {"--plan"}} {
		var z endlessZeros
		var out, errb bytes.Buffer
		code := run(append(view, "-"), &z, &out, &errb)
		require.Equal(t, 1, code, "%v: %s", view, errb.String())
		require.Contains(t, out.String()+errb.String(), "not an ExecuTorch program", "%v", view)
		require.LessOrEqual(t, z.n.Load(), int64(64), "%v: bytes read from standard input", view)
	}
}
