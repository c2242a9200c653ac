package delegate

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// metaBlob builds a TR01 blob holding md as its metadata and a 4-byte
// engine.
func metaBlob(md []byte) []byte {
	h := Header{Magic: MagicTR01, MetadataOffset: HeaderSize, MetadataSize: uint32(len(md)),
		EngineOffset: uint32(align16(HeaderSize + uint64(len(md)))), EngineSize: 4, Reserved: [8]byte{1}}
	b := h.appendTo(nil)
	b = append(b, md...)
	b = append(b, make([]byte, int(h.EngineOffset)-len(b))...)
	return append(b, "ENGN"...)
}

// adversarialMetadata returns metadata of at most size bytes: prefix,
// then elem (which ends in a comma) repeated as often as fits, without
// the last comma, then suffix.
func adversarialMetadata(prefix, elem, suffix string, size int) []byte {
	b := make([]byte, 0, size)
	b = append(b, prefix...)
	for len(b)+len(elem)+len(suffix) <= size+1 {
		b = append(b, elem...)
	}
	return append(b[:len(b)-1], suffix...)
}

var adversarial = []struct {
	name                 string
	prefix, elem, suffix string
}{
	{"shape", `{"io_bindings":[{"name":"a","is_input":true,"shape":[`, `0,`, `]}]}`},
	{"empty objects", `{"io_bindings":[`, `{},`, `]}`},
	{"ignored member", `{"x":[`, `[],`, `]}`},
	{"bindings", `{"io_bindings":[`, `{"name":"a","is_input":true},`, `]}`},
}

func TestMetadataValueLimit(t *testing.T) {
	// root, io_bindings, the binding, "a", true and shape are six values;
	// then the zeros.
	const prefix = `{"io_bindings":[{"name":"a","is_input":true,"shape":[`
	for _, extra := range []int{0, 1} {
		n := MaxMetadataValues - 6 + extra
		md := []byte(prefix + strings.Repeat("0,", n-1) + `0]}]}`)
		b := metaBlob(md)
		blob, err := Decode(bytes.NewReader(b), int64(len(b)))
		if extra == 0 {
			if err != nil || len(blob.Metadata.IOBindings[0].Shape) != n {
				t.Fatalf("%d values: Decode error %v, want the blob", MaxMetadataValues, err)
			}
			continue
		}
		wantOff := int64(HeaderSize + len(prefix) + 2*(n-1))
		for name, f := range map[string]func() error{
			"Decode":       func() error { _, err := Decode(bytes.NewReader(b), int64(len(b))); return err },
			"DecodePython": func() error { _, err := DecodePython(bytes.NewReader(b), int64(len(b))); return err },
			"Check": func() error {
				rep, err := Check(bytes.NewReader(b), int64(len(b)))
				if err != nil {
					return err
				}
				return rep.PythonErr
			},
		} {
			var be *BlobError
			if err := f(); !errors.As(err, &be) || be.Field != "metadata" || be.Off != wantOff || !strings.Contains(be.Msg, "JSON values") {
				t.Errorf("%s of %d values: error %v, want a *BlobError for metadata at byte %d", name, MaxMetadataValues+1, err, wantOff)
			}
		}
	}
}

// TestAdversarialMetadataMemory checks that metadata of MaxMetadataSize
// made of tiny values is read (or refused) in bounded memory.
func TestAdversarialMetadataMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 64 MiB blobs")
	}
	const limit = 1 << 30
	for _, c := range adversarial {
		b := metaBlob(adversarialMetadata(c.prefix, c.elem, c.suffix, MaxMetadataSize))
		for name, f := range map[string]func(){
			"Decode":       func() { Decode(bytes.NewReader(b), int64(len(b))) },
			"DecodePython": func() { DecodePython(bytes.NewReader(b), int64(len(b))) },
			"Check":        func() { Check(bytes.NewReader(b), int64(len(b))) },
		} {
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			f()
			runtime.ReadMemStats(&m1)
			if got := m1.TotalAlloc - m0.TotalAlloc; got > limit {
				t.Errorf("%s of %s metadata allocated %d MiB, want at most %d", name, c.name, got>>20, limit>>20)
			}
		}
	}
}

func BenchmarkAdversarialMetadata(b *testing.B) {
	for _, c := range adversarial {
		blob := metaBlob(adversarialMetadata(c.prefix, c.elem, c.suffix, MaxMetadataSize))
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(blob)))
			for b.Loop() {
				Check(bytes.NewReader(blob), int64(len(blob)))
			}
		})
	}
}
