package pte

import (
	"bytes"
	"io"
	"testing"
)

// wrSliceReaderAt is a ReaderAt whose dynamic value is a slice: interface
// values holding it (or a struct holding it) panic when compared with ==.
type wrSliceReaderAt []byte

func (s wrSliceReaderAt) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(s).ReadAt(p, off)
}

// wrWrappedReaderAt is a comparable struct type (its field is an interface)
// whose values may still be uncomparable at run time.
type wrWrappedReaderAt struct{ r io.ReaderAt }

func (w wrWrappedReaderAt) ReadAt(p []byte, off int64) (int, error) { return w.r.ReadAt(p, off) }

// TestWriteDedupUncomparableSources: Dedup must not compare sources with ==
// when their dynamic types cannot be compared; it compares their bytes.
func TestWriteDedupUncomparableSources(t *testing.T) {
	same := bytes.Repeat([]byte("E"), 500)
	other := bytes.Repeat([]byte("F"), 500)
	wrap := func(b []byte) *io.SectionReader {
		return io.NewSectionReader(wrWrappedReaderAt{wrSliceReaderAt(b)}, 0, int64(len(b)))
	}
	for _, tc := range []struct {
		name      string
		srcs      []*io.SectionReader
		wantIndex []int
	}{
		// A pair is compared directly, three or more are hashed.
		{"pair equal", []*io.SectionReader{wrSection(nil), wrap(same), wrap(bytes.Clone(same))}, []int{0, 1, 1}},
		{"pair different", []*io.SectionReader{wrSection(nil), wrap(same), wrap(other)}, []int{0, 1, 2}},
		{"group", []*io.SectionReader{wrSection(nil), wrap(same), wrap(other), wrap(same)}, []int{0, 1, 2, 1}},
		{"bare slices", []*io.SectionReader{wrSection(nil),
			io.NewSectionReader(wrSliceReaderAt(same), 0, 500), io.NewSectionReader(wrSliceReaderAt(same), 0, 500)}, []int{0, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := wrProgram(len(tc.srcs) - 1)
			var buf bytes.Buffer
			info, err := Write(&buf, p, tc.srcs, &WriteOptions{Dedup: true})
			if err != nil {
				t.Fatal(err)
			}
			if d := wrDiff(info.SegmentIndex, tc.wantIndex); d != "" {
				t.Errorf("SegmentIndex = %v, want %v", info.SegmentIndex, tc.wantIndex)
			}
			f := wrOpenBytes(t, buf.Bytes())
			for di := range p.Plan(0).Delegates {
				b := make([]byte, 500)
				tc.srcs[di+1].ReadAt(b, 0)
				if got, err := wrData(f.DelegateData(0, di)); err != nil || !bytes.Equal(got, b) {
					t.Errorf("delegate %d payload differs (%v)", di, err)
				}
			}
		})
	}
}

// TestSameSectionPointers: the identity shortcut recognises the same range
// of the same pointer-shaped source, and small in-memory parts by their
// bytes, and nothing else.
func TestSameSectionPointers(t *testing.T) {
	r := &wrPointerReaderAt{make([]byte, 64)}
	r2 := &wrPointerReaderAt{make([]byte, 64)}
	m := bytes.NewReader(make([]byte, 64))
	m2 := bytes.NewReader(make([]byte, 64))
	m3 := bytes.NewReader(bytes.Repeat([]byte{1}, 64))
	for _, tc := range []struct {
		a, b *io.SectionReader
		want bool
	}{
		{io.NewSectionReader(r, 8, 16), io.NewSectionReader(r, 8, 16), true},
		{io.NewSectionReader(r, 8, 16), io.NewSectionReader(r, 9, 16), false},
		{io.NewSectionReader(r, 8, 16), io.NewSectionReader(r2, 8, 16), false},
		{io.NewSectionReader(m, 8, 16), io.NewSectionReader(m2, 8, 16), true},
		{io.NewSectionReader(m, 8, 16), io.NewSectionReader(m3, 8, 16), false},
		{io.NewSectionReader(wrSliceReaderAt(make([]byte, 64)), 0, 8), io.NewSectionReader(wrSliceReaderAt(make([]byte, 64)), 0, 8), false},
	} {
		// The same range of the same source, as DedupPayloads recognises
		// without reading.
		var ids identities
		ka, oka, _ := ids.key(sourceParts(tc.a, tc.a.Size()), tc.a.Size())
		kb, okb, _ := ids.key(sourceParts(tc.b, tc.b.Size()), tc.b.Size())
		if got := oka && okb && ka == kb; got != tc.want {
			t.Errorf("same section = %v, want %v", got, tc.want)
		}
	}
}

// wrPointerReaderAt is a pointer-shaped reader that is not in memory as
// far as the identity shortcut knows.
type wrPointerReaderAt struct{ b []byte }

func (r *wrPointerReaderAt) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(r.b).ReadAt(p, off)
}
