package delegate

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// metaBlob builds a TR01 blob holding md as its metadata.
func metaBlob(md []byte) []byte { return handBlob("TR01", string(md), []byte("ENGN"), nil) }

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

// TestHazardCap: hazards of one kind past MaxHazardsPerKind are counted
// in one "and N more" hazard of that kind, not listed one by one.
func TestHazardCap(t *testing.T) {
	for _, n := range []int{MaxHazardsPerKind, MaxHazardsPerKind + 1, 5000} {
		var md strings.Builder
		md.WriteString(`{"io_bindings":[{"name":"x","is_input":true},{"name":"y","is_input":false}],"aliased_io":[`)
		for i := range n {
			if i > 0 {
				md.WriteByte(',')
			}
			fmt.Fprintf(&md, `{"output":"o%d","input":"x","kind":"user"}`, i)
		}
		md.WriteString(`]}`)
		b := handBlob("TR02", md.String(), []byte("ENGN"), nil)
		rep, err := Check(bytes.NewReader(b), int64(len(b)))
		if err != nil || !rep.Deployed.OK {
			t.Fatalf("Check: %v, deployed %+v", err, rep.Deployed)
		}
		var got []string
		for _, h := range rep.Hazards {
			if h.Kind == HazardAliasedIOInvalid {
				got = append(got, h.Msg)
			}
		}
		want := min(n, MaxHazardsPerKind)
		if n > MaxHazardsPerKind {
			want++
		}
		if len(got) != want {
			t.Fatalf("%d bad aliases: %d aliased-io-invalid hazards, want %d", n, len(got), want)
		}
		last := got[len(got)-1]
		if more := fmt.Sprintf("and %d more aliased-io-invalid hazards", n-MaxHazardsPerKind); n > MaxHazardsPerKind && last != more {
			t.Errorf("%d bad aliases: last hazard %q, want %q", n, last, more)
		} else if n <= MaxHazardsPerKind && !strings.Contains(last, fmt.Sprintf(`"o%d"`, n-1)) {
			t.Errorf("%d bad aliases: last hazard %q, want one about o%d", n, last, n-1)
		}
	}
}

// TestJSONDepthLimit: nesting of maxJSONDepth levels is read, one more is
// refused at the array that goes past it.
func TestJSONDepthLimit(t *testing.T) {
	for _, depth := range []int{maxJSONDepth, maxJSONDepth + 1} {
		arrays := depth - 1 // the root object is level 1
		b := metaBlob([]byte(`{"x":` + strings.Repeat("[", arrays) + strings.Repeat("]", arrays) + `}`))
		_, err := Decode(bytes.NewReader(b), int64(len(b)))
		if depth <= maxJSONDepth {
			if err != nil {
				t.Errorf("%d levels: %v", depth, err)
			}
			continue
		}
		var be *BlobError
		if !errors.As(err, &be) || be.Off != int64(HeaderSize+5+maxJSONDepth-1) || !strings.Contains(be.Msg, "nesting deeper") {
			t.Errorf("%d levels: %v, want a *BlobError at byte %d", depth, err, HeaderSize+5+maxJSONDepth-1)
		}
	}
}
