package delegate

import (
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

const engine4GiB = 4 << 30

// sparseBlob writes a blob with a 4 GiB engine as a sparse file: the header
// and metadata are written and the file is extended over the engine.
func sparseBlob(tb testing.TB) (*os.File, int64) {
	tb.Helper()
	m := &Metadata{
		IOBindings:     []Binding{{Name: "tokens", DType: "int64", Shape: []int64{1, -1}, IsInput: true}, {Name: "logits", DType: "float16"}},
		TargetPlatform: "linux_x86_64",
	}
	prefix, err := (*EncodeOptions)(nil).prefix(m, engine4GiB)
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "engine4g.blob")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	size := int64(len(prefix)) + engine4GiB
	if _, err := f.Write(prefix); err != nil {
		tb.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		tb.Skipf("cannot create a sparse 4 GiB file here: %v", err)
	}
	return f, size
}

// TestLazy4GiBEngine: inspecting a blob with a 4 GiB engine reads only its
// header and metadata.
func TestLazy4GiBEngine(t *testing.T) {
	f, size := sparseBlob(t)
	c := &countingReaderAt{r: f}
	rep, err := Check(c, size)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Err != nil || !rep.Deployed.OK {
		t.Fatalf("decode: %v; deployed: %+v", rep.Err, rep.Deployed)
	}
	if got := rep.Blob.Engine().Size(); got != engine4GiB {
		t.Errorf("engine size %d, want %d", got, int64(engine4GiB))
	}
	want := int64(HeaderSize) + int64(rep.Blob.Header.MetadataSize)
	if got := c.n.Load(); got != want {
		t.Errorf("Check read %d bytes, want %d (header + metadata)", got, want)
	}
	// The engine is reachable at its offset.
	var b [1]byte
	if _, err := rep.Blob.Engine().ReadAt(b[:], engine4GiB-1); err != nil {
		t.Errorf("reading the last engine byte: %v", err)
	}
}

func BenchmarkDecodeHeader4GiB(b *testing.B) {
	f, size := sparseBlob(b)
	c := &countingReaderAt{r: f}
	for b.Loop() {
		if _, err := Decode(c, size); err != nil {
			b.Fatal(err)
		}
	}
	perOp := float64(c.n.Load()) / float64(b.N)
	b.ReportMetric(perOp, "bytes-read/op")
	if perOp >= 64<<10 {
		b.Fatalf("Decode read %.0f bytes per call, want < 64 KiB", perOp)
	}
}
