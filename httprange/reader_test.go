package httprange

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestReadAtMatchesContent reads random ranges, small and large, and
// compares them with the object.
func TestReadAtMatchesContent(t *testing.T) {
	data := pattern(3<<20+123, 1)
	_, srv := serveObject(t, data)
	r := mustOpen(t, srv.URL+"/obj", fastOpts())
	if r.Size() != int64(len(data)) {
		t.Fatalf("Size %d, want %d", r.Size(), len(data))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		n := rng.IntN(64 << 10)
		if i%10 == 0 {
			n = rng.IntN(2 << 20)
		}
		off := rng.Int64N(int64(len(data)))
		p := make([]byte, n)
		k, err := r.ReadAt(p, off)
		want := data[off:min(off+int64(n), int64(len(data)))]
		if k != len(want) || !bytes.Equal(p[:k], want) {
			t.Fatalf("ReadAt(%d, %d): %d bytes, err %v; wrong bytes", n, off, k, err)
		}
		if wantErr := error(nil); len(want) < n {
			if err != io.EOF {
				t.Fatalf("ReadAt(%d, %d) past the end: err %v, want io.EOF", n, off, err)
			}
		} else if err != wantErr {
			t.Fatalf("ReadAt(%d, %d): %v", n, off, err)
		}
	}
	if k, err := r.ReadAt(make([]byte, 1), int64(len(data))); k != 0 || err != io.EOF {
		t.Errorf("ReadAt at the end: %d, %v; want 0, io.EOF", k, err)
	}
	if _, err := r.ReadAt(make([]byte, 1), -1); err == nil {
		t.Error("ReadAt at -1 succeeded")
	}
}

// TestEmptyReadAtEnd: an empty read inside the object gives 0, nil, and at
// or past its end 0, io.EOF, as io.SectionReader does (both allowed by the
// io.ReaderAt contract). FuzzTransport's oracle used to insist on nil past
// the end (its crasher 85dab782ec048153).
func TestEmptyReadAtEnd(t *testing.T) {
	data := pattern(10<<10, 3)
	_, srv := serveObject(t, data)
	r := mustOpen(t, srv.URL+"/obj", fastOpts())
	sr := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
	for _, off := range []int64{0, int64(len(data)) - 1, int64(len(data)), int64(len(data)) + 4} {
		k, err := r.ReadAt(nil, off)
		wk, werr := sr.ReadAt(nil, off)
		if k != wk || err != werr {
			t.Errorf("ReadAt(nil, %d) = %d, %v; io.SectionReader gives %d, %v", off, k, err, wk, werr)
		}
	}
}

// TestSmallReadsShareRequests: the first request brings the first block,
// so small reads inside it make no further request.
func TestSmallReadsShareRequests(t *testing.T) {
	data := pattern(1<<20, 2)
	_, srv := serveObject(t, data)
	r := mustOpen(t, srv.URL, nil)
	for _, rg := range [][2]int64{{0, 8}, {8, 32}, {0, 64}, {100, 4000}, {0, DefaultBlockSize}} {
		p := make([]byte, rg[1])
		if _, err := r.ReadAt(p, rg[0]); err != nil || !bytes.Equal(p, data[rg[0]:rg[0]+rg[1]]) {
			t.Fatalf("ReadAt(%d, %d): %v", rg[1], rg[0], err)
		}
	}
	if s := r.Stats(); s.Requests != 1 || s.Bytes != DefaultBlockSize {
		t.Errorf("stats %+v, want 1 request of %d bytes", s, DefaultBlockSize)
	}
	// A read in another block costs one more request, then hits the cache.
	p := make([]byte, 10)
	for range 3 {
		if _, err := r.ReadAt(p, 500_000); err != nil || !bytes.Equal(p, data[500_000:500_010]) {
			t.Fatal(err)
		}
	}
	if s := r.Stats(); s.Requests != 2 {
		t.Errorf("%d requests, want 2", s.Requests)
	}
}

// TestCacheIsBounded: the cache never holds more than CacheBlocks blocks.
func TestCacheIsBounded(t *testing.T) {
	data := pattern(1<<20, 3)
	_, srv := serveObject(t, data)
	r := mustOpen(t, srv.URL, &Options{BlockSize: 1024, CacheBlocks: 3})
	p := make([]byte, 10)
	for i := range 50 {
		off := int64(i) * 5000
		if _, err := r.ReadAt(p, off); err != nil || !bytes.Equal(p, data[off:off+10]) {
			t.Fatal(err)
		}
		r.mu.Lock()
		n, m := r.lru.Len(), len(r.blocks)
		r.mu.Unlock()
		if n > 3 || m != n {
			t.Fatalf("cache holds %d blocks (%d in the map), limit 3", n, m)
		}
	}
}

