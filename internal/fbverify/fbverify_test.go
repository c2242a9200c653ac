package fbverify

import (
	"errors"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"
)

// chain returns a flatbuffer whose root is a chain of n nested tables of a
// self-referencing one-field type.
func chain(n int) []byte {
	b := flatbuffers.NewBuilder(64 * n)
	var next flatbuffers.UOffsetT
	for i := range n {
		b.StartObject(1)
		if i > 0 {
			b.PrependUOffsetTSlot(0, next, 0)
		}
		next = b.EndObject()
	}
	b.Finish(next)
	return b.FinishedBytes()
}

// TestDepthLimit: the C++ verifier's depth limit of 64, on a recursive type.
func TestDepthLimit(t *testing.T) {
	node := &Table{Name: "Node"}
	node.Fields = []Field{Sub("next", node)}
	if _, err := Verify(chain(MaxDepth), node); err != nil {
		t.Fatalf("%d nested tables: %v", MaxDepth, err)
	}
	_, err := Verify(chain(MaxDepth+1), node)
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Msg, "nested deeper than 64") {
		t.Fatalf("%d nested tables: err %v, want the depth limit", MaxDepth+1, err)
	}
	if want := "next" + strings.Repeat(".next", MaxDepth-1); e.Path != want {
		t.Errorf("path %q, want %d nested next fields", e.Path, MaxDepth)
	}
}

// list builds a root table with one vector of n 8-byte elements whose data
// starts at a 4- but not 8-aligned offset, and reports that offset.
func list(t *testing.T, n int) ([]byte, int) {
	t.Helper()
	for pad := 0; pad < 2; pad++ {
		b := flatbuffers.NewBuilder(0)
		// Vector alignment 4 lets the builder put 8-byte elements at any
		// 4-aligned offset; the pad shifts that offset by 4.
		b.StartVector(8, n, 4)
		for i := range n {
			b.PlaceInt64(int64(i))
		}
		vec := b.EndVector(n)
		for range pad {
			b.PlaceInt32(0)
		}
		b.StartObject(1)
		b.PrependUOffsetTSlot(0, vec, 0)
		b.Finish(b.EndObject())
		buf := b.FinishedBytes()
		start := len(buf) - int(vec) + 4
		if start%8 != 0 {
			return buf, start
		}
	}
	t.Fatal("could not place the vector at a 4-aligned offset")
	return nil, 0
}

// TestMisaligned8ByteVectorWarns: the C++ verifier checks only the 4-byte
// alignment of a vector's length, so 8-byte elements at a 4-aligned offset
// (an empty IntList, as in a real ExecuTorch test program) are accepted;
// ptekit warns instead of refusing.
func TestMisaligned8ByteVectorWarns(t *testing.T) {
	root := &Table{Name: "IntList", Fields: []Field{Vector("items", 8)}}
	for _, n := range []int{0, 2} {
		buf, start := list(t, n)
		v, err := Verify(buf, root)
		if err != nil {
			t.Fatalf("%d items at byte %d: %v, want a warning only", n, start, err)
		}
		if len(v.Warnings) != 1 || v.Warnings[0].Off != int64(start) || v.Warnings[0].Path != "items" {
			t.Fatalf("%d items at byte %d: warnings %v, want one at that byte for items", n, start, v.Warnings)
		}
	}
}
