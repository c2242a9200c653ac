package pte

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// cpComposite is a Composite over its parts; ReadAt reads them in order.
// With failReadAt set, ReadAt fails: a probe that the writer went through
// the parts.
type cpComposite struct {
	parts      []*io.SectionReader
	failReadAt bool
}

func (c *cpComposite) SegmentParts() []*io.SectionReader { return c.parts }

func (c *cpComposite) ReadAt(p []byte, off int64) (int, error) {
	if c.failReadAt {
		return 0, errors.New("composite ReadAt called")
	}
	n := 0
	var pos int64
	for _, s := range c.parts {
		size := s.Size()
		if cur := off + int64(n); n < len(p) && cur >= pos && cur < pos+size {
			want := int(min(int64(len(p)-n), pos+size-cur))
			k, err := s.ReadAt(p[n:n+want], cur-pos)
			n += k
			if k < want {
				if err == nil || err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return n, err
			}
		}
		pos += size
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (c *cpComposite) size() int64 {
	var n int64
	for _, s := range c.parts {
		n += s.Size()
	}
	return n
}

// cpPattern returns n bytes that differ from one offset to the next.
func cpPattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ byte(i>>8) ^ seed
	}
	return b
}

// cpFile writes data to a file in dir and returns it open for reading.
func cpFile(t *testing.T, dir, name string, data []byte) *os.File {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// cpLeafBytes concatenates what the leaves read, failing on short reads.
func cpLeafBytes(t *testing.T, leaves []*io.SectionReader) []byte {
	t.Helper()
	var out []byte
	for i, l := range leaves {
		b := make([]byte, l.Size())
		if n, err := l.ReadAt(b, 0); n != len(b) {
			t.Fatalf("leaf %d: read %d of %d bytes: %v", i, n, len(b), err)
		}
		out = append(out, b...)
	}
	return out
}

// TestSourcePartsFlattens checks that a segment source built from memory,
// file sections, nested sections and a nested Composite resolves to leaves
// that read the same bytes as the source, with every file range exposed as
// a section of the *os.File itself (what copy_file_range needs).
func TestSourcePartsFlattens(t *testing.T) {
	dir := t.TempDir()
	fileData := cpPattern(10000, 1)
	f := cpFile(t, dir, "engine.bin", fileData)
	head := cpPattern(300, 2)
	inner := &cpComposite{parts: []*io.SectionReader{
		io.NewSectionReader(io.NewSectionReader(f, 1000, 5000), 100, 2000), // file [1100, 3100)
		wrSection(cpPattern(50, 3)),
	}}
	c := &cpComposite{parts: []*io.SectionReader{
		wrSection(head),
		io.NewSectionReader(f, 0, 4000),
		wrSection(nil), // empty parts are skipped
		io.NewSectionReader(inner, 0, inner.size()),
	}}
	whole := c.size()
	want := make([]byte, whole)
	if n, err := c.ReadAt(want, 0); n != len(want) {
		t.Fatalf("reference read: %d bytes, %v", n, err)
	}
	if !bytes.Equal(want[300:4300], fileData[:4000]) || !bytes.Equal(want[4300:6300], fileData[1100:3100]) {
		t.Fatal("test composite reads the wrong bytes")
	}

	leaves := sourceParts(io.NewSectionReader(c, 0, whole), whole)
	if got := cpLeafBytes(t, leaves); !bytes.Equal(got, want) {
		t.Fatal("leaves of the whole composite read different bytes")
	}
	var fileLeaves []int64
	for _, l := range leaves {
		if _, off, ok := fileSection(l); ok {
			fileLeaves = append(fileLeaves, off, l.Size())
		}
	}
	if want := []int64{0, 4000, 1100, 2000}; !slices.Equal(fileLeaves, want) {
		t.Errorf("file leaves (offset, size) = %v, want %v", fileLeaves, want)
	}

	// Sections of sections are clipped to the inner section, as ReadAt is.
	if l := sourceParts(io.NewSectionReader(io.NewSectionReader(f, 0, 10), 20, 5), 5); len(l) != 0 {
		t.Errorf("a window past the end of the inner section gives %d leaves, want none", len(l))
	}
	if l := sourceParts(io.NewSectionReader(io.NewSectionReader(f, 100, 10), 5, 20), 20); len(l) != 1 || !bytes.Equal(cpLeafBytes(t, l), fileData[105:110]) {
		t.Errorf("a window straddling the end of the inner section gives %d leaves, want one of file bytes [105,110)", len(l))
	}

	// Every window, including ones that straddle parts or run past the end.
	for _, w := range [][2]int64{{0, 1}, {299, 2}, {250, 4100}, {4299, 3}, {4300, 2050}, {6340, 10}, {6349, 1}, {6000, 1000}, {whole, 5}} {
		off, n := w[0], w[1]
		leaves := sourceParts(io.NewSectionReader(c, off, n), n)
		got := cpLeafBytes(t, leaves)
		end := min(off+n, whole)
		if !bytes.Equal(got, want[off:end]) {
			t.Errorf("window [%d,+%d): leaves read %d bytes, want %d matching bytes", off, n, len(got), end-off)
		}
	}
}

// TestSourcePartsDeepNesting checks that sources nested deeper than the
// writer looks are still read correctly (through their own ReadAt).
func TestSourcePartsDeepNesting(t *testing.T) {
	data := cpPattern(4096, 9)
	var r io.ReaderAt = bytes.NewReader(data)
	off, size := int64(0), int64(len(data))
	for i := 0; i < 3*maxPartDepth; i++ {
		r = io.NewSectionReader(r, 1, size-1)
		off, size = off+1, size-1
		if i%4 == 0 {
			r = &cpComposite{parts: []*io.SectionReader{io.NewSectionReader(r, 0, size)}}
		}
	}
	src := io.NewSectionReader(r, 0, size)
	leaves := sourceParts(src, size)
	if len(leaves) == 0 {
		t.Fatal("no leaves")
	}
	if got := cpLeafBytes(t, leaves); !bytes.Equal(got, data[off:]) {
		t.Error("deeply nested source reads different bytes")
	}
}

// cpCompositeProgram returns a program with two segment payloads made of an
// in-memory head and a file range (the shape of a TensorRT blob), plus the
// bytes each payload holds.
func cpCompositeProgram(t *testing.T, dir string, failReadAt bool) (*Program, []*io.SectionReader, [][]byte) {
	t.Helper()
	engine := cpPattern(3<<20+17, 5)
	f := cpFile(t, dir, "engine.bin", engine)
	var srcs []*io.SectionReader
	var want [][]byte
	srcs = append(srcs, io.NewSectionReader(bytes.NewReader(nil), 0, 0))
	for i, r := range [][2]int64{{0, int64(len(engine))}, {12345, 1 << 20}} {
		head := cpPattern(200+i*33, byte(i))
		c := &cpComposite{failReadAt: failReadAt, parts: []*io.SectionReader{wrSection(head), io.NewSectionReader(f, r[0], r[1])}}
		srcs = append(srcs, io.NewSectionReader(c, 0, c.size()))
		want = append(want, append(bytes.Clone(head), engine[r[0]:r[0]+r[1]]...))
	}
	return wrProgram(2), srcs, want
}

// TestWriteCompositeSources writes blob-shaped composite payloads to a file
// (part by part, the file ranges by the kernel) and to memory (through
// ReadAt): the outputs must be identical and hold the payload bytes.
func TestWriteCompositeSources(t *testing.T) {
	dir := t.TempDir()
	p, srcs, want := cpCompositeProgram(t, dir, false)
	var mem bytes.Buffer
	if _, err := Write(&mem, p, srcs, nil); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.pte")
	if _, err := WriteFile(out, p, srcs, nil); err != nil {
		t.Fatal(err)
	}
	disk, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mem.Bytes(), disk) {
		t.Fatal("file and memory outputs differ")
	}
	got := wrOpenBytes(t, disk)
	for i, w := range want {
		b, err := wrData(got.Segment(i + 1))
		if err != nil || !bytes.Equal(b, w) {
			t.Errorf("segment %d: %d bytes, want %d identical bytes (error %v)", i+1, len(b), len(w), err)
		}
	}
}

