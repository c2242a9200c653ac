package httprange

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestETagDropped is an attack: a Reader pins the object by the strong
// ETag of its first answer, sends it with If-Match and checks that each
// answer names the same one. A server (or a proxy) that ignored If-Match
// and answered later ranges without an ETag, from another version of the
// object of the same size, passed every check, and the reads mixed two
// versions. RFC 9110 (section 15.3.7) requires a 206 to carry the ETag a
// 200 would: an answer without it, once the object is pinned by one, is
// now refused (KindBadResponse), for a single range and for the ranges of
// a Prefetch alike. So is an answer naming the pinned ETag made weak
// (W/"v1" for "v1", as a proxy that changes a body marks it): weakly
// equal is not the same bytes (RFC 9110 section 8.8.3.2 compares strong
// validators only for ranges), and such an answer passed.
func TestETagDropped(t *testing.T) {
	v1 := pattern(300<<10, 11)
	v2 := pattern(300<<10, 12)
	const readOff, readLen = 200 << 10, 1000 // outside the first block
	for _, c := range []struct {
		etag     string
		prefetch bool
	}{{"", false}, {"", true}, {`W/"v1"`, false}, {`W/"v1"`, true}} {
		prefetch := c.prefetch
		srv := newServer(t, firstThen(v1, func(w http.ResponseWriter, req *http.Request) {
			// Ignores If-Match, names no ETag or a weak one; answers the
			// first range of a multi-range request alone.
			if c.etag != "" {
				w.Header().Set("ETag", c.etag)
			}
			first, _, _ := strings.Cut(req.Header.Get("Range"), ",")
			a, b, _ := parseRangeHeader(first)
			writePartial(w, v2, a, b)
		}))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		r, err := Open(ctx, srv.URL+"/r0", fastOpts())
		if err != nil {
			t.Fatal(err)
		}
		if prefetch {
			// Its second range fails alone; the first must not be kept
			// from the answer to both.
			r.Prefetch(ctx, []Range{{Off: readOff, Len: readLen}, {Off: readOff + 20<<10, Len: 10}})
		}
		p := make([]byte, readLen)
		_, err = r.ReadAt(p, readOff)
		if err == nil {
			if bytes.Equal(p, v2[readOff:readOff+readLen]) {
				t.Fatalf("ETag %q, prefetch %v: read bytes of another version than the first answer's, which had an ETag", c.etag, prefetch)
			}
			t.Fatalf("ETag %q, prefetch %v: ReadAt succeeded", c.etag, prefetch)
		}
		checkError(t, err, KindBadResponse, ErrBadResponse, 206)
		r.Close()
		cancel()
	}
}
