package httprange

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestUnauthorizedDoesNotLeak: a 401 names the token variable and never
// the token, the URL's user information or its query.
func TestUnauthorizedDoesNotLeak(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer right-token" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	const token, sig, pass = "wrong-token-s3cr3t", "SIGNATURE-s3cr3t", "pa55-s3cr3t"
	u := strings.Replace(srv.URL, "http://", "http://user:"+pass+"@", 1) + "/m.pte?X-Amz-Signature=" + sig + "#frag"
	h, err := ParseHeader("Authorization: Bearer " + token)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(t.Context(), u, &Options{Header: h})
	checkError(t, err, KindAuth, ErrAuth, 401)
	msg := fmt.Sprintf("%v %+v %#v", err, err, err)
	for _, secret := range []string{"s3cr3t", "X-Amz", "user", "frag"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error leaks %q: %s", secret, msg)
		}
	}
	if !strings.Contains(err.Error(), EnvBearerToken) {
		t.Errorf("error %q does not point at %s", err, EnvBearerToken)
	}
	// The same URL through a network error: *url.Error would quote it.
	srv.Close()
	_, err = Open(t.Context(), u, &Options{Header: h, MaxRetries: -1})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindNetwork || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("network error %q: want KindNetwork without secrets", err)
	}
}

// TestRedirects: a short chain is followed, later requests go straight to
// its end, headers do not follow to another host, and https never
// redirects to http.
func TestRedirects(t *testing.T) {
	data := pattern(200<<10, 12)
	var storageAuth atomic.Value
	storageAuth.Store("")
	o := &object{}
	o.set(data, `"s"`, time.Time{})
	storage := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		storageAuth.Store(req.Header.Get("Authorization") + req.Header.Get("X-Api-Key"))
		o.ServeHTTP(w, req)
	}))
	var frontHits atomic.Int64
	front := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		frontHits.Add(1)
		if req.Header.Get("X-Api-Key") != "k" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		switch req.URL.Path {
		case "/a":
			http.Redirect(w, req, "/b", http.StatusFound)
		case "/b":
			http.Redirect(w, req, storage.URL+"/blob?sig=1", http.StatusTemporaryRedirect)
		}
	}))
	h := http.Header{"X-Api-Key": {"k"}, "Authorization": {"Bearer t"}}
	r := mustOpen(t, front.URL+"/a", &Options{Header: h})
	if got := storageAuth.Load(); got != "" {
		t.Errorf("storage host received credentials %q", got)
	}
	p := make([]byte, 100)
	if _, err := r.ReadAt(p, 150<<10); err != nil || !bytes.Equal(p, data[150<<10:150<<10+100]) {
		t.Fatal(err)
	}
	if frontHits.Load() != 2 {
		t.Errorf("front server saw %d requests, want 2 (the read goes straight to storage)", frontHits.Load())
	}
	if s := r.Stats(); s.Requests != 4 {
		t.Errorf("%d requests, want 3 for the open and 1 for the read", s.Requests)
	}
	if _, err := Open(t.Context(), front.URL+"/a", &Options{Header: h, MaxRedirects: 1}); !errors.Is(err, ErrRedirect) {
		t.Errorf("two redirects with MaxRedirects 1: %v", err)
	}

	tlsFront := httptest.NewTLSServer(http.RedirectHandler(storage.URL+"/blob", http.StatusFound))
	defer tlsFront.Close()
	_, err := Open(t.Context(), tlsFront.URL, &Options{Client: tlsFront.Client()})
	checkErrorURL(t, err, KindRedirect, "https://127.0.0.1:")
}

// checkErrorURL checks err's kind and that its URL starts with prefix.
func checkErrorURL(t *testing.T, err error, kind Kind, prefix string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Kind != kind || !strings.HasPrefix(e.URL, prefix) {
		t.Fatalf("error %v: want kind %s with a URL starting %q", err, kind, prefix)
	}
}

// TestCutOnceThenRetry: a connection cut mid-body is retried and the read
// returns the right bytes.
func TestCutOnceThenRetry(t *testing.T) {
	data := pattern(100<<10, 13)
	o := &object{}
	o.set(data, `"v"`, time.Time{})
	var n atomic.Int64
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if n.Add(1) == 2 {
			conn, buf, _ := http.NewResponseController(w).Hijack()
			fmt.Fprintf(buf, "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 65536-98303/%d\r\nContent-Length: 32768\r\n\r\nabc", len(data))
			buf.Flush()
			conn.Close()
			return
		}
		o.ServeHTTP(w, req)
	}))
	r := mustOpen(t, srv.URL, fastOpts())
	p := make([]byte, 1000)
	if _, err := r.ReadAt(p, 70_000); err != nil || !bytes.Equal(p, data[70_000:71_000]) {
		t.Fatalf("ReadAt: %v", err)
	}
	if s := r.Stats(); s.Retries != 1 || s.Requests != 3 {
		t.Errorf("stats %+v, want 3 requests with 1 retry", s)
	}
}