// TestWriteFileUsesCompositeParts proves the file path copies the parts:
// the composites' own ReadAt fails, yet writing to a file succeeds (and
// writing to memory, which uses ReadAt, fails with a *SegmentError).
func TestWriteFileUsesCompositeParts(t *testing.T) {
	if !copyFileRangeSupported {
		t.Skip("no copy_file_range on this platform: files are written through ReadAt")
	}
	dir := t.TempDir()
	p, srcs, want := cpCompositeProgram(t, dir, true)
	out := filepath.Join(dir, "out.pte")
	if _, err := WriteFile(out, p, srcs, nil); err != nil {
		t.Fatalf("writing to a file read the composite itself: %v", err)
	}
	f, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, w := range want {
		if b, err := wrData(f.Segment(i + 1)); err != nil || !bytes.Equal(b, w) {
			t.Errorf("segment %d differs (error %v)", i+1, err)
		}
	}
	var se *SegmentError
	if _, err := Write(io.Discard, p, srcs, nil); !errors.As(err, &se) || se.Index != 1 {
		t.Errorf("writing to memory: got %v, want a *SegmentError for payload 1", err)
	}
}

// TestWriteKernelCopiesCongruentParts checks which file parts go to
// copy_file_range: those whose file offset and output offset agree modulo
// 4096 (blocks could be shared), not the others (the kernel would only
// copy them, more slowly than the buffer does).
func TestWriteKernelCopiesCongruentParts(t *testing.T) {
	if !copyFileRangeSupported {
		t.Skip("no copy_file_range on this platform")
	}
	var kernel int64
	testHookKernelCopy = func(_, n int64) { kernel += n }
	t.Cleanup(func() { testHookKernelCopy = nil })
	dir := t.TempDir()
	data := cpPattern(1<<20+5*shareAlign, 8)
	f := cpFile(t, dir, "engine.bin", data)
	const body = 1 << 20
	blob := func(headLen int, off int64) *io.SectionReader {
		c := &cpComposite{parts: []*io.SectionReader{wrSection(cpPattern(headLen, 1)), io.NewSectionReader(f, off, body)}}
		return io.NewSectionReader(c, 0, c.size())
	}
	// Segment 1 starts at the 4096-aligned segment base.
	for _, c := range []struct {
		name   string
		src    *io.SectionReader
		kernel int64
	}{
		{"file section at a block", io.NewSectionReader(f, 3*shareAlign, body), body},
		{"file section off a block", io.NewSectionReader(f, 100, body), 0},
		{"blob with a block-sized head", blob(shareAlign, 0), body},
		{"blob with a head congruent to its range", blob(shareAlign+100, 100), body},
		{"blob with a 200-byte head", blob(200, 0), 0},
	} {
		kernel = 0
		out := filepath.Join(dir, "out.pte")
		srcs := []*io.SectionReader{wrSection(nil), c.src}
		if _, err := WriteFile(out, wrProgram(1), srcs, &WriteOptions{SegmentAlignment: shareAlign}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if kernel != c.kernel {
			t.Errorf("%s: kernel copied %d bytes, want %d", c.name, kernel, c.kernel)
		}
		var mem bytes.Buffer
		if _, err := Write(&mem, wrProgram(1), srcs, &WriteOptions{SegmentAlignment: shareAlign}); err != nil {
			t.Fatal(err)
		}
		if disk, err := os.ReadFile(out); err != nil || !bytes.Equal(disk, mem.Bytes()) {
			t.Errorf("%s: file output differs from memory output (%v)", c.name, err)
		}
	}
}

// TestWriteShortCompositeSource checks that composites whose parts hold
// fewer bytes than the segment, or whose file range runs past the end of
// the file, fail with a *SegmentError wrapping io.ErrUnexpectedEOF, and
// that WriteFile leaves nothing behind.
func TestWriteShortCompositeSource(t *testing.T) {
	dir := t.TempDir()
	f := cpFile(t, dir, "engine.bin", cpPattern(1<<16, 4))
	cases := map[string]*io.SectionReader{
		// The parts hold 100+1000 bytes; the section claims 2000.
		"parts too short": io.NewSectionReader(&cpComposite{parts: []*io.SectionReader{
			wrSection(cpPattern(100, 1)), io.NewSectionReader(f, 0, 1000)}}, 0, 2000),
		// The file part claims bytes past the end of the file.
		"file too short": io.NewSectionReader(&cpComposite{parts: []*io.SectionReader{
			wrSection(cpPattern(100, 1)), io.NewSectionReader(f, 1<<15, 1<<16)}}, 0, 100+1<<16),
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			srcs := []*io.SectionReader{wrSection(nil), src}
			for _, dest := range []string{"file", "memory"} {
				var err error
				out := filepath.Join(dir, "out.pte")
				if dest == "file" {
					_, err = WriteFile(out, wrProgram(1), srcs, nil)
				} else {
					_, err = Write(io.Discard, wrProgram(1), srcs, nil)
				}
				var se *SegmentError
				if !errors.As(err, &se) || se.Index != 1 || !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("%s: got %v, want a *SegmentError for payload 1 wrapping io.ErrUnexpectedEOF", dest, err)
				}
				if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s: output exists after a failed write", dest)
				}
			}
			if names := wrDirNames(t, dir); len(names) != 1 {
				t.Errorf("directory holds %v, want only the engine", names)
			}
		})
	}
}

