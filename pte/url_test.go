package pte

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/httprange"
	"github.com/ptekit/ptekit/internal/testkit"
)

// urlSizes are the total engine bytes of the 64-engine programs opened
// over HTTP: 2 MiB and 2 GiB (sparse).
var urlSizes = []uint64{2 << 20, 2 << 30}

// serveTestPrograms writes rdTestProgram's 64-engine program of each size
// in urlSizes into a directory served over loopback HTTP by
// http.FileServer (http.ServeContent), and returns the server and the
// programs' paths.
func serveTestPrograms(tb testing.TB) (*httptest.Server, []string) {
	dir := tb.TempDir()
	var paths []string
	for _, total := range urlSizes {
		p := filepath.Join(dir, fmt.Sprintf("p%d.pte", total))
		rdWriteTestProgram(tb, p, 64, total/64)
		paths = append(paths, p)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	tb.Cleanup(srv.Close)
	return srv, paths
}

// listProgram lists every method's delegates and compile specs and
// resolves each payload handle without reading it, as a listing view
// does; it returns the number of compile specs.
func listProgram(tb testing.TB, f *File) int {
	specs := 0
	for i, ep := range f.Program.Plans() {
		for j, d := range ep.Delegates {
			specs += len(d.CompileSpecs)
			if _, err := f.DelegateData(i, j); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return specs
}

// TestOpenURLReadsLittle: opening and listing a 64-engine program over
// HTTP takes at most 3 requests and under 64 KiB, and as many requests for
// 2 GiB of engines as for 2 MiB.
func TestOpenURLReadsLittle(t *testing.T) {
	srv, paths := serveTestPrograms(t)
	var requests []int64
	for i, p := range paths {
		f, err := OpenURL(t.Context(), srv.URL+"/"+filepath.Base(p), nil)
		if err != nil {
			t.Fatal(err)
		}
		if f.Size <= int64(urlSizes[i]) {
			t.Fatalf("%s: size %d, want over %d", p, f.Size, urlSizes[i])
		}
		if n := listProgram(t, f); n != 64 {
			t.Fatalf("%d compile specs, want 64", n)
		}
		st := f.ReaderAt().(*httprange.Reader).Stats()
		t.Logf("%d-byte program: %+v", f.Size, st)
		if st.Requests > 3 || st.Bytes >= 64<<10 {
			t.Errorf("%d-byte program: open and list took %d requests and %d bytes, want at most 3 and under 64 KiB", f.Size, st.Requests, st.Bytes)
		}
		requests = append(requests, st.Requests)
		// A view that also reads every engine's header prefetches them
		// first: one more request for all 64.
		r := f.ReaderAt().(*httprange.Reader)
		var heads []httprange.Range
		var pls []*Payload
		for j := range 64 {
			pl, err := f.DelegateData(0, j)
			if err != nil {
				t.Fatal(err)
			}
			heads = append(heads, httprange.Range{Off: pl.FileOffset, Len: 64})
			pls = append(pls, pl)
		}
		if err := r.Prefetch(t.Context(), heads); err != nil {
			t.Fatal(err)
		}
		magic := make([]byte, 4)
		for _, pl := range pls {
			if _, err := pl.ReadAt(magic, 0); err != nil || string(magic) != "TR01" {
				t.Fatalf("engine at %d starts %q, err %v", pl.FileOffset, magic, err)
			}
		}
		if st := r.Stats(); st.Requests != requests[i]+1 || st.Bytes >= 64<<10 {
			t.Errorf("%d-byte program: open, list and 64 engine headers took %d requests and %d bytes, want %d and under 64 KiB", f.Size, st.Requests, st.Bytes, requests[i]+1)
		}
		pl := pls[63]
		f.Close()
		if _, err := pl.ReadAt(magic, 100); !errors.Is(err, httprange.ErrClosed) {
			t.Errorf("read after Close: %v, want ErrClosed", err)
		}
	}
	if requests[0] != requests[1] {
		t.Errorf("open and list took %d requests for 2 MiB, %d for 2 GiB", requests[0], requests[1])
	}
}

// TestOpenURLErrors: transport errors are *httprange.Error, a damaged
// program a *FormatError, and neither shows the URL's query.
func TestOpenURLErrors(t *testing.T) {
	dir := t.TempDir()
	head, size, _ := rdTestProgram(1, 100)
	good := make([]byte, size)
	copy(good, head)
	bad := append([]byte{}, good...)
	copy(bad[4:], "XX12")
	for name, data := range map[string][]byte{"good.pte": good, "bad.pte": bad} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()

	_, err := OpenURL(t.Context(), srv.URL+"/missing.pte?sig=s3cr3t", nil)
	if he, ok := errors.AsType[*httprange.Error](err); !ok || he.Kind != httprange.KindNotFound {
		t.Errorf("missing program: %v, want a KindNotFound *httprange.Error", err)
	}
	_, err = OpenURL(t.Context(), srv.URL+"/bad.pte?sig=s3cr3t", &OpenURLOptions{HTTP: httprange.Options{MaxRetries: -1}})
	if fe, ok := errors.AsType[*FormatError](err); !ok || fe.Off != 4 || !strings.HasPrefix(err.Error(), srv.URL+"/bad.pte: ") {
		t.Errorf("damaged program: %v, want a *FormatError at byte 4 after the URL", err)
	}
	if err != nil && strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error shows the query: %v", err)
	}
	// The program options reach NewFileWith.
	f, err := OpenURL(t.Context(), srv.URL+"/good.pte", nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = OpenURL(t.Context(), srv.URL+"/good.pte", &OpenURLOptions{OpenOptions: OpenOptions{MaxProgramSize: 100}})
	if fe, ok := errors.AsType[*FormatError](err); !ok || fe.Code != CodeMemoryAllocation {
		t.Errorf("MaxProgramSize 100: %v, want CodeMemoryAllocation", err)
	}
}

// BenchmarkOpenURL opens and lists the 64-engine programs over loopback
// HTTP and reports requests and bytes per open, side by side with the
// preads and bytes of the same open of the local file.
func BenchmarkOpenURL(b *testing.B) {
	srv, paths := serveTestPrograms(b)
	for i, p := range paths {
		b.Run(fmt.Sprintf("%dMiB", urlSizes[i]>>20), func(b *testing.B) {
			cr, size := testkit.OpenCounting(b, p)
			benchOpenOnce(b, cr, size)
			var st httprange.Stats
			b.ResetTimer()
			for b.Loop() {
				f, err := OpenURL(b.Context(), srv.URL+"/"+filepath.Base(p), nil)
				if err != nil {
					b.Fatal(err)
				}
				listProgram(b, f)
				s := f.ReaderAt().(*httprange.Reader).Stats()
				st.Requests += s.Requests
				st.Bytes += s.Bytes
				f.Close()
			}
			n := float64(b.N)
			b.ReportMetric(float64(st.Requests)/n, "requests/op")
			b.ReportMetric(float64(st.Bytes)/n, "http-bytes/op")
			b.ReportMetric(float64(cr.Calls()), "local-preads/op")
			b.ReportMetric(float64(cr.Bytes()), "local-bytes/op")
		})
	}
}