// TestRetryStatus: 503 twice then success; 429 with Retry-After waits as
// long as asked.
func TestRetryStatus(t *testing.T) {
	data := pattern(100<<10, 14)
	for _, c := range []struct {
		status     int
		retryAfter string
		wait       time.Duration
	}{
		{503, "", 0},
		{500, "", 0},
		{429, "1", time.Second},
	} {
		t.Run(fmt.Sprint(c.status), func(t *testing.T) {
			o := &object{}
			o.set(data, `"v"`, time.Time{})
			var n atomic.Int64
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if k := n.Add(1); k == 2 || k == 3 && c.retryAfter == "" {
					if c.retryAfter != "" {
						w.Header().Set("Retry-After", c.retryAfter)
					}
					w.WriteHeader(c.status)
					return
				}
				o.ServeHTTP(w, req)
			}))
			opts := fastOpts()
			opts.MaxRetryDelay = 2 * time.Second
			r := mustOpen(t, srv.URL, opts)
			start := time.Now()
			p := make([]byte, 1000)
			if _, err := r.ReadAt(p, 70_000); err != nil || !bytes.Equal(p, data[70_000:71_000]) {
				t.Fatalf("ReadAt: %v", err)
			}
			if el := time.Since(start); el < c.wait {
				t.Errorf("retried after %v, Retry-After asked for %v", el, c.wait)
			}
			wantRetries := int64(2)
			if c.retryAfter != "" {
				wantRetries = 1
			}
			if s := r.Stats(); s.Retries != wantRetries {
				t.Errorf("%d retries, want %d", s.Retries, wantRetries)
			}
		})
	}
}

// TestSlowServerPastDeadline: a server that stops answering, before its
// headers or in the middle of a body, fails at the context's deadline with
// KindCanceled and context.DeadlineExceeded.
func TestSlowServerPastDeadline(t *testing.T) {
	data := pattern(100<<10, 15)
	o := &object{}
	o.set(data, `"v"`, time.Time{})
	for _, c := range []struct {
		name   string
		atOpen bool
		stall  http.HandlerFunc
	}{
		{"no headers at open", true, nil},
		{"no headers", false, nil},
		{"body stalls", false, func(w http.ResponseWriter, req *http.Request) {
			a, b, _ := parseRangeHeader(req.Header.Get("Range"))
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", a, b, len(data)))
			w.Header().Set("Content-Length", fmt.Sprint(b-a+1))
			w.WriteHeader(206)
			w.Write(data[a : a+100])
			http.NewResponseController(w).Flush()
			<-req.Context().Done()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var n atomic.Int64
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if n.Add(1) == 1 && !c.atOpen {
					o.ServeHTTP(w, req)
				} else if c.stall != nil {
					c.stall(w, req)
				} else {
					<-req.Context().Done() // hang until the client gives up
				}
			}))
			ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			r, err := Open(ctx, srv.URL, nil)
			if err == nil {
				_, err = r.ReadAt(make([]byte, 10), 70_000)
				r.Close()
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%v, want context.DeadlineExceeded", err)
			}
			checkError(t, err, KindCanceled, ErrCanceled, 0)
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("gave up after %v", el)
			}
		})
	}
}

// TestReplacedBetweenReads: an object replaced on the server after Open
// fails the next read with KindChanged, pinned by ETag or, without one,
// by Last-Modified; a read from the cache still gives the first version.
func TestReplacedBetweenReads(t *testing.T) {
	v1, v2 := pattern(300<<10, 16), pattern(300<<10, 17)
	mod := time.Unix(1_700_000_000, 0)
	for _, etag := range []string{`"v1"`, ""} {
		o := &object{}
		o.set(v1, etag, mod)
		srv := newServer(t, o)
		r, err := Open(t.Context(), srv.URL, fastOpts())
		if err != nil {
			t.Fatal(err)
		}
		p := make([]byte, 1000)
		if _, err := r.ReadAt(p, 100_000); err != nil || !bytes.Equal(p, v1[100_000:101_000]) {
			t.Fatal(err)
		}
		newTag := ""
		if etag != "" {
			newTag = `"v2"`
		}
		o.set(v2, newTag, mod.Add(time.Second))
		_, err = r.ReadAt(p, 200_000)
		checkError(t, err, KindChanged, ErrChanged, http.StatusPreconditionFailed)
		if _, err := r.ReadAt(p, 100_000); err != nil || !bytes.Equal(p, v1[100_000:101_000]) {
			t.Errorf("cached read after the change: %v", err)
		}
		r.Close()
	}
}

// TestSmallObjectWithoutRanges: a server that ignores Range is accepted
// for an object up to MaxBodyFallback, read once into memory.
func TestSmallObjectWithoutRanges(t *testing.T) {
	data := pattern(50<<10, 18)
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { w.Write(data) }))
	r := mustOpen(t, srv.URL, nil)
	p := make([]byte, 1000)
	if _, err := r.ReadAt(p, 40_000); err != nil || !bytes.Equal(p, data[40_000:41_000]) || r.Size() != int64(len(data)) {
		t.Fatal(err)
	}
	if s := r.Stats(); s.Requests != 1 {
		t.Errorf("%d requests, want 1", s.Requests)
	}
	_, err := Open(t.Context(), srv.URL, &Options{MaxBodyFallback: -1})
	checkError(t, err, KindNoRangeSupport, ErrNoRangeSupport, 200)
	_, err = Open(t.Context(), srv.URL, &Options{MaxBodyFallback: 10 << 10})
	checkError(t, err, KindNoRangeSupport, ErrNoRangeSupport, 200)
}

// TestOpenRejectsOtherSchemes: only http and https URLs open, and the
// error does not quote the query.
func TestOpenRejectsOtherSchemes(t *testing.T) {
	for _, u := range []string{"file:///x.pte?t=s3cr3t", "x.pte", "ftp://h/x?t=s3cr3t", "http://", "http://%zz/?t=s3cr3t"} {
		_, err := Open(t.Context(), u, nil)
		if err == nil || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("Open(%q): %v", u, err)
		}
	}
}
