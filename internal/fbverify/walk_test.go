package fbverify

import (
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"
)

// TestWalk: on a buffer with a string two tables share and a vector of
// tables, Walk reports each object once, inside the buffer, with its
// path, and the spans it reports with the builder's padding cover the
// buffer.
func TestWalk(t *testing.T) {
	item := &Table{Name: "Item", Fields: []Field{String("name"), Scalar("n", 4)}}
	root := &Table{Name: "Root", Fields: []Field{TableVector("items", item), Vector("data", 8)}}
	b := flatbuffers.NewBuilder(0)
	name := b.CreateString("shared")
	var items []flatbuffers.UOffsetT
	for i := range 3 {
		b.StartObject(2)
		b.PrependUOffsetTSlot(0, name, 0)
		b.PrependInt32Slot(1, int32(i+1), 0)
		items = append(items, b.EndObject())
	}
	b.StartVector(4, len(items), 4)
	for i := len(items) - 1; i >= 0; i-- {
		b.PrependUOffsetT(items[i])
	}
	vec := b.EndVector(len(items))
	b.StartVector(8, 2, 8)
	b.PrependInt64(2)
	b.PrependInt64(1)
	data := b.EndVector(2)
	b.StartObject(2)
	b.PrependUOffsetTSlot(0, vec, 0)
	b.PrependUOffsetTSlot(1, data, 0)
	b.Finish(b.EndObject())
	buf := b.FinishedBytes()
	if _, err := Verify(buf, root); err != nil {
		t.Fatal(err)
	}

	kinds := map[SpanKind]int{}
	paths := map[string]int{}
	covered := make([]bool, len(buf))
	Walk(buf, root, func(start, end uint64, kind SpanKind, path []Step) {
		if start >= end || end > uint64(len(buf)) {
			t.Fatalf("span [%d, %d) of a %d-byte buffer", start, end, len(buf))
		}
		kinds[kind]++
		p := ""
		for _, s := range path {
			p += "/" + s.Field
			if s.Index >= 0 {
				p += "[]"
			}
		}
		paths[p]++
		for i := start; i < end; i++ {
			covered[i] = true
		}
	})
	// The root, three items; one string (shared); the vector of items and
	// the data vector; the vtables (the builder shares alike ones).
	if kinds[SpanTable] != 4 || kinds[SpanString] != 1 || kinds[SpanVector] != 2 || kinds[SpanVtable] < 1 {
		t.Errorf("kinds %v", kinds)
	}
	if paths["/items[]"] < 3 || paths["/items[]/name"] != 1 || paths["/data"] != 1 || paths["/items"] != 1 {
		t.Errorf("paths %v", paths)
	}
	// The 8-byte prefix (root offset and its padding) and the builder's
	// alignment are all Walk leaves out.
	uncovered := 0
	for _, c := range covered[4:] {
		if !c {
			uncovered++
		}
	}
	if uncovered > 16 {
		t.Errorf("%d of %d bytes are in no span", uncovered, len(buf))
	}

	// A damaged buffer: Walk stops where a reference leaves it.
	bad := append([]byte(nil), buf...)
	for i := 4; i < len(bad); i += 4 {
		bad[i] = 0xff
	}
	Walk(bad, root, func(start, end uint64, kind SpanKind, path []Step) {
		if end > uint64(len(bad)) || start > end {
			t.Fatalf("span [%d, %d) of a %d-byte buffer", start, end, len(bad))
		}
	})
}
