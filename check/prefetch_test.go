package check_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ptekit/ptekit/check"
	"github.com/ptekit/ptekit/export"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// writeVaried writes a program of n engines of 40 KiB whose metadata
// grows from engine to engine when grow (its output binding's name gets
// longer by 100 bytes each), and returns its path.
func writeVaried(t *testing.T, dir string, n int, grow bool) string {
	m := &export.Method{Name: "forward",
		Inputs: []*export.Tensor{{Name: "t0", DType: export.Float32, Shape: []int64{4}}}}
	prev := "t0"
	for i := range n {
		name, binding := fmt.Sprintf("t%d", i+1), "out"
		if grow {
			binding += strings.Repeat("x", 100*i)
		}
		m.Calls = append(m.Calls, &export.EngineCall{
			Engine:  export.EngineReader(testprog.Zeros{}, 40<<10+16*int64(i)),
			Inputs:  []*export.Binding{{Name: "in", Tensor: prev}},
			Outputs: []*export.Binding{{Name: binding, Tensor: name, DType: export.Float32, Shape: []int64{4}}},
		})
		prev = name
	}
	m.Outputs = []*export.Tensor{{Name: prev}}
	path := filepath.Join(dir, fmt.Sprintf("p%d-%t.pte", n, grow))
	if _, err := export.WriteFile(path, &export.Program{Methods: []*export.Method{m}}, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPrefetchSingleRange: from a server read one range per request (an
// object store), Prefetch reads each blob's header and metadata in one
// request, merged with the previous blob's last byte: at most engines + 1
// requests when the metadata is alike (engines when the first blob's
// header came with the open), one more per blob whose metadata outgrows
// what the first blob's suggests; either way every read the verdict
// makes afterwards is answered from what was fetched.
func TestPrefetchSingleRange(t *testing.T) {
	dir := t.TempDir()
	const n = 24
	var alike int64
	for _, grow := range []bool{false, true} {
		path := writeVaried(t, dir, n, grow)
		var requests, multi atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			if strings.Contains(r.Header.Get("Range"), ",") {
				multi.Add(1)
			}
			http.ServeFile(w, r, path)
		}))
		defer srv.Close()
		o := &pte.OpenURLOptions{}
		o.HTTP.SingleRange = true
		f, err := pte.OpenURL(t.Context(), srv.URL+"/p.pte", o)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if f.PrefetchMultiRange() {
			t.Fatal("PrefetchMultiRange from a single-range reader")
		}
		before := requests.Load()
		check.Prefetch(f)
		got := requests.Load() - before
		if !grow {
			alike = got
			if got < n || got > n+1 {
				t.Errorf("alike metadata: Prefetch took %d requests, want %d or %d", got, n, n+1)
			}
		}
		if grow && (got <= alike || got > alike+n) {
			t.Errorf("growing metadata: Prefetch took %d requests, want %d to %d", got, alike+1, alike+n)
		}
		t.Logf("grow=%t: %d requests", grow, got)
		mid := requests.Load()
		local, err := pte.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer local.Close()
		want, err := check.Program(local)
		if err != nil {
			t.Fatal(err)
		}
		have, err := check.Program(f)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(have) != fmt.Sprint(want) {
			t.Errorf("verdict over HTTP %v, local %v", have, want)
		}
		if extra := requests.Load() - mid; extra != 0 {
			t.Errorf("grow=%t: the verdict after Prefetch made %d requests", grow, extra)
		}
		if multi.Load() != 0 {
			t.Errorf("%d multi-range requests", multi.Load())
		}
	}
}
