package httprange

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestMisbehavingServers drives the Reader against servers that misbehave
// in one way each and checks the error kind, sentinel and status.
func TestMisbehavingServers(t *testing.T) {
	data := pattern(300<<10, 11)
	const readOff, readLen = 200 << 10, 1000 // a read outside the first block

	first := func(then http.HandlerFunc) http.HandlerFunc { return firstThen(data, then) }
	cut := func(w http.ResponseWriter, req *http.Request) {
		a, b, _ := parseRangeHeader(req.Header.Get("Range"))
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes %d-%d/%d\r\nContent-Length: %d\r\n\r\n", a, b, len(data), b-a+1)
		buf.Write(data[a : a+(b-a+1)/2])
		buf.Flush()
	}
	cases := []struct {
		name     string
		handler  http.HandlerFunc
		openFail bool // the error comes from Open rather than the read
		kind     Kind
		sentinel error
		status   int
	}{
		{
			name: "no range support",
			handler: func(w http.ResponseWriter, req *http.Request) {
				big := pattern(4<<20, 1)
				w.Header().Set("Content-Length", strconv.Itoa(len(big)))
				w.Write(big)
			},
			openFail: true, kind: KindNoRangeSupport, sentinel: ErrNoRangeSupport, status: 200,
		},
		{
			name: "no range support, no length",
			handler: func(w http.ResponseWriter, req *http.Request) {
				for range 64 {
					w.Write(data[:64<<10]) // 4 MiB, chunked
				}
			},
			openFail: true, kind: KindNoRangeSupport, sentinel: ErrNoRangeSupport, status: 200,
		},
		{
			name:    "416 inside the object",
			handler: first(func(w http.ResponseWriter, req *http.Request) { w.WriteHeader(416) }),
			kind:    KindRangeNotSatisfiable, sentinel: ErrRangeNotSatisfiable, status: 416,
		},
		{
			name:     "416 at open",
			handler:  func(w http.ResponseWriter, req *http.Request) { w.WriteHeader(416) },
			openFail: true, kind: KindRangeNotSatisfiable, sentinel: ErrRangeNotSatisfiable, status: 416,
		},
		{
			name: "redirect chain too long",
			handler: func(w http.ResponseWriter, req *http.Request) {
				n, _ := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/r"))
				http.Redirect(w, req, fmt.Sprintf("/r%d", n+1), http.StatusFound)
			},
			openFail: true, kind: KindRedirect, sentinel: ErrRedirect,
		},
		{
			name:     "redirect without Location",
			handler:  func(w http.ResponseWriter, req *http.Request) { w.WriteHeader(http.StatusFound) },
			openFail: true, kind: KindRedirect, sentinel: ErrRedirect, status: 302,
		},
		{
			name:     "404",
			handler:  http.NotFound,
			openFail: true, kind: KindNotFound, sentinel: ErrNotFound, status: 404,
		},
		{
			name:     "403",
			handler:  func(w http.ResponseWriter, req *http.Request) { w.WriteHeader(403) },
			openFail: true, kind: KindAuth, sentinel: ErrAuth, status: 403,
		},
		{
			name:    "connection cut mid-body",
			handler: first(cut),
			kind:    KindTruncated, sentinel: ErrTruncated, status: 206,
		},
		{
			name:     "connection cut mid-body at open",
			handler:  cut,
			openFail: true, kind: KindTruncated, sentinel: ErrTruncated, status: 206,
		},
		{
			name: "wrong Content-Range",
			handler: first(func(w http.ResponseWriter, req *http.Request) {
				a, b, _ := parseRangeHeader(req.Header.Get("Range"))
				writePartial(w, data, a+1, b+1) // the next range, the same length
			}),
			kind: KindBadResponse, sentinel: ErrBadResponse, status: 206,
		},
		{
			name: "Content-Range missing",
			handler: first(func(w http.ResponseWriter, req *http.Request) {
				w.WriteHeader(206)
				w.Write(data[:readLen])
			}),
			kind: KindBadResponse, sentinel: ErrBadResponse, status: 206,
		},
		{
			name: "unknown size at open",
			handler: func(w http.ResponseWriter, req *http.Request) {
				a, b, _ := parseRangeHeader(req.Header.Get("Range"))
				w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/*", a, b))
				w.WriteHeader(206)
				w.Write(data[a : b+1])
			},
			openFail: true, kind: KindBadResponse, sentinel: ErrBadResponse, status: 206,
		},
		{
			name: "short body",
			handler: first(func(w http.ResponseWriter, req *http.Request) {
				a, b, _ := parseRangeHeader(req.Header.Get("Range"))
				w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", a, b, len(data)))
				w.Header().Set("Content-Length", strconv.FormatInt(b-a+1, 10))
				w.WriteHeader(206)
				w.Write(data[a:b]) // one byte short; the server then closes
			}),
			kind: KindTruncated, sentinel: ErrTruncated, status: 206,
		},
		{
			name: "long body",
			handler: first(func(w http.ResponseWriter, req *http.Request) {
				a, b, _ := parseRangeHeader(req.Header.Get("Range"))
				w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", a, b, len(data)))
				w.WriteHeader(206)
				w.Write(data[a : b+2]) // chunked: no length to stop at
			}),
			kind: KindBadResponse, sentinel: ErrBadResponse, status: 206,
		},
		{
			name: "wrong Content-Length",
			handler: first(func(w http.ResponseWriter, req *http.Request) {
				a, b, _ := parseRangeHeader(req.Header.Get("Range"))
				w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", a, b, len(data)))
				w.Header().Set("Content-Length", strconv.FormatInt(b-a+2, 10))
				w.WriteHeader(206)
				w.Write(data[a : b+2])
			}),
			kind: KindBadResponse, sentinel: ErrBadResponse, status: 206,
		},
		{
			name: "size changed",
			handler: first(func(w http.ResponseWriter, req *http.Request) {
				a, b, _ := parseRangeHeader(req.Header.Get("Range"))
				writePartial(w, append(data, 0), a, b) // ignores If-Match; no ETag
			}),
			kind: KindChanged, sentinel: ErrChanged, status: 206,
		},
		{
			name: "ETag changed, conditions ignored",
			handler: first(func(w http.ResponseWriter, req *http.Request) {
				a, b, _ := parseRangeHeader(req.Header.Get("Range"))
				w.Header().Set("ETag", `"v2"`)
				writePartial(w, data, a, b)
			}),
			kind: KindChanged, sentinel: ErrChanged, status: 206,
		},
		{
			name: "whole object for If-Range",
			handler: first(func(w http.ResponseWriter, req *http.Request) {
				w.Header().Set("ETag", `"v2"`)
				w.Write(data)
			}),
			kind: KindChanged, sentinel: ErrChanged, status: 200,
		},
		{
			name: "range support stopped",
			handler: first(func(w http.ResponseWriter, req *http.Request) {
				w.Header().Set("ETag", `"v1"`)
				w.Write(data)
			}),
			kind: KindNoRangeSupport, sentinel: ErrNoRangeSupport, status: 200,
		},
		{
			name:    "5xx every time",
			handler: first(func(w http.ResponseWriter, req *http.Request) { w.WriteHeader(502) }),
			kind:    KindStatus, sentinel: ErrStatus, status: 502,
		},
		{
			name: "429 asking for too long",
			handler: func(w http.ResponseWriter, req *http.Request) {
				w.Header().Set("Retry-After", "3600")
				w.WriteHeader(429)
			},
			openFail: true, kind: KindStatus, sentinel: ErrStatus, status: 429,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, c.handler)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			r, err := Open(ctx, srv.URL+"/r0", fastOpts())
			if err == nil {
				defer r.Close()
				if c.openFail {
					t.Fatalf("Open succeeded, want a %s error", c.kind)
				}
				p := make([]byte, readLen)
				var n int
				n, err = r.ReadAt(p, readOff)
				if err == nil {
					t.Fatalf("ReadAt succeeded (%d bytes), want a %s error", n, c.kind)
				}
				if n != 0 {
					t.Errorf("ReadAt returned %d bytes with its error", n)
				}
			} else if !c.openFail {
				t.Fatalf("Open: %v", err)
			}
			t.Log(err)
			checkError(t, err, c.kind, c.sentinel, c.status)
		})
	}
}

// firstThen returns a handler that answers the first request correctly,
// for data with ETag "v1", and every later one with then.
func firstThen(data []byte, then http.HandlerFunc) http.HandlerFunc {
	var n atomic.Int64
	return func(w http.ResponseWriter, req *http.Request) {
		if n.Add(1) == 1 {
			a, b, _ := parseRangeHeader(req.Header.Get("Range"))
			w.Header().Set("ETag", `"v1"`)
			writePartial(w, data, a, b)
			return
		}
		then(w, req)
	}
}

// checkError checks that err is an *Error of kind with the sentinel and
// status, naming the redacted URL.
func checkError(t *testing.T, err error, kind Kind, sentinel error, status int) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	if e.Kind != kind || !errors.Is(err, sentinel) || e.Status != status {
		t.Fatalf("error %q: kind %s status %d, want kind %s status %d (sentinel %v)", err, e.Kind, e.Status, kind, status, sentinel)
	}
	if !strings.HasPrefix(e.URL, "http://127.0.0.1:") || !strings.Contains(err.Error(), e.URL) {
		t.Errorf("error %q does not name the URL (%q)", err, e.URL)
	}
	for _, k := range []Kind{KindNetwork, KindCanceled, KindAuth, KindNotFound, KindNoRangeSupport, KindRangeNotSatisfiable,
		KindChanged, KindRedirect, KindTruncated, KindBadResponse, KindStatus, KindUnreachable, KindUnpinned} {
		if k != kind && errors.Is(err, kindInfo[k].sentinel) {
			t.Errorf("error %q also matches %v", err, kindInfo[k].sentinel)
		}
	}
}

// versioned is a server whose object changes from v0 to v1 after its
// first request, the same size, sent with the validators validator gives
// each version (none, weak ETags, a fresh Last-Modified). It answers
// ranges itself and honours no condition, as a server that cannot
// compare a weak validator would.
type versioned struct {
	v0, v1    []byte
	validator func(w http.ResponseWriter, version int)
	n         atomic.Int64
}

func (s *versioned) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	data, version := s.v0, 0
	if s.n.Add(1) > 1 {
		data, version = s.v1, 1
	}
	s.validator(w, version)
	http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(data))
}

// validators are the ways a server can fail to pin an object: each sets
// the response's validators for a version.
var validators = map[string]func(w http.ResponseWriter, version int){
	"weak ETag": func(w http.ResponseWriter, version int) {
		w.Header().Set("ETag", fmt.Sprintf(`W/"v%d"`, version))
	},
	"no validator": func(w http.ResponseWriter, version int) {},
	"fresh Last-Modified": func(w http.ResponseWriter, version int) {
		// The same second as Date: a change within it gets the same value.
		now := time.Now().UTC().Format(http.TimeFormat)
		w.Header().Set("Last-Modified", now)
		w.Header().Set("Date", now)
	},
}

// TestUnpinnedServers: a server with a weak ETag, a Last-Modified of the
// same second as its Date, or no validator at all cannot pin a range
// read. Open with RequirePinned refuses it (KindUnpinned, not retried);
// without, Pinned says so and a weak ETag that changes still fails every
// kind of read (a block, a parallel large read, a read-ahead stream, a
// multi-range prefetch) with KindChanged: never the bytes of two
// versions.
func TestUnpinnedServers(t *testing.T) {
	v0, v1 := pattern(2<<20, 30), pattern(2<<20, 31)
	for name, validator := range validators {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, &versioned{v0: v0, v1: v1, validator: validator})
			o := fastOpts()
			o.RequirePinned = true
			_, err := Open(t.Context(), srv.URL, o)
			checkError(t, err, KindUnpinned, ErrUnpinned, 0)
			if e, _ := errors.AsType[*Error](err); e.Temporary() {
				t.Errorf("%v is Temporary", err)
			}
		})
	}
	reads := map[string]func(r *Reader) ([]byte, error){
		"block": func(r *Reader) ([]byte, error) {
			p := make([]byte, 1000)
			_, err := r.ReadAt(p, 1<<20)
			return p, err
		},
		"parallel": func(r *Reader) ([]byte, error) {
			p := make([]byte, 1<<20)
			_, err := r.ReadAt(p, 1<<20)
			return p, err
		},
		"stream": func(r *Reader) ([]byte, error) {
			var out []byte
			_, err := io.Copy(writerFunc(func(p []byte) (int, error) { out = append(out, p...); return len(p), nil }),
				io.NewSectionReader(r, 0, r.Size()))
			return out, err
		},
		"prefetch": func(r *Reader) ([]byte, error) {
			rs := []Range{{100 << 10, 100}, {500 << 10, 100}, {900 << 10, 100}}
			if err := r.Prefetch(t.Context(), rs); err != nil {
				return nil, err
			}
			p := make([]byte, 100)
			_, err := r.ReadAt(p, 500<<10)
			return p, err
		},
	}
	for name, read := range reads {
		t.Run("weak ETag/"+name, func(t *testing.T) {
			srv := newServer(t, &versioned{v0: v0, v1: v1, validator: validators["weak ETag"]})
			r := mustOpen(t, srv.URL, fastOpts())
			if r.Pinned() {
				t.Fatal("Pinned with a weak ETag")
			}
			got, err := read(r)
			if err == nil {
				t.Fatalf("read of a changed object succeeded (%d bytes)", len(got))
			}
			checkError(t, err, KindChanged, ErrChanged, 206)
		})
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestPinnedByLastModified: a Last-Modified at least a second before the
// response's Date is a strong validator (RFC 9110 section 8.8.2.2); one
// of the same second is not.
func TestPinnedByLastModified(t *testing.T) {
	for _, c := range []struct {
		lm, date time.Time
		pinned   bool
	}{
		{time.Unix(1_700_000_000, 0), time.Unix(1_700_000_001, 0), true},
		{time.Unix(1_700_000_000, 0), time.Unix(1_700_000_000, 0), false},
		{time.Unix(1_700_000_005, 0), time.Unix(1_700_000_000, 0), false},
	} {
		data := pattern(100<<10, 32)
		srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			w.Header().Set("Date", c.date.UTC().Format(http.TimeFormat))
			http.ServeContent(w, req, "", c.lm, bytes.NewReader(data))
		}))
		r := mustOpen(t, srv.URL, nil)
		if r.Pinned() != c.pinned {
			t.Errorf("Last-Modified %s, Date %s: Pinned %v, want %v", c.lm, c.date, r.Pinned(), c.pinned)
		}
	}
}

// TestSilentServer: a server that accepts the connection and never
// answers fails after ResponseHeaderTimeout (KindNetwork, retried), not
// never.
func TestSilentServer(t *testing.T) {
	ln := silentListener(t)
	o := fastOpts()
	o.ResponseHeaderTimeout, o.MaxRetries = 50*time.Millisecond, 1
	start := time.Now()
	_, err := Open(t.Context(), "http://"+ln.Addr().String()+"/m.pte", o)
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %s", time.Since(start))
	}
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindNetwork || !strings.Contains(err.Error(), "no response headers from the server within 50ms") {
		t.Fatalf("error %v: want KindNetwork naming the limit", err)
	}
	if !e.Temporary() {
		t.Errorf("%v is not Temporary", err)
	}
}

// silentListener accepts connections and never writes to them.
func silentListener(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { <-done; c.Close() }()
		}
	}()
	return ln
}

// TestStallingBody: a body that stops mid-way fails after IdleTimeout,
// at Open and in a later read, however long the limit for the whole
// request would be.
func TestStallingBody(t *testing.T) {
	data := pattern(300<<10, 33)
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	stall := func(w http.ResponseWriter, req *http.Request) {
		a, b, _ := parseRangeHeader(req.Header.Get("Range"))
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", a, b, len(data)))
		w.Header().Set("Content-Length", strconv.FormatInt(b-a+1, 10))
		w.WriteHeader(http.StatusPartialContent)
		w.Write(data[a : a+(b-a+1)/2])
		http.NewResponseController(w).Flush()
		select {
		case <-done:
		case <-req.Context().Done():
		}
	}
	o := fastOpts()
	o.IdleTimeout, o.MaxRetries = 50*time.Millisecond, 1
	for name, h := range map[string]http.HandlerFunc{"open": stall, "read": firstThen(data, stall)} {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, h)
			start := time.Now()
			r, err := Open(t.Context(), srv.URL, o)
			if err == nil {
				defer r.Close()
				_, err = r.ReadAt(make([]byte, 1000), 200<<10)
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindNetwork || !strings.Contains(err.Error(), "no body data from the server within 50ms") {
				t.Fatalf("error %v: want KindNetwork naming the limit", err)
			}
		})
	}
}

// TestCrossHostRedirectLeaksNothing: a URL with user information and a
// signed query, given credentials in headers, redirected to another host:
// that host sees no Referer, no credential header and no part of the
// first URL's query or user information, on any request.
func TestCrossHostRedirectLeaksNothing(t *testing.T) {
	data := pattern(300<<10, 34)
	const sig, token, key, pass, cookie = "SIG-s3cr3t", "TOKEN-s3cr3t", "KEY-s3cr3t", "PASS-s3cr3t", "COOKIE-s3cr3t"
	var seen atomic.Int64
	var leaks []string
	var mu sync.Mutex
	h2 := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		seen.Add(1)
		var all strings.Builder
		req.Header.Write(&all)
		all.WriteString(req.URL.String())
		for _, secret := range []string{"s3cr3t", "X-Amz", "Referer", "Authorization", "Cookie", "X-Api-Key"} {
			if strings.Contains(all.String(), secret) {
				mu.Lock()
				leaks = append(leaks, all.String())
				mu.Unlock()
			}
		}
		w.Header().Set("ETag", `"v1"`)
		http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(data))
	}))
	h1 := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, h2.URL+"/blob?own=1", http.StatusFound)
	}))
	h := http.Header{"Authorization": {"Bearer " + token}, "X-Api-Key": {key}, "Cookie": {"c=" + cookie}}
	u := strings.Replace(h1.URL, "http://", "http://user:"+pass+"@", 1) + "/m.pte?X-Amz-Signature=" + sig
	r := mustOpen(t, u, &Options{Header: h})
	if _, err := r.ReadAt(make([]byte, 1<<10), 200<<10); err != nil {
		t.Fatal(err)
	}
	if seen.Load() < 2 {
		t.Fatalf("the other host saw %d requests, want the open and the read", seen.Load())
	}
	for _, l := range leaks {
		t.Errorf("the other host saw:\n%s", l)
	}
}

// TestPermanentNetworkErrors: an unknown host, a TLS handshake with a
// plain HTTP server and an untrusted certificate fail at once with
// KindUnreachable, not Temporary and without retries; a refused
// connection (a server restarting) is KindNetwork and retried.
func TestPermanentNetworkErrors(t *testing.T) {
	plain := newServer(t, http.NotFoundHandler())
	untrusted := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(untrusted.Close)
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedURL := "http://" + refused.Addr().String() + "/m.pte"
	refused.Close()
	cases := []struct {
		name, url string
		kind      Kind
		msg       string
	}{
		{"unknown host", "http://ptekit-test.invalid/m.pte", KindUnreachable, "no such host"},
		{"TLS to a plain port", strings.Replace(plain.URL, "http://", "https://", 1) + "/m.pte", KindUnreachable, "does not speak TLS"},
		{"untrusted certificate", untrusted.URL + "/m.pte", KindUnreachable, "certificate is not trusted"},
		{"connection refused", refusedURL, KindNetwork, "refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "unknown host" {
				if _, err := net.DefaultResolver.LookupHost(t.Context(), "ptekit-test.invalid"); !isNotFound(err) {
					t.Skipf("the resolver does not answer NXDOMAIN for .invalid here: %v", err)
				}
			}
			o := fastOpts()
			o.MaxRetries = 2
			_, err := Open(t.Context(), c.url, o)
			var e *Error
			if !errors.As(err, &e) || e.Kind != c.kind || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v: want kind %s saying %q", err, c.kind, c.msg)
			}
			if !errors.Is(err, kindInfo[c.kind].sentinel) {
				t.Errorf("%v does not match its sentinel", err)
			}
			wantRetries := 0
			if c.kind == KindNetwork {
				wantRetries = 2
			}
			if e.Temporary() != (wantRetries > 0) {
				t.Errorf("Temporary() = %v", e.Temporary())
			}
			if got := strings.Contains(e.Msg, "retries failed"); got != (wantRetries > 0) {
				t.Errorf("message %q: retried %v, want %v", err, got, wantRetries > 0)
			}
		})
	}
}

func isNotFound(err error) bool {
	de, ok := errors.AsType[*net.DNSError](err)
	return ok && de.IsNotFound
}
