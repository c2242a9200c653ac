package httprange

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestMisbehavingServers drives the Reader against servers that misbehave
// in one way each and checks the error kind, sentinel and status.
func TestMisbehavingServers(t *testing.T) {
	data := pattern(300<<10, 11)
	const readOff, readLen = 200 << 10, 1000 // a read outside the first block

	// first answers the first request correctly and every later one
	// with then.
	first := func(then http.HandlerFunc) http.HandlerFunc {
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
		KindChanged, KindRedirect, KindTruncated, KindBadResponse, KindStatus} {
		if k != kind && errors.Is(err, kindInfo[k].sentinel) {
			t.Errorf("error %q also matches %v", err, kindInfo[k].sentinel)
		}
	}
}
