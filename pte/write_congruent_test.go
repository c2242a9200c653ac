package pte

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWritePageCongruent writes payloads that mix small and large parts at
// many source offsets with PageCongruent and checks the promises of the
// option: every large part lands at its source offset modulo 4096 (that of
// a payload of WideCongruentMin bytes or more modulo WideCongruence) and is
// copied by the kernel, small payloads keep ExecuTorch's rule, the base is
// a multiple of the alignment and moved by less than a page, every payload
// reads back, and SegmentAlignment finds the alignment that reproduces the
// layout.
func TestWritePageCongruent(t *testing.T) {
	dir := t.TempDir()
	data := cpPattern(3<<20, 5)
	f := cpFile(t, dir, "engines.bin", data)
	blob := func(headLen int, off, n int64) *io.SectionReader {
		c := &cpComposite{parts: []*io.SectionReader{wrSection(cpPattern(headLen, byte(headLen))), io.NewSectionReader(f, off, n)}}
		return io.NewSectionReader(c, 0, c.size())
	}
	srcs := []*io.SectionReader{
		wrSection(nil),              // the empty constant segment
		blob(272, 0, 200<<10),       // a TensorRT-like blob: 16-aligned head, engine at 0
		wrSection(cpPattern(77, 9)), // small: ExecuTorch's rule
		blob(48, 5000, CongruentMin),
		io.NewSectionReader(f, 123, 1<<20), // a bare file range off a page
		blob(32, 9, CongruentMin-1),        // just too small to move
		blob(4096+16, 4096*7+3, 300<<10),
		// Wide: kept at its source offset modulo WideCongruence.
		blob(4096+16, 3*WideCongruence+4096*5+7, WideCongruentMin),
	}
	for _, align := range []uint64{16, 128, 4096} {
		t.Run(fmt.Sprint(align), func(t *testing.T) {
			var kernel int64
			if copyFileRangeSupported {
				testHookKernelCopy = func(_, n int64) { kernel += n }
				t.Cleanup(func() { testHookKernelCopy = nil })
			}
			out := filepath.Join(dir, fmt.Sprintf("out%d.pte", align))
			opts := &WriteOptions{SegmentAlignment: align, PageCongruent: true}
			info, err := WriteFile(out, wrProgram(len(srcs)-1), srcs, opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Close()
			h := got.Header
			if h.SegmentBaseOffset%align != 0 || h.SegmentBaseOffset < h.ProgramSize || h.SegmentBaseOffset-roundUp(h.ProgramSize, align) >= WideCongruence {
				t.Errorf("segment base %d for a %d-byte program at alignment %d", h.SegmentBaseOffset, h.ProgramSize, align)
			}
			mod := func(size uint64) uint64 {
				if size >= 2<<20 {
					return 64 << 10
				}
				return 4096
			}
			var want, end uint64
			for i, s := range got.Program.Segments {
				natural := roundUp(end, align)
				a := anchorOf(srcs[i], srcs[i].Size(), false)
				switch {
				case !a.ok && s.Offset != natural:
					t.Errorf("segment %d (%d bytes, no large part) at %d, want %d", i, s.Size, s.Offset, natural)
				case a.ok && ((h.SegmentBaseOffset+s.Offset+a.at)%mod(s.Size) != a.src%mod(s.Size) || s.Offset < natural || s.Offset-natural >= mod(s.Size)):
					t.Errorf("segment %d at %d (natural %d): its large part at file offset %d, source offset %d", i, s.Offset, natural, h.SegmentBaseOffset+s.Offset+a.at, a.src)
				}
				if a.ok {
					for _, part := range sourceParts(srcs[i], srcs[i].Size()) {
						if part.Size() >= CongruentMin {
							want += uint64(part.Size())
						}
					}
				}
				end = s.Offset + s.Size
			}
			if copyFileRangeSupported && uint64(kernel) != want {
				t.Errorf("kernel copied %d bytes, want the %d bytes of the large parts", kernel, want)
			}
			wrComparePayloads(t, wrOpenBytes(t, wrWriteUnchecked(t, wrProgram(len(srcs)-1), srcs, nil)), got, info.SegmentIndex)
			if a, ok := got.SegmentAlignment(); !ok || roundUp(1, a) == 0 {
				t.Errorf("SegmentAlignment() = %d, %v", a, ok)
			} else {
				// Re-writing with the inferred alignment keeps every offset.
				rs, err := got.SegmentReaders()
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				again, err := Write(&buf, got.Program, rs, &WriteOptions{SegmentAlignment: a, PageCongruent: true})
				if err != nil {
					t.Fatal(err)
				}
				if d := wrDiff(again.Segments, got.Program.Segments); d != "" {
					t.Errorf("re-written at alignment %d: %s", a, d)
				}
				if again.Header.SegmentBaseOffset != h.SegmentBaseOffset {
					t.Errorf("re-written base %d, was %d", again.Header.SegmentBaseOffset, h.SegmentBaseOffset)
				}
			}
		})
	}
}

// TestPageCongruentHeadGrowth: a program whose head grows keeps its large
// segments at their offsets, and its base moves by a multiple of the page.
func TestPageCongruentHeadGrowth(t *testing.T) {
	dir := t.TempDir()
	f := cpFile(t, dir, "e.bin", cpPattern(1<<20, 3))
	srcs := []*io.SectionReader{wrSection(nil), io.NewSectionReader(f, 0, 300<<10), io.NewSectionReader(f, 400<<10, 500<<10)}
	in := filepath.Join(dir, "in.pte")
	if _, err := WriteFile(in, wrProgram(2), srcs, nil); err != nil { // ExecuTorch's layout
		t.Fatal(err)
	}
	orig, err := Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	a, ok := orig.SegmentAlignment()
	if !ok || a != DefaultSegmentAlignment {
		t.Fatalf("SegmentAlignment() = %d, %v", a, ok)
	}
	for _, grow := range []int{1, 100, 3000, 9000} {
		p := *orig.Program
		p.executionPlan = []*ExecutionPlan{ptrClone(orig.Program.Plan(0))}
		p.Plan(0).Name = string(bytes.Repeat([]byte("m"), grow))
		rs, err := orig.SegmentReaders()
		if err != nil {
			t.Fatal(err)
		}
		info, err := Write(io.Discard, &p, rs, &WriteOptions{SegmentAlignment: a, PageCongruent: true})
		if err != nil {
			t.Fatal(err)
		}
		if d := wrDiff(info.Segments, orig.Program.Segments); d != "" {
			t.Errorf("grown by %d: segments moved: %s", grow, d)
		}
		if diff := info.Header.SegmentBaseOffset - orig.Header.SegmentBaseOffset; diff%shareAlign != 0 || info.Header.SegmentBaseOffset < info.Header.ProgramSize {
			t.Errorf("grown by %d: base %d -> %d (program %d bytes)", grow, orig.Header.SegmentBaseOffset, info.Header.SegmentBaseOffset, info.Header.ProgramSize)
		}
	}
}

func ptrClone[T any](p *T) *T { c := *p; return &c }

// TestDedupPayloadsIdentity: the same file read through two *os.File
// values is recognised without reading; equal bytes in different files,
// and equal heads and tails with a different middle, are told apart by
// content.
func TestDedupPayloadsIdentity(t *testing.T) {
	dir := t.TempDir()
	data := cpPattern(64<<10, 1)
	a := cpFile(t, dir, "a", data)
	a2, err := os.Open(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	b := cpFile(t, dir, "b", data)
	mid := bytes.Clone(data)
	mid[len(mid)/2] ^= 1
	c := cpFile(t, dir, "c", mid)
	reads := &wrCountingReaderAt{r: a2}
	srcs := []*io.SectionReader{
		io.NewSectionReader(a, 0, 1<<16),
		io.NewSectionReader(a2, 0, 1<<16), // same file, other *os.File
		io.NewSectionReader(b, 0, 1<<16),  // same bytes, other file
		io.NewSectionReader(c, 0, 1<<16),  // same head and tail
		io.NewSectionReader(reads, 0, 100),
		io.NewSectionReader(reads, 0, 100), // same pointer: not read
		io.NewSectionReader(a, 8, 200),     // unique size: not read
	}
	remap, unique, err := DedupPayloads(srcs)
	if err != nil {
		t.Fatal(err)
	}
	if d := wrDiff(remap, []int{0, 0, 0, 1, 2, 2, 3}); d != "" {
		t.Errorf("remap %v", remap)
	}
	if d := wrDiff(unique, []int{0, 3, 4, 6}); d != "" {
		t.Errorf("unique %v", unique)
	}
	if reads.n != 0 {
		t.Errorf("%d reads of a payload that only its own identity matched", reads.n)
	}
}

// TestDedupPayloadsReadsEachOnce: many payloads of one size are each read
// once (a fingerprint that covers them whole), whatever their number.
func TestDedupPayloadsReadsEachOnce(t *testing.T) {
	const n = 5000
	var srcs []*io.SectionReader
	var counters []*wrCountingReaderAt
	for i := range n {
		c := &wrCountingReaderAt{r: bytes.NewReader([]byte(fmt.Sprintf("%08d", i%(n/2))))}
		counters = append(counters, c)
		srcs = append(srcs, io.NewSectionReader(c, 0, 8))
	}
	remap, unique, err := DedupPayloads(srcs)
	if err != nil {
		t.Fatal(err)
	}
	if len(unique) != n/2 || remap[n-1] != n/2-1 {
		t.Errorf("%d distinct payloads, payload %d -> %d", len(unique), n-1, remap[n-1])
	}
	for i, c := range counters {
		if c.n != 1 {
			t.Fatalf("payload %d read %d times", i, c.n)
		}
	}
}

// wrCountingReaderAt counts ReadAt calls.
type wrCountingReaderAt struct {
	r io.ReaderAt
	n int
}

func (c *wrCountingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.n++
	return c.r.ReadAt(p, off)
}

// TestDedupPayloadsAcrossKinds: equal bytes are stored once whether they
// come from memory (whole, or split into parts) or from a file.
func TestDedupPayloadsAcrossKinds(t *testing.T) {
	data := cpPattern(3000, 7)
	f := cpFile(t, t.TempDir(), "x", data)
	split := &cpComposite{parts: []*io.SectionReader{wrSection(data[:100]), wrSection(data[100:])}}
	for _, srcs := range [][]*io.SectionReader{
		{wrSection(data), io.NewSectionReader(f, 0, 3000)},
		{io.NewSectionReader(f, 0, 3000), wrSection(data)},
		{wrSection(data), io.NewSectionReader(split, 0, 3000)},
		{io.NewSectionReader(split, 0, 3000), io.NewSectionReader(f, 0, 3000)},
	} {
		remap, unique, err := DedupPayloads(srcs)
		if err != nil {
			t.Fatal(err)
		}
		if len(unique) != 1 || remap[1] != 0 {
			t.Errorf("remap %v, unique %v: equal bytes stored twice", remap, unique)
		}
	}
}

// TestCongruentAnyReader: a large part from a reader that is neither a
// file nor memory keeps ExecuTorch's layout, unless CongruentAnyReader
// asks for it to be placed as a file range would be.
func TestCongruentAnyReader(t *testing.T) {
	r := &wrPointerReaderAt{cpPattern(300<<10, 2)}
	srcs := []*io.SectionReader{wrSection(nil), io.NewSectionReader(r, 1000, 200<<10)}
	for _, anyReader := range []bool{false, true} {
		info, err := Write(io.Discard, wrProgram(1), srcs, &WriteOptions{PageCongruent: true, CongruentAnyReader: anyReader})
		if err != nil {
			t.Fatal(err)
		}
		at := info.Header.SegmentBaseOffset + info.Segments[1].Offset
		if congruent := at%shareAlign == 1000; congruent != anyReader {
			t.Errorf("CongruentAnyReader=%v: segment at file offset %d (source offset 1000)", anyReader, at)
		}
	}
}
