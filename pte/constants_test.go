package pte

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/schema"
)

// TestConstantSegmentLayout checks offsets, padding and bytes against the
// serializer's rule on hand-made tensors.
func TestConstantSegmentLayout(t *testing.T) {
	a, b, c := cpPattern(5, 1), cpPattern(40, 2), cpPattern(3, 3)
	for _, tc := range []struct {
		name    string
		tensors [][]byte
		align   uint64
		offsets []uint64
		data    []byte
	}{
		{"none", nil, 0, []uint64{0}, []byte{}},
		{"one, no trailing pad", [][]byte{a}, 0, []uint64{0, 0}, a},
		{"default 16", [][]byte{a, b, c}, 0, []uint64{0, 0, 16, 64},
			csCat(a, make([]byte, 11), b, make([]byte, 8), c)},
		{"64", [][]byte{a, b, c}, 64, []uint64{0, 0, 64, 128},
			csCat(a, make([]byte, 59), b, make([]byte, 24), c)},
		{"1 packs", [][]byte{a, b, c}, 1, []uint64{0, 0, 5, 45}, csCat(a, b, c)},
		{"empty tensors", [][]byte{{}, a, {}, c}, 16, []uint64{0, 0, 0, 16, 16}, csCat(a, make([]byte, 11), c)},
		{"exact multiple", [][]byte{make([]byte, 32), c}, 16, []uint64{0, 0, 32}, csCat(make([]byte, 32), c)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srcs := make([]*io.SectionReader, len(tc.tensors))
			for i, x := range tc.tensors {
				srcs[i] = wrSection(x)
			}
			offsets, payload, err := ConstantSegment(srcs, tc.align)
			if err != nil {
				t.Fatal(err)
			}
			if d := wrDiff(offsets, tc.offsets); d != "" {
				t.Errorf("offsets = %v, want %v", offsets, tc.offsets)
			}
			got, err := io.ReadAll(payload)
			if err != nil || !bytes.Equal(got, tc.data) {
				t.Errorf("payload = %x (%v), want %x", got, err, tc.data)
			}
			// Every window reads the same bytes as the whole.
			for off := int64(0); off < int64(len(tc.data)); off++ {
				for n := 1; n <= 9; n++ {
					buf := make([]byte, n)
					k, err := payload.ReadAt(buf, off)
					want := tc.data[off:min(off+int64(n), int64(len(tc.data)))]
					if k != len(want) || !bytes.Equal(buf[:k], want) || (k < n) != (err == io.EOF) {
						t.Fatalf("ReadAt(%d, %d) = %d %x, %v; want %x", n, off, k, buf[:k], err, want)
					}
				}
			}
		})
	}
}

func csCat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestConstantSegmentErrors(t *testing.T) {
	if _, _, err := ConstantSegment([]*io.SectionReader{wrSection(nil), nil}, 0); err == nil {
		t.Error("nil tensor accepted")
	}
	if _, _, err := ConstantSegment(nil, 1<<40); err == nil {
		t.Error("huge alignment accepted")
	}
	// A tensor source that ends early is reported when the payload is read.
	short := io.NewSectionReader(bytes.NewReader(make([]byte, 4)), 0, 10)
	_, payload, err := ConstantSegment([]*io.SectionReader{short, wrSection(make([]byte, 3))}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(payload); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short tensor: %v, want io.ErrUnexpectedEOF", err)
	}
}

// TestConstantSegmentCorpus rebuilds the constant segment of every real
// program that has one from its tensors (each cut to the bytes its Tensor
// value needs) and compares offsets and bytes with what ExecuTorch's
// serializer wrote.
func TestConstantSegmentCorpus(t *testing.T) {
	checked := 0
	for _, path := range testkit.Glob(t, testkit.SharedDir(t, "corpus"), "*.pte") {
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if cs := f.Program.ConstantSegment; cs == nil || len(cs.Offsets) < 2 {
			continue
		}
		checked++
		t.Run(filepath.Base(path), func(t *testing.T) { csRebuild(t, f) })
	}
	if checked < 10 {
		t.Errorf("only %d corpus programs with a constant segment", checked)
	}
}