// TestLargeReadIsParallel: a large read is split into Parallelism
// requests and bypasses the cache.
func TestLargeReadIsParallel(t *testing.T) {
	data := pattern(8<<20, 4)
	_, srv := serveObject(t, data)
	r := mustOpen(t, srv.URL, &Options{Parallelism: 4, ReadAhead: -1})
	p := make([]byte, 4<<20)
	if _, err := r.ReadAt(p, 1<<20); err != nil || !bytes.Equal(p, data[1<<20:5<<20]) {
		t.Fatal(err)
	}
	if s := r.Stats(); s.Requests != 1+4 {
		t.Errorf("%d requests, want 1 + 4", s.Requests)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lru.Len() != 1 {
		t.Errorf("large read cached %d blocks", r.lru.Len()-1)
	}
}

// TestSequentialStreamReadsAhead: copying a range with small reads costs
// few requests, thanks to the read-ahead window.
func TestSequentialStreamReadsAhead(t *testing.T) {
	data := pattern(16<<20, 5)
	_, srv := serveObject(t, data)
	r := mustOpen(t, srv.URL, nil)
	var out bytes.Buffer
	if _, err := io.CopyBuffer(&out, io.NewSectionReader(r, 1000, int64(len(data))-1000), make([]byte, 32<<10)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), data[1000:]) {
		t.Fatal("streamed bytes differ")
	}
	t.Logf("stats %+v", r.Stats())
	// 16 MiB in windows doubling to 8 MiB, each split in up to 4.
	if s := r.Stats(); s.Requests > 30 || s.Bytes > int64(len(data))+DefaultBlockSize*4 {
		t.Errorf("stats %+v: too many requests or bytes for a 16 MiB stream", s)
	}
}

// TestConcurrentReadAt reads from many goroutines at once (run with -race).
func TestConcurrentReadAt(t *testing.T) {
	data := pattern(2<<20, 6)
	_, srv := serveObject(t, data)
	r := mustOpen(t, srv.URL, &Options{BlockSize: 4096, CacheBlocks: 4})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for range 40 {
				off := rng.Int64N(int64(len(data)) - 1)
				n := min(rng.Int64N(300<<10), int64(len(data))-off)
				p := make([]byte, n)
				if _, err := r.ReadAt(p, off); err != nil || !bytes.Equal(p, data[off:off+n]) {
					t.Errorf("ReadAt(%d, %d): %v or wrong bytes", n, off, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestEmptyObject: an empty object (416 with "bytes */0") opens with size 0.
func TestEmptyObject(t *testing.T) {
	_, srv := serveObject(t, nil)
	r := mustOpen(t, srv.URL, nil)
	if r.Size() != 0 {
		t.Fatalf("size %d", r.Size())
	}
	if k, err := r.ReadAt(make([]byte, 1), 0); k != 0 || err != io.EOF {
		t.Errorf("ReadAt: %d, %v", k, err)
	}
}

// TestClose: reads after Close fail with ErrClosed.
func TestClose(t *testing.T) {
	_, srv := serveObject(t, pattern(100<<10, 7))
	r, err := Open(t.Context(), srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	_, err = r.ReadAt(make([]byte, 10), 50<<10)
	if !errors.Is(err, ErrClosed) || !errors.Is(err, ErrCanceled) {
		t.Fatalf("after Close: %v", err)
	}
	if r.Close() != nil {
		t.Error("second Close failed")
	}
}

// TestReadAtContext: a per-read context cancels that read only.
func TestReadAtContext(t *testing.T) {
	data := pattern(200<<10, 8)
	_, srv := serveObject(t, data)
	r := mustOpen(t, srv.URL, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := r.ReadAtContext(ctx, make([]byte, 10), 100<<10); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled read: %v", err)
	}
	p := make([]byte, 10)
	if _, err := r.ReadAtContext(t.Context(), p, 100<<10); err != nil || !bytes.Equal(p, data[100<<10:100<<10+10]) {
		t.Fatalf("read after a canceled one: %v", err)
	}
}
