package delegate

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/pte"
)

// The blob reader is a pte.Composite, so pte.Write copies its engine range
// by itself (with copy_file_range when the engine is a file).
var _ pte.Composite = (*blobReaderAt)(nil)

// TestBlobReaderParts checks that the parts of a blob reader hold exactly
// the blob's bytes, and that the engine part reads straight from the engine
// reader given (so an *os.File stays visible to the writer).
func TestBlobReaderParts(t *testing.T) {
	m := &Metadata{IOBindings: []Binding{{Name: "in", IsInput: true}, {Name: "out"}}, DeviceID: 1}
	engine := bytes.Repeat([]byte("engine bytes. "), 5000)
	path := filepath.Join(t.TempDir(), "model.engine")
	if err := os.WriteFile(path, engine, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want bytes.Buffer
	if _, err := Encode(&want, m, f, int64(len(engine))); err != nil {
		t.Fatal(err)
	}

	sr, err := NewBlobReader(m, f, int64(len(engine)))
	if err != nil {
		t.Fatal(err)
	}
	ra, off, size := sr.Outer()
	c, ok := ra.(pte.Composite)
	if !ok || off != 0 || size != int64(want.Len()) {
		t.Fatalf("NewBlobReader: outer reader %T at %d+%d is not a whole-blob pte.Composite", ra, off, size)
	}
	parts := c.SegmentParts()
	if len(parts) != 2 {
		t.Fatalf("%d parts, want 2 (prefix, engine)", len(parts))
	}
	var got []byte
	for i, p := range parts {
		b, err := io.ReadAll(io.NewSectionReader(p, 0, p.Size()))
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		got = append(got, b...)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("parts concatenate to %d bytes, want the %d-byte blob", len(got), want.Len())
	}
	if er, eoff, esize := parts[1].Outer(); er != io.ReaderAt(f) || eoff != 0 || esize != int64(len(engine)) {
		t.Errorf("engine part reads %T at %d+%d, want the engine file at 0+%d", er, eoff, esize, len(engine))
	}

	// Without engine bytes the blob is its prefix alone.
	sr, err = NewBlobReader(m, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ra, _, size = sr.Outer()
	if parts := ra.(pte.Composite).SegmentParts(); len(parts) != 1 || parts[0].Size() != size {
		t.Errorf("empty engine: %d parts, want only the %d-byte prefix", len(parts), size)
	}
}

// TestPrefixIsTheBlobBeforeItsEngine: Prefix is the bytes Encode writes
// before the engine, in both encoding modes and with aliased outputs
// (TR02), and refuses what Encode refuses.
func TestPrefixIsTheBlobBeforeItsEngine(t *testing.T) {
	engine := bytes.Repeat([]byte{7}, 1000)
	for _, m := range []*Metadata{
		{IOBindings: []Binding{{Name: "in", IsInput: true}, {Name: "out"}}, DeviceID: 1},
		{IOBindings: []Binding{{Name: "x", DType: "float16", Shape: []int64{1, 8}, IsInput: true}, {Name: "y", DType: "float16", Shape: []int64{1, 8}}},
			AliasedIO: []AliasedIO{{Output: "y", Input: "x", Kind: "user"}}},
	} {
		for _, o := range []*EncodeOptions{nil, {UpstreamCompatible: true}} {
			var want bytes.Buffer
			if _, err := o.Encode(&want, m, bytes.NewReader(engine), int64(len(engine))); err != nil {
				t.Fatal(err)
			}
			prefix, err := o.Prefix(m, int64(len(engine)))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(prefix, want.Bytes()[:want.Len()-len(engine)]) {
				t.Errorf("options %+v, metadata %+v: Prefix is not the blob's first %d bytes", o, m, want.Len()-len(engine))
			}
		}
	}
	bad := &Metadata{IOBindings: []Binding{{Name: "in\xff", IsInput: true}}}
	if _, err := (*EncodeOptions)(nil).Prefix(bad, 10); err == nil {
		t.Error("Prefix accepted a binding name that is not UTF-8")
	}
	if _, err := (*EncodeOptions)(nil).Prefix(&Metadata{}, -1); err == nil {
		t.Error("Prefix accepted a negative engine size")
	}
}