// csRebuild checks ConstantSegment against f's constant segment.
func csRebuild(t *testing.T, f *File) {
	cs := f.Program.ConstantSegment
	nbytes := map[int]int64{}
	for _, ep := range f.Program.ExecutionPlan {
		for _, ev := range ep.Values {
			if x, ok := ev.Val.(*Tensor); ok && x.DataBufferIdx > 0 && x.AllocationInfo == nil {
				_, n, ok := tensorBytes(x)
				if !ok {
					t.Fatalf("tensor sizes %v", x.Sizes)
				}
				nbytes[int(x.DataBufferIdx)] = int64(n)
			}
		}
	}
	tensors := make([]*io.SectionReader, len(cs.Offsets)-1)
	for i := range tensors {
		pl, err := f.ConstantData(i + 1)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := nbytes[i+1]
		if !ok || n > pl.Size() {
			t.Fatalf("constant %d: tensor needs %d bytes (known %v), entry has %d", i+1, n, ok, pl.Size())
		}
		tensors[i] = io.NewSectionReader(pl.SectionReader, 0, n)
	}
	offsets, payload, err := ConstantSegment(tensors, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := wrDiff(offsets, cs.Offsets); d != "" {
		t.Errorf("offsets differ from upstream: %s\n got %v\nwant %v", d, offsets, cs.Offsets)
	}
	want, err := wrData(f.Segment(int(cs.SegmentIndex)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(payload)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("rebuilt constant segment (%d bytes, %v) differs from upstream (%d bytes)", len(got), err, len(want))
	}
	// The tensors are sections of the file: Write sees them through the
	// Composite as file sections, which it copies in the kernel.
	fileParts, nonEmpty := 0, 0
	for _, x := range tensors {
		if x.Size() > 0 {
			nonEmpty++
		}
	}
	for _, part := range sourceParts(payload, payload.Size()) {
		if _, _, ok := fileSection(part); ok {
			fileParts++
		}
	}
	if fileParts != nonEmpty {
		t.Errorf("%d of %d tensors reach Write as file sections", fileParts, nonEmpty)
	}
}

// TestConstantSegmentWrite: a program whose constants are laid out by
// ConstantSegment writes and reads back every constant, through a file.
func TestConstantSegmentWrite(t *testing.T) {
	dir := t.TempDir()
	w0, w1 := cpPattern(24, 4), cpPattern(100, 5)
	src := cpFile(t, dir, "weights.bin", csCat(w0, w1))
	offsets, payload, err := ConstantSegment([]*io.SectionReader{
		io.NewSectionReader(src, 0, 24), io.NewSectionReader(src, 24, 100)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := wrProgram(1)
	p.ConstantSegment = &SubsegmentOffsets{SegmentIndex: 0, Offsets: offsets}
	ep := p.ExecutionPlan[0]
	for i, n := range []int32{6, 25} {
		ep.Values = append(ep.Values, &EValue{Val: &Tensor{ScalarType: schema.ScalarTypeFLOAT, Sizes: []int32{n},
			DimOrder: []uint8{0}, DataBufferIdx: uint32(i + 1)}})
	}
	out := filepath.Join(dir, "out.pte")
	if _, err := WriteFile(out, p, []*io.SectionReader{payload, wrSection([]byte("engine"))}, &WriteOptions{Strict: true}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f := wrOpenBytes(t, b)
	for i, want := range [][]byte{w0, w1} {
		got, err := wrData(f.ConstantData(i + 1))
		if err != nil || !bytes.HasPrefix(got, want) {
			t.Errorf("constant %d differs (%v)", i+1, err)
		}
	}
}
