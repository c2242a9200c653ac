package httprange

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// object is a server-side object that tests can replace.
type object struct {
	mu      sync.Mutex
	data    []byte
	etag    string // sent when not ""
	modTime time.Time
}

func (o *object) set(data []byte, etag string, mod time.Time) {
	o.mu.Lock()
	o.data, o.etag, o.modTime = data, etag, mod
	o.mu.Unlock()
}

// ServeHTTP serves the object with http.ServeContent, the standard
// library's range and conditional request handling.
func (o *object) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	o.mu.Lock()
	data, etag, mod := o.data, o.etag, o.modTime
	o.mu.Unlock()
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	http.ServeContent(w, req, "", mod, bytes.NewReader(data))
}

// pattern returns n bytes that differ at most offsets, so that a read from
// the wrong offset shows.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7+i>>8*13+i>>16*29) ^ seed
	}
	return b
}

// newServer starts a loopback server for h, closed when the test ends.
func newServer(t testing.TB, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// serveObject starts a server for a fresh object with data and an ETag.
func serveObject(t testing.TB, data []byte) (*object, *httptest.Server) {
	o := &object{}
	o.set(data, `"v1"`, time.Unix(1_700_000_000, 0))
	return o, newServer(t, o)
}

// tZero is a zero modification time: no Last-Modified.
var tZero time.Time

// fastOpts are options whose retries do not slow the tests down.
func fastOpts() *Options {
	return &Options{RetryDelay: time.Millisecond, MaxRetryDelay: 20 * time.Millisecond}
}

// parseRangeHeader parses the "bytes=a-b" Range the Reader sends.
func parseRangeHeader(s string) (first, last int64, ok bool) {
	a, b, found := strings.Cut(strings.TrimPrefix(s, "bytes="), "-")
	if !found {
		return 0, 0, false
	}
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	return first, last, err1 == nil && err2 == nil
}

// writePartial answers a range request for data with 206 and bytes
// [first, last] clipped to data.
func writePartial(w http.ResponseWriter, data []byte, first, last int64) {
	last = min(last, int64(len(data))-1)
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(data)))
	w.Header().Set("Content-Length", strconv.FormatInt(last-first+1, 10))
	w.WriteHeader(http.StatusPartialContent)
	w.Write(data[first : last+1])
}

// mustOpen opens u, failing the test on error, and closes the Reader when
// the test ends.
func mustOpen(t testing.TB, u string, opts *Options) *Reader {
	t.Helper()
	r, err := Open(t.Context(), u, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
