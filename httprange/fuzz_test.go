package httprange

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fuzzServer serves fuzzData, misbehaving on each request as the next
// byte of the current script says (cycling; an empty script is a correct
// server).
type fuzzServer struct {
	script atomic.Pointer[[]byte]
	n      atomic.Int64
}

// fuzzData is the object; fuzzData2 is another version of it, which the
// server sends under ETag "v2" when the script says so.
var fuzzData, fuzzData2 = pattern(600<<10, 21), pattern(600<<10, 99)

func (s *fuzzServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	script := *s.script.Load()
	i := s.n.Add(1) - 1
	data := fuzzData
	// A multi-range request misbehaves about its first range.
	first, last, ok := parseRangeHeader(strings.Split(req.Header.Get("Range"), ",")[0])
	if len(script) == 0 || !ok || first >= int64(len(data)) || first > last {
		serveCorrect(w, req)
		return
	}
	last = min(last, int64(len(data))-1)
	b := script[i%int64(len(script))]
	kind, p := int(b%12), int64(b/12) // p in [0, 21]
	w.Header().Set("ETag", `"v1"`)
	h := w.Header()
	switch kind {
	case 1: // another version under a weak ETag, ignoring the conditions
		// it cannot meet
		h.Set("ETag", `W/"v2"`)
		writePartial(w, fuzzData2, first, last)
	case 2: // a body that stalls mid-way
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(data)))
		h.Set("Content-Length", strconv.FormatInt(last-first+1, 10))
		w.WriteHeader(206)
		w.Write(data[first:min(first+p*100, last)])
		http.NewResponseController(w).Flush()
		<-req.Context().Done()
	case 3: // short body under a full Content-Length
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(data)))
		h.Set("Content-Length", strconv.FormatInt(last-first+1, 10))
		w.WriteHeader(206)
		w.Write(data[first:max(first, last-p)])
	case 4: // the bytes and Content-Range of a shifted range
		a := min(first+p+1, int64(len(data))-1)
		writePartial(w, data, a, a+last-first)
	case 5: // a wrong total size
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, int64(len(data))+p-10))
		w.WriteHeader(206)
		w.Write(data[first : last+1])
	case 6: // a chunked body longer than the range
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(data)))
		w.WriteHeader(206)
		w.Write(data[first:min(last+p+2, int64(len(data)))])
		w.Write([]byte("extra"))
	case 7: // another status
		statuses := []int{200, 404, 416, 500, 503, 429, 412, 401, 302, 301, 204, 304}
		st := statuses[p%int64(len(statuses))]
		switch st {
		case 200:
			h.Set("Content-Length", strconv.Itoa(len(data)))
			w.WriteHeader(200)
			w.Write(data)
		case 302:
			http.Redirect(w, req, req.URL.Path, st)
		case 429, 503:
			h.Set("Retry-After", strconv.FormatInt(p, 10))
			w.WriteHeader(st)
		default:
			w.WriteHeader(st)
		}
	case 8: // the connection is cut mid-body
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes %d-%d/%d\r\nContent-Length: %d\r\n\r\n", first, last, len(data), last-first+1)
		buf.Write(data[first:min(first+p*100, last)])
		buf.Flush()
	case 9: // fewer bytes than asked, and a Content-Range saying so
		writePartial(w, data, first, max(first, last-p-1))
	case 10: // a malformed or unsatisfied Content-Range
		crs := []string{"bytes */" + strconv.Itoa(len(data)), "bytes " + strconv.FormatInt(first, 10) + "-", "", "bytes 0-0/0", "items 0-1/2"}
		h.Set("Content-Range", crs[p%int64(len(crs))])
		w.WriteHeader(206)
		w.Write(data[first : last+1])
	case 11: // another version: other bytes under another ETag, or the
		// whole object, as for a failed If-Range
		h.Set("ETag", `"v2"`)
		other := fuzzData2
		if p%3 == 0 {
			w.WriteHeader(200)
			w.Write(other)
			return
		}
		writePartial(w, other, first, last)
	default:
		serveCorrect(w, req)
	}
}

func serveCorrect(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("ETag", `"v1"`)
	http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(fuzzData))
}

