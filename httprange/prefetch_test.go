package httprange

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// scattered returns n 64-byte ranges spread over size bytes.
func scattered(n int, size int64) []Range {
	var rs []Range
	for i := range n {
		rs = append(rs, Range{Off: 40_000 + int64(i)*(size-50_000)/int64(n), Len: 64})
	}
	return rs
}

// TestPrefetchMultiRange: 64 scattered ranges cost one multi-range request
// to http.ServeContent, and reads inside them none.
func TestPrefetchMultiRange(t *testing.T) {
	data := pattern(8<<20, 31)
	_, srv := serveObject(t, data)
	r := mustOpen(t, srv.URL, nil)
	rs := scattered(64, int64(len(data)))
	if err := r.Prefetch(t.Context(), rs); err != nil {
		t.Fatal(err)
	}
	readRanges(t, r, rs, data)
	if s := r.Stats(); s.Requests != 2 || s.Bytes > DefaultBlockSize+64*256 {
		t.Errorf("stats %+v, want 2 requests (open, prefetch) and under 256 bytes per range", s)
	}
	// Prefetching again costs nothing.
	if err := r.Prefetch(t.Context(), rs); err != nil || r.Stats().Requests != 2 {
		t.Errorf("second Prefetch: %v, %d requests", err, r.Stats().Requests)
	}
}

// readRanges reads each range and checks its bytes.
func readRanges(t *testing.T, r *Reader, rs []Range, data []byte) {
	t.Helper()
	for _, rg := range rs {
		p := make([]byte, rg.Len)
		if _, err := r.ReadAt(p, rg.Off); err != nil || !bytes.Equal(p, data[rg.Off:rg.Off+rg.Len]) {
			t.Fatalf("ReadAt(%d, %d): %v or wrong bytes", rg.Len, rg.Off, err)
		}
	}
}

// TestPrefetchFallback: a server that answers a multi-range request with
// its first range only, or with the whole object, gets single requests
// for the rest, and for every later Prefetch.
func TestPrefetchFallback(t *testing.T) {
	data := pattern(4<<20, 32)
	o := &object{}
	o.set(data, `"v"`, tZero)
	for name, multi := range map[string]http.HandlerFunc{
		"first range only": func(w http.ResponseWriter, req *http.Request) {
			a, b, _ := parseRangeHeader(strings.Split(req.Header.Get("Range"), ",")[0])
			w.Header().Set("ETag", `"v"`)
			writePartial(w, data, a, b)
		},
		"whole object": func(w http.ResponseWriter, req *http.Request) {
			w.Header().Set("ETag", `"v"`)
			w.Write(data[:1000]) // the start of it: the client must not read on
		},
		"bad parts": func(w http.ResponseWriter, req *http.Request) {
			w.Header().Set("Content-Type", "multipart/byteranges; boundary=XX")
			w.Header().Set("ETag", `"v"`)
			w.WriteHeader(206)
			w.Write([]byte("--XX\r\nContent-Range: bytes 0-3/4194304\r\n\r\nxxxx\r\n--XX--\r\n"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			var multis atomic.Int64
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if strings.Contains(req.Header.Get("Range"), ",") {
					multis.Add(1)
					multi(w, req)
					return
				}
				o.ServeHTTP(w, req)
			}))
			r := mustOpen(t, srv.URL, nil)
			rs := scattered(10, int64(len(data)))
			if err := r.Prefetch(t.Context(), rs); err != nil {
				t.Fatal(err)
			}
			before := r.Stats().Requests
			readRanges(t, r, rs, data)
			if r.Stats().Requests != before {
				t.Errorf("reads after Prefetch made %d requests", r.Stats().Requests-before)
			}
			// A server that sent one range or the whole object is
			// asked for one range per request from then on.
			if learn := name != "bad parts"; r.MultiRange() == learn {
				t.Errorf("MultiRange is %t", r.MultiRange())
			}
			multiBefore := multis.Load()
			more := scattered(7, int64(len(data)-100_000))
			if err := r.Prefetch(t.Context(), more); err != nil {
				t.Fatal(err)
			}
			if n := multis.Load() - multiBefore; name != "bad parts" && n != 0 {
				t.Errorf("%d more multi-range requests", n)
			}
			readRanges(t, r, more, data)
		})
	}
}

// TestPrefetchChanged: a replaced object fails Prefetch with KindChanged.
func TestPrefetchChanged(t *testing.T) {
	data := pattern(4<<20, 33)
	o, srv := serveObject(t, data)
	r := mustOpen(t, srv.URL, nil)
	o.set(pattern(4<<20, 34), `"v2"`, tZero)
	checkError(t, r.Prefetch(t.Context(), scattered(5, int64(len(data)))), KindChanged, ErrChanged, http.StatusPreconditionFailed)
}

// TestPrefetchSingleRange: with SingleRange no multi-range request is
// sent; ranges a few KiB apart are merged, the others fetched
// concurrently, up to PrefetchWidth at a time, so that 64 ranges from a
// server that takes 20 ms per answer take a few round trips, not 64.
func TestPrefetchSingleRange(t *testing.T) {
	data := pattern(8<<20, 35)
	o := &object{}
	o.set(data, `"v"`, tZero)
	var inflight, peak, multi atomic.Int64
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.Contains(req.Header.Get("Range"), ",") {
			multi.Add(1)
		}
		n := inflight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		inflight.Add(-1)
		o.ServeHTTP(w, req)
	}))
	r := mustOpen(t, srv.URL, &Options{SingleRange: true, PrefetchWidth: 8})
	if r.MultiRange() {
		t.Fatal("MultiRange with SingleRange set")
	}
	rs := scattered(64, int64(len(data)))
	// Each range's neighbour 2 KiB on: merged with it, not a request more.
	for _, rg := range rs[:64] {
		rs = append(rs, Range{Off: rg.Off + rg.Len + 2<<10, Len: 32})
	}
	before := r.Stats().Requests
	start := time.Now()
	if err := r.Prefetch(t.Context(), rs); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if n := r.Stats().Requests - before; n != 64 {
		t.Errorf("Prefetch of 64 pairs of close ranges took %d requests, want 64", n)
	}
	if multi.Load() != 0 {
		t.Errorf("%d multi-range requests sent", multi.Load())
	}
	if p := peak.Load(); p < 2 || p > 8 {
		t.Errorf("at most %d requests ran at once, want 2 to 8", p)
	}
	if took > 64*20*time.Millisecond/2 {
		t.Errorf("Prefetch took %v: its requests did not run concurrently", took)
	}
	mid := r.Stats().Requests
	readRanges(t, r, rs, data)
	if r.Stats().Requests != mid {
		t.Errorf("reads after Prefetch made %d requests", r.Stats().Requests-mid)
	}
}

// TestMergeRanges: overlapping and close ranges merge, up to the limit;
// a range longer than the limit stays whole.
func TestMergeRanges(t *testing.T) {
	got := mergeRanges([]Range{{100, 10}, {0, 10}, {12, 4}, {105, 2}, {1000, 600}, {1601, 10}, {1620, 10}}, 10, 500)
	want := []Range{{0, 16}, {100, 10}, {1000, 600}, {1601, 29}}
	if !slices.Equal(got, want) {
		t.Errorf("mergeRanges = %v, want %v", got, want)
	}
}
