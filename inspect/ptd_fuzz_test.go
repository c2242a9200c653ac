package inspect

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// buildPTDBytes writes a .ptd file with one segment per key (each key's
// payload is its own name repeated to 16 bytes).
func buildPTDBytes(t testing.TB, keys ...string) []byte {
	t.Helper()
	d := &ptd.Data{}
	for i, k := range keys {
		payload := bytes.Repeat([]byte(k+"."), 16)[:16]
		d.NamedData = append(d.NamedData, ptd.NamedData{Key: k, SegmentIndex: uint32(i),
			Layout: &ptd.TensorLayout{ScalarType: pte.ScalarType(6), Sizes: []int32{2, 2}, DimOrder: []uint8{0, 1}}})
		d.Segments = append(d.Segments, io.NewSectionReader(bytes.NewReader(payload), 0, int64(len(payload))))
	}
	var buf bytes.Buffer
	if _, err := ptd.Write(&buf, d); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzPTDView opens arbitrary bytes as a .ptd file and, when the reader
// accepts them, builds the .ptd document with hashing, encodes it, and
// diffs it against itself and against a built file in both directions,
// with and without layout. Nothing may fail on an in-memory file, the
// encoding must be valid JSON, a document must not differ from itself, and
// the two directions of a diff must find the same number of differences.
func FuzzPTDView(f *testing.F) {
	testkit.AddSharedSeeds(f, maxSeedSize, "corpus/*.ptd", "vectors/ptd/*.ptd")
	f.Add(buildPTDBytes(f, "a", "b"))
	f.Add(buildPTDBytes(f, "a", "a", "c\x00d"))
	baseBytes := buildPTDBytes(f, "a", "b")
	base, err := ptd.NewFile(bytes.NewReader(baseBytes), int64(len(baseBytes)))
	if err != nil {
		f.Fatal(err)
	}
	baseDoc, err := BuildPTD(base, true)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := ptd.NewFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		doc, err := BuildPTD(pf, true)
		if err != nil {
			t.Fatalf("BuildPTD failed on an in-memory file: %v", err)
		}
		b, err := Marshal(doc)
		if err != nil || !json.Valid(b) {
			t.Fatalf("Marshal: %v (valid JSON: %v)", err, json.Valid(b))
		}
		for _, layout := range []bool{false, true} {
			opts := &DiffOptions{Layout: layout}
			if d, err := DiffPTD(doc, doc, opts); err != nil || len(d) != 0 {
				t.Fatalf("layout %v: document differs from itself: %v %v", layout, err, d)
			}
			ab, err := DiffPTD(doc, baseDoc, opts)
			if err != nil {
				t.Fatalf("layout %v: %v", layout, err)
			}
			ba, err := DiffPTD(baseDoc, doc, opts)
			if err != nil || len(ab) != len(ba) {
				t.Fatalf("layout %v: %d differences one way, %d the other (%v)", layout, len(ab), len(ba), err)
			}
		}
	})
}