// FuzzSourceParts checks, for arbitrary part sizes and windows, that the
// leaves read exactly the bytes the source reads.
func FuzzSourceParts(f *testing.F) {
	f.Add([]byte{3, 0, 7, 2}, int64(1), int64(9))
	f.Add([]byte{10, 10}, int64(0), int64(25))
	f.Add([]byte{0, 0, 1}, int64(0), int64(1))
	f.Fuzz(func(t *testing.T, sizes []byte, off, n int64) {
		if len(sizes) > 64 || off < 0 || n < 0 || off > 1<<12 || n > 1<<12 {
			return
		}
		data := cpPattern(64*255, 6) // room for every part
		c := &cpComposite{}
		var pos int64
		for i, s := range sizes {
			size := int64(s)
			if i%3 == 2 {
				// A nested section of a nested composite.
				inner := &cpComposite{parts: []*io.SectionReader{io.NewSectionReader(bytes.NewReader(data), pos, size)}}
				c.parts = append(c.parts, io.NewSectionReader(inner, 0, size))
			} else {
				c.parts = append(c.parts, io.NewSectionReader(bytes.NewReader(data), pos, size))
			}
			pos += size
		}
		want := make([]byte, n)
		k, _ := io.NewSectionReader(c, off, n).ReadAt(want, 0)
		leaves := sourceParts(io.NewSectionReader(c, off, n), n)
		got := cpLeafBytes(t, leaves)
		if !bytes.Equal(got, want[:k]) {
			t.Fatalf("leaves read %d bytes, source %d (or the bytes differ)", len(got), k)
		}
	})
}