// FuzzTransport drives a Reader against a server whose misbehaviour on
// each request is chosen by script, with reads chosen by ops, and checks
// that every read returns the true bytes or an *Error: never wrong bytes,
// never a panic.
func FuzzTransport(f *testing.F) {
	fs := &fuzzServer{}
	empty := []byte{}
	fs.script.Store(&empty)
	srv := newServer(f, fs)
	f.Add([]byte{}, []byte{0, 0, 0, 0, 10, 0, 0, 9, 1, 200})
	f.Add([]byte{0, 3}, []byte{1, 0, 0, 200, 0, 0, 4, 0, 0, 255})
	f.Add([]byte{0, 0, 4, 5, 6, 7, 8, 9, 10, 11}, []byte{2, 0, 0, 2, 0, 0, 6, 0, 0, 1, 7, 0, 2, 0, 0})
	f.Add([]byte{0, 19, 31, 43, 55, 67, 79, 91, 103, 115, 127}, []byte{0, 0, 5, 40, 3, 0, 2, 0, 255, 255})
	f.Add([]byte{7}, []byte{0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, script, ops []byte) {
		if len(ops) > 40 {
			ops = ops[:40]
		}
		s := bytes.Clone(script)
		fs.script.Store(&s)
		fs.n.Store(0)
		opts := &Options{BlockSize: 4096, CacheBlocks: 4, Parallelism: 3, MaxRetries: 2,
			RetryDelay: time.Microsecond, MaxRetryDelay: time.Millisecond, ReadAhead: 64 << 10,
			IdleTimeout: 20 * time.Millisecond}
		r, err := Open(t.Context(), srv.URL+"/obj", opts)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		defer r.Close()
		for len(ops) >= 5 {
			off := int64(ops[0])<<16 | int64(ops[1])<<8 | int64(ops[2])
			n, prefetch := int64(ops[3])<<(ops[4]%12), ops[4] >= 240
			ops = ops[5:]
			if off > r.Size()+10 {
				off %= r.Size() + 10
			}
			p := make([]byte, min(n, 700<<10))
			if prefetch && len(p) > 0 {
				// Prefetch the read's range and two others first.
				err := r.Prefetch(t.Context(), []Range{{off, int64(len(p))}, {off / 2, 100}, {off / 3, 5000}})
				if err != nil {
					checkFuzzError(t, err)
				}
			}
			k, err := r.ReadAt(p, off)
			if err != nil && err != io.EOF {
				checkFuzzError(t, err)
				if k != 0 {
					t.Fatalf("ReadAt(%d, %d) failed but returned %d bytes", len(p), off, k)
				}
				continue
			}
			// A short read must say EOF; a full one may say so only when
			// it ends at the end of the object (the io.ReaderAt contract:
			// an empty read at or past the end gives 0, EOF here, as with
			// io.SectionReader).
			want := min(int64(len(p)), max(r.Size()-off, 0))
			atEnd := off+want >= r.Size()
			if int64(k) != want || (want < int64(len(p)) && err != io.EOF) || (err == io.EOF && !atEnd) {
				t.Fatalf("ReadAt(%d, %d) = %d, %v; size %d", len(p), off, k, err, r.Size())
			}
			// The bytes must be those of the version Open pinned.
			// That is the version of the first response, whose ETag
			// (strong, or weak when the server gave only a weak one) the
			// Reader holds every later response to.
			truth := fuzzData
			if r.etag == `"v2"` || r.seenTag == `W/"v2"` {
				truth = fuzzData2
			}
			if k > 0 && (off+int64(k) > int64(len(truth)) || !bytes.Equal(p[:k], truth[off:off+int64(k)])) {
				t.Fatalf("ReadAt(%d, %d) returned wrong bytes (script %v, version %s, first ETag %s)", len(p), off, script, r.etag, r.seenTag)
			}
		}
	})
}

func checkFuzzError(t *testing.T, err error) {
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	if e.Kind.String() == fmt.Sprintf("Kind(%d)", int(e.Kind)) {
		t.Fatalf("error %v has no valid kind", err)
	}
}
