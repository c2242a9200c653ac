package ptd_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/ptekit/ptekit/ptd"
)

// FuzzRoundTrip re-encodes every input that opens (Open, Contents, a fresh
// Data so Write cannot copy verbatim, Write, Open) and checks that the new
// file has the same version, keys, layouts and segment payloads. An
// older-layout file can only be copied, so it is skipped.
func FuzzRoundTrip(f *testing.F) {
	addSeeds(f)
	f.Add(build(f, entry{"", nil, nil}, entry{"k\x00tail", layout2x2(), sixteen[:3]}))
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := ptd.NewFile(bytes.NewReader(data), int64(len(data)))
		if err != nil || pf.Legacy != nil {
			return
		}
		d, err := pf.Contents()
		if err != nil {
			return // a segment outside the file: nothing to copy
		}
		fresh := &ptd.Data{Version: d.Version, NamedData: d.NamedData, Segments: d.Segments}
		var buf bytes.Buffer
		if _, err := ptd.Write(&buf, fresh); err != nil {
			// Only a named entry pointing past the segments is refused.
			for _, nd := range d.NamedData {
				if nd.SegmentIndex >= uint32(len(d.Segments)) {
					return
				}
			}
			t.Fatalf("re-encoding an opened file: %v", err)
		}
		back, err := ptd.NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatalf("re-encoded file does not open: %v", err)
		}
		checkSame(t, pf, back)
	})
}

// checkSame fails unless b has a's version, named data (keys, segment
// indices, layouts) and segment payloads.
func checkSame(t *testing.T, a, b *ptd.File) {
	t.Helper()
	if a.Version != b.Version {
		t.Fatalf("version %d, was %d", b.Version, a.Version)
	}
	if !slices.Equal(a.Keys(), b.Keys()) || len(a.NamedData) != len(b.NamedData) {
		t.Fatalf("keys %q, were %q", b.Keys(), a.Keys())
	}
	for i, x := range a.NamedData {
		y := b.NamedData[i]
		if x.Key != y.Key || x.KeyAbsent != y.KeyAbsent || x.SegmentIndex != y.SegmentIndex || (x.Layout == nil) != (y.Layout == nil) {
			t.Fatalf("named_data[%d] = %+v, was %+v", i, y, x)
		}
		if x.Layout != nil && (x.Layout.ScalarType != y.Layout.ScalarType || !slices.Equal(x.Layout.Sizes, y.Layout.Sizes) ||
			!slices.Equal(x.Layout.DimOrder, y.Layout.DimOrder)) {
			t.Fatalf("named_data[%d] layout %+v, was %+v", i, *y.Layout, *x.Layout)
		}
	}
	if len(a.Segments) != len(b.Segments) {
		t.Fatalf("%d segments, were %d", len(b.Segments), len(a.Segments))
	}
	for i := range a.Segments {
		pa, err := a.Segment(i)
		if err != nil {
			t.Fatal(err)
		}
		pb, err := b.Segment(i)
		if err != nil {
			t.Fatalf("segment %d of the re-encoded file: %v", i, err)
		}
		x, errA := pa.Data()
		y, errB := pb.Data()
		if errA != nil || errB != nil || !bytes.Equal(x, y) {
			t.Fatalf("segment %d: %d bytes differ from the original %d", i, len(y), len(x))
		}
	}
}

// TestWriteWithoutSegments: a file with no segment (and so no named data)
// reaches its segment_base_offset and opens again. Write used to stop at
// the end of the flatbuffer, short of the aligned segment base the header
// names, so the file it wrote was refused (FuzzRoundTrip's
// 99871d9b1f6f9b75).
func TestWriteWithoutSegments(t *testing.T) {
	for _, d := range []*ptd.Data{{}, {Version: 3}} {
		var buf bytes.Buffer
		info, err := ptd.Write(&buf, d)
		if err != nil {
			t.Fatal(err)
		}
		h := info.Header
		if h.SegmentDataSize != 0 || info.Size != int64(buf.Len()) || uint64(buf.Len()) != h.SegmentBaseOffset || h.SegmentBaseOffset%ptd.SegmentAlignment != 0 {
			t.Fatalf("wrote %d bytes (info %+v), want exactly up to the aligned segment base", buf.Len(), info)
		}
		f, err := ptd.NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatalf("file without segments does not open: %v", err)
		}
		if f.Version != d.Version || len(f.Segments) != 0 || len(f.NamedData) != 0 {
			t.Fatalf("reopened: version %d, %d segments, %d keys", f.Version, len(f.Segments), len(f.NamedData))
		}
	}
}
