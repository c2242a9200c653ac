package pte

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
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
	if checked == 0 {
		t.Log("no corpus program has a constant segment with entries")
	}
}

// csRebuild checks ConstantSegment against f's constant segment.
func csRebuild(t *testing.T, f *File) {
	cs := f.Program.ConstantSegment
	nbytes := map[int]int64{}
	for _, ep := range f.Program.Plans() {
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
		if !ok {
			// No Tensor value names this entry, so its tensor size is
			// unknown: take the whole entry, padding included. That keeps
			// the layout, as the entry already ends on the alignment.
			t.Logf("constant %d: no Tensor refers to it; rebuilt from its %d stored bytes", i+1, pl.Size())
			n = pl.Size()
		}
		if n > pl.Size() {
			t.Fatalf("constant %d: tensor needs %d bytes, entry has %d", i+1, n, pl.Size())
		}
		tensors[i] = io.NewSectionReader(pl.SectionReader, 0, n)
	}
	align := csAlignment(cs.Offsets, tensors)
	if align == 0 {
		t.Fatalf("offsets %v fit no power-of-two alignment for the tensor sizes", cs.Offsets)
	}
	t.Logf("layout fits constant_tensor_alignment %d", align)
	offsets, payload, err := ConstantSegment(tensors, align)
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
	ep := p.Plan(0)
	for i, n := range []int32{6, 25} {
		ep.Values = append(ep.Values, &EValue{Val: &Tensor{ScalarType: ScalarTypeFLOAT, Sizes: []int32{n},
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

// csAlignment returns the largest power-of-two alignment (up to 1<<16) that
// lays tensors out at offsets, or 0 if none does: the writer's
// constant_tensor_alignment, which the file does not record. Several
// alignments can fit (every tensor size already a multiple of 64 fits 16,
// 32 and 64), but they all give the same layout.
func csAlignment(offsets []uint64, tensors []*io.SectionReader) uint64 {
	for a := uint64(1 << 16); a >= 1; a /= 2 {
		fits := true
		for i := 0; i+1 < len(tensors) && fits; i++ {
			end := offsets[i+1] + uint64(tensors[i].Size())
			fits = offsets[i+2] == (end+a-1)/a*a
		}
		if fits {
			return a
		}
	}
	return 0
}
