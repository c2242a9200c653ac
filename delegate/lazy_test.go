package delegate

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

const engine4GiB = 4 << 30

// sparseBlob writes a blob with a 4 GiB engine as a sparse file: the header
// and metadata are written and the file is extended over the engine.
func sparseBlob(tb testing.TB) (*os.File, int64) {
	tb.Helper()
	m := &Metadata{
		IOBindings:     []Binding{{Name: "tokens", DType: "int64", Shape: []int64{1, -1}, IsInput: true}, {Name: "logits", DType: "float16"}},
		TargetPlatform: "linux_x86_64",
	}
	prefix, err := (*EncodeOptions)(nil).Prefix(m, engine4GiB)
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
		if os.Getenv("CI") != "" {
			tb.Fatalf("cannot create a sparse 4 GiB file: %v", err)
		}
		tb.Skipf("cannot create a sparse 4 GiB file here: %v", err)
	}
	return f, size
}

// TestLazy4GiBEngine: inspecting a blob with a 4 GiB engine reads only its
// header and metadata.
func TestLazy4GiBEngine(t *testing.T) {
	f, size := sparseBlob(t)
	c := testkit.NewCountingReaderAt(f)
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
	want := int64(HeaderSize) + 1 + int64(rep.Blob.Header.MetadataSize)
	if got := c.Bytes(); got != want {
		t.Errorf("Check read %d bytes, want %d (header, last byte, metadata)", got, want)
	}
	// The engine is reachable at its offset.
	var b [1]byte
	if _, err := rep.Blob.Engine().ReadAt(b[:], engine4GiB-1); err != nil {
		t.Errorf("reading the last engine byte: %v", err)
	}
}

func BenchmarkDecodeHeader4GiB(b *testing.B) {
	f, size := sparseBlob(b)
	c := testkit.NewCountingReaderAt(f)
	for b.Loop() {
		if _, err := Decode(c, size); err != nil {
			b.Fatal(err)
		}
	}
	perOp := float64(c.Bytes()) / float64(b.N)
	b.ReportMetric(perOp, "bytes-read/op")
	if perOp >= 64<<10 {
		b.Fatalf("Decode read %.0f bytes per call, want < 64 KiB", perOp)
	}
}

// craftedBlob returns a sparse file holding a blob header that claims
// metadataSize bytes of metadata right after the header and an empty
// engine after it, and the file's size. Only the header is written.
func craftedBlob(t *testing.T, metadataSize uint32) (*os.File, int64) {
	t.Helper()
	hdr := make([]byte, HeaderSize)
	copy(hdr, "TR01")
	engineOff := align16(HeaderSize + uint64(metadataSize))
	putLE32(hdr[offMetadataOffset:], HeaderSize)
	putLE32(hdr[offMetadataSize:], metadataSize)
	putLE32(hdr[offEngineOffset:], uint32(engineOff))
	f, err := os.Create(filepath.Join(t.TempDir(), "crafted.blob"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Write(hdr); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(engineOff)); err != nil {
		t.Fatal(err)
	}
	return f, int64(engineOff)
}

// TestMetadataTooLarge: a blob whose header claims 1 GiB of metadata is
// refused without reading or allocating it, by every reader.
func TestMetadataTooLarge(t *testing.T) {
	f, size := craftedBlob(t, 1<<30)
	c := testkit.NewCountingReaderAt(f)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Decode(c, size)
	var be *BlobError
	if !errors.As(err, &be) || be.Field != "metadata_size" || be.Off != offMetadataSize {
		t.Fatalf("Decode: %v, want a *BlobError for metadata_size at %d", err, offMetadataSize)
	}
	v, err := ReadDeployed(c, size)
	if err != nil {
		t.Fatal(err)
	}
	if v.OK || !v.MetadataUnread || !strings.Contains(v.Reason, "larger than") || v.MetadataSize != 1<<30 {
		t.Errorf("ReadDeployed = %+v, want an unread view", v)
	}
	rep, err := Check(c, size)
	if err != nil {
		t.Fatal(err)
	}
	if !hasHazard(rep.Hazards, HazardMetadataUnread) {
		t.Errorf("Check hazards %v, want %s", rep.Hazards, HazardMetadataUnread)
	}
	runtime.ReadMemStats(&after)
	if got := c.Bytes(); got > 4*(HeaderSize+1) {
		t.Errorf("read %d bytes of a blob claiming 1 GiB of metadata", got)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("allocated %d bytes for a blob claiming 1 GiB of metadata", grew)
	}
	// At the limit the metadata is read (and here is not JSON).
	f, size = craftedBlob(t, MaxMetadataSize)
	if _, err := Decode(f, size); !errors.As(err, &be) || be.Field != "metadata" {
		t.Errorf("Decode at the limit: %v, want a JSON error", err)
	}
}

// TestLargeMetadataExact: metadata of several MiB is read byte for byte.
func TestLargeMetadataExact(t *testing.T) {
	sm := make([]byte, 3<<20+7)
	for i := range sm {
		sm[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[i*7%64]
	}
	m := &Metadata{IOBindings: []Binding{{Name: "x", IsInput: true, Shape: []int64{}}}, AliasedIO: []AliasedIO{}, SerializedMetadata: string(sm)}
	var buf bytes.Buffer
	if _, err := Encode(&buf, m, strings.NewReader("ENG"), 3); err != nil {
		t.Fatal(err)
	}
	b, err := Decode(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&b.Metadata, m) || !bytes.Equal(b.MetadataRaw, buf.Bytes()[32:32+len(b.MetadataRaw)]) {
		t.Error("large metadata did not survive the read")
	}
}

// TestShortReader: a reader holding fewer bytes than the size given is a
// read error, not a blob whose engine lies past the end of its bytes.
func TestShortReader(t *testing.T) {
	var buf bytes.Buffer
	if _, err := Encode(&buf, &Metadata{IOBindings: []Binding{{Name: "x", IsInput: true}}}, strings.NewReader("E"), 1); err != nil {
		t.Fatal(err)
	}
	r := bytes.NewReader(buf.Bytes())
	for _, size := range []int64{int64(buf.Len()) + 1, 1 << 62} {
		if _, err := Decode(r, size); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("Decode(size %d) of %d bytes: %v", size, buf.Len(), err)
		}
		if _, err := ReadDeployed(r, size); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("ReadDeployed(size %d): %v", size, err)
		}
		if _, err := Check(r, size); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("Check(size %d): %v", size, err)
		}
	}
}

// TestZeroBlob: a Blob not made by Decode does not panic.
func TestZeroBlob(t *testing.T) {
	var b Blob
	b.Header.EngineSize = 10
	if _, err := io.ReadAll(b.Engine()); err == nil {
		t.Error("reading the engine of a zero Blob succeeded")
	}
	b.Header.EngineSize = 1 << 63
	if n := b.TrailingBytes(); n != 0 {
		t.Errorf("TrailingBytes = %d", n)
	}
	if _, err := b.Engine().Read(make([]byte, 4)); err == nil {
		t.Error("reading a huge engine of a zero Blob succeeded")
	}
}

func hasHazard(hz []Hazard, k HazardKind) bool {
	for _, h := range hz {
		if h.Kind == k {
			return true
		}
	}
	return false
}