// TestEarlyWriteback checks that WriteOptions.EarlyWriteback (which
// WriteFile sets) starts the writeback of each earlyWritebackStep bytes of
// an *os.File output as payloads are copied, contiguously and within the
// file, that without it or into memory none is started, and that the
// bytes are the same either way.
func TestEarlyWriteback(t *testing.T) {
	var ranges [][2]int64
	testHookWriteback = func(off, n int64) { ranges = append(ranges, [2]int64{off, n}) }
	step := earlyWritebackStep
	earlyWritebackStep = 64 << 10
	t.Cleanup(func() { testHookWriteback, earlyWritebackStep = nil, step })
	dir := t.TempDir()
	srcs := []*io.SectionReader{wrSection(nil)}
	for i := range 8 {
		srcs = append(srcs, wrSection(cpPattern(40<<10, byte(i+1))))
	}
	prog := wrProgram(len(srcs) - 1)

	var mem bytes.Buffer
	if _, err := Write(&mem, prog, srcs, &WriteOptions{EarlyWriteback: true}); err != nil {
		t.Fatal(err)
	}
	if len(ranges) != 0 {
		t.Errorf("writing to memory started writeback of %v", ranges)
	}
	plain := filepath.Join(dir, "plain.pte")
	pf, err := os.Create(plain)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(pf, prog, srcs, nil); err != nil {
		t.Fatal(err)
	}
	pf.Close()
	if len(ranges) != 0 {
		t.Errorf("without EarlyWriteback, writeback of %v was started", ranges)
	}

	out := filepath.Join(dir, "out.pte")
	info, err := WriteFile(out, prog, srcs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ranges) < 4 {
		t.Fatalf("WriteFile of %d bytes started writeback %d times (%v), want one per %d bytes", info.Size, len(ranges), ranges, earlyWritebackStep)
	}
	var next int64
	for _, r := range ranges {
		if r[0] != next || r[1] < earlyWritebackStep || r[0]+r[1] > info.Size {
			t.Errorf("writeback ranges %v: not contiguous steps of at least %d bytes within the %d-byte file", ranges, earlyWritebackStep, info.Size)
			break
		}
		next = r[0] + r[1]
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(plain)
	if !bytes.Equal(got, want) || !bytes.Equal(got, mem.Bytes()) {
		t.Error("the file written with early writeback differs from the one written without")
	}

	// One payload of several steps starts writeback while it is copied,
	// whether the kernel copies it (a file section) or the buffer does (a
	// kick per buffer of copyBufferSize at most, hence the size).
	big := cpPattern(5*copyBufferSize+100, 9)
	bf := cpFile(t, dir, "big.bin", big)
	for _, c := range []struct {
		name string
		src  *io.SectionReader
	}{
		{"file section", io.NewSectionReader(bf, 0, int64(len(big)))},
		{"in memory", wrSection(big)},
	} {
		ranges = nil
		out := filepath.Join(dir, "big.pte")
		if _, err := WriteFile(out, wrProgram(1), []*io.SectionReader{wrSection(nil), c.src}, &WriteOptions{SegmentAlignment: shareAlign}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(ranges) < 4 {
			t.Errorf("%s: one %d-byte payload started writeback %d times, want several", c.name, len(big), len(ranges))
		}
		if got, err := os.ReadFile(out); err != nil || !bytes.Contains(got, big) {
			t.Errorf("%s: the payload was not written whole (error %v)", c.name, err)
		}
	}
}

// TestKernelCopyStartsAligned checks that a payload the kernel copies
// from an offset off a 64 KiB boundary of the output (a blob whose head
// precedes its aligned engine) is copied by a first call that ends at the
// boundary and then by calls that each start on one, with and without
// early writeback, and that the output's bytes are the payload's.
func TestKernelCopyStartsAligned(t *testing.T) {
	if !copyFileRangeSupported {
		t.Skip("no copy_file_range on this platform")
	}
	step := earlyWritebackStep
	earlyWritebackStep = 2 * WideCongruence
	t.Cleanup(func() { earlyWritebackStep = step })
	dir := t.TempDir()
	data := cpPattern(3*WideCongruence+4*shareAlign, 5)
	f := cpFile(t, dir, "engine.bin", data)
	const head = 288 // a blob head: the payload starts this far before a page
	src := io.NewSectionReader(f, shareAlign-head, int64(len(data))-(shareAlign-head))
	for _, writeback := range []bool{false, true} {
		type call struct{ at, n int64 }
		var calls []call
		testHookKernelCopy = func(at, n int64) { calls = append(calls, call{at, n}) }
		t.Cleanup(func() { testHookKernelCopy = nil })
		out := filepath.Join(dir, fmt.Sprintf("out-%v.pte", writeback))
		o, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		info, err := Write(o, wrProgram(1), []*io.SectionReader{wrSection(nil), src}, &WriteOptions{SegmentAlignment: 16, PageCongruent: true, EarlyWriteback: writeback})
		o.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) < 2 {
			t.Fatalf("writeback %v: %d copy_file_range calls (%v), want a lead-in and the aligned rest", writeback, len(calls), calls)
		}
		if calls[0].at%WideCongruence == 0 || (calls[0].at+calls[0].n)%WideCongruence != 0 {
			t.Errorf("writeback %v: first call copies [%d, %d), want it to end at the first 64 KiB boundary after an unaligned start", writeback, calls[0].at, calls[0].at+calls[0].n)
		}
		for _, c := range calls[1:] {
			if c.at%WideCongruence != 0 {
				t.Errorf("writeback %v: a later call starts at %d, off a 64 KiB boundary (calls %v)", writeback, c.at, calls)
			}
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		seg := info.Segments[info.SegmentIndex[1]]
		at := info.Header.SegmentBaseOffset + seg.Offset
		if want := data[shareAlign-head:]; !bytes.Equal(got[at:at+seg.Size], want) {
			t.Errorf("writeback %v: the segment's bytes differ from the payload's", writeback)
		}
	}
}
