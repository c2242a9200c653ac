package pte

import (
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/httprange"
)

// TestPrefetch: 64 engines' heads and last bytes (128 ranges, each last
// byte a padding away from the next head) merge into at most 65 ranges
// and cost two requests at most; reads inside them then cost none. A
// local file ignores the hint.
func TestPrefetch(t *testing.T) {
	srv, paths := serveTestPrograms(t)
	f, err := OpenURL(t.Context(), srv.URL+"/"+filepath.Base(paths[0]), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := f.ReaderAt().(*httprange.Reader)
	var rs []Range
	var pls []*Payload
	for j := range 64 {
		pl, err := f.DelegateData(0, j)
		if err != nil {
			t.Fatal(err)
		}
		pls = append(pls, pl)
		rs = append(rs, Range{pl.FileOffset, 32}, Range{pl.FileOffset + pl.Size() - 1, 1})
	}
	rs = append(rs, Range{-1, 5}, Range{f.Size, 5}, Range{0, 0}) // ignored
	before := r.Stats().Requests
	if err := f.Prefetch(t.Context(), rs); err != nil {
		t.Fatal(err)
	}
	mid := r.Stats().Requests
	if n := mid - before; n < 1 || n > 2 {
		t.Errorf("Prefetch of 128 ranges took %d requests, want 1 or 2", n)
	}
	b := make([]byte, 32)
	for _, pl := range pls {
		if _, err := pl.ReadAt(b, 0); err != nil || string(b[:4]) != "TR01" {
			t.Fatalf("head at %d: %q, %v", pl.FileOffset, b[:4], err)
		}
		if _, err := pl.ReadAt(b[:1], pl.Size()-1); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.Stats().Requests; n != mid {
		t.Errorf("reads after Prefetch took %d requests", n-mid)
	}

	lf, err := Open(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := lf.Prefetch(t.Context(), rs); err != nil {
		t.Errorf("local Prefetch: %v", err)
	}
}
