package pte

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"syscall"
)

// SegmentReaders returns one reader per entry of f.Program.Segments, over
// that segment's bytes in f. Writing f.Program with them,
//
//	Write(w, f.Program, readers, nil)
//
// re-writes the file with every segment copied through untouched (the idea
// of archive/zip's Writer.Copy): nothing is decoded or held in memory, and
// segment references stay valid because payload i becomes segment i.
//
// Zero-byte segments get empty readers. A segment with bytes needs the
// extended header and must lie inside the file; otherwise the error wraps a
// *FormatError naming the segment.
func (f *File) SegmentReaders() ([]*io.SectionReader, error) {
	if f.Program == nil {
		return nil, fmt.Errorf("pte: file has no program")
	}
	segs := f.Program.Segments
	out := make([]*io.SectionReader, len(segs))
	for i, s := range segs {
		path := fmt.Sprintf("segments[%d]", i)
		switch {
		case s == nil:
			return nil, &FormatError{Off: -1, Path: path, Msg: "segment entry is absent", Code: CodeInvalidProgram}
		case s.Size == 0:
			out[i] = io.NewSectionReader(f.ReaderAt(), 0, 0)
			continue
		case f.Header == nil || f.Header.SegmentBaseOffset == 0:
			return nil, &FormatError{Off: -1, Path: path,
				Msg:  fmt.Sprintf("segment holds %d bytes but the file has no extended header locating segment data", s.Size),
				Code: CodeNotFound}
		}
		start, err := f.segmentSpan(i, f.Header.SegmentBaseOffset)
		if err != nil {
			return nil, err
		}
		out[i] = io.NewSectionReader(f.ReaderAt(), start, int64(s.Size))
	}
	return out, nil
}

// Composite is implemented by an io.ReaderAt whose bytes are the
// concatenation of other sections, in order: for example a TensorRT blob
// made of an in-memory header followed by a range of an engine file (the
// reader behind delegate.NewBlobReader). ReadAt must return exactly the
// bytes of the parts.
//
// When Write copies a segment whose source is (a section of) a Composite
// into an *os.File, it copies the parts one by one, so a part that is a
// section of an *os.File can be copied by the kernel (copy_file_range,
// which may share blocks) instead of through a user-space buffer; this
// happens when the part's file offset and its output offset are equal
// modulo 4096 (WriteOptions.PageCongruent lays segments out so that they
// are). A part may also be a section of any reader that implements
// syscall.Conn, which copy_file_range is then given. Other destinations read the source through its ReadAt.
type Composite interface {
	io.ReaderAt
	// SegmentParts returns the parts. It is called each time Write needs
	// them (to lay out, deduplicate and copy a segment), so it should
	// not build them anew each call; Write reads the sections only
	// through ReadAt, Size and Outer and never modifies the slice. It
	// must not return sections that read from the Composite itself.
	SegmentParts() []*io.SectionReader
}

// maxPartDepth bounds how far Write looks through nested sections and
// Composite parts; a source nested deeper is read through its own ReadAt.
const maxPartDepth = 8

// sourceParts returns the leaf sections that together hold the n bytes of
// src from its start: a section of a section becomes one section of the
// outer reader, a section of a Composite becomes the matching ranges of its
// parts. A source that ends early yields fewer than n bytes of parts.
func sourceParts(src *io.SectionReader, n int64) []*io.SectionReader {
	// Most payloads have one or two parts (a blob's prefix and its
	// engine): room for them on the caller's stack, when sourceParts is
	// inlined, saves an allocation per payload.
	return appendParts(make([]*io.SectionReader, 0, 4), src, 0, n, 0)
}

// appendParts appends the leaves of the n bytes of ra at off to dst.
func appendParts(dst []*io.SectionReader, ra io.ReaderAt, off, n int64, depth int) []*io.SectionReader {
	if n <= 0 {
		return dst
	}
	if depth < maxPartDepth {
		switch r := ra.(type) {
		case *io.SectionReader:
			outer, base, size := r.Outer()
			if off >= size {
				return dst // reading there gives io.EOF
			}
			_, sec := outer.(*io.SectionReader)
			_, comp := outer.(Composite)
			if off == 0 && n >= size && (depth+1 >= maxPartDepth || !sec && !comp) {
				// r is already the leaf the recursion would make: reuse
				// it (Write reads leaves only through ReadAt, which keeps
				// no state) instead of allocating its copy.
				return append(dst, r)
			}
			// base+size cannot overflow (NewSectionReader clamps it), so
			// neither can base+off.
			return appendParts(dst, outer, base+off, min(n, size-off), depth+1)
		case Composite:
			var pos int64
			for _, p := range r.SegmentParts() {
				if p == nil {
					continue
				}
				ps := p.Size()
				if ps > math.MaxInt64-pos {
					break
				}
				if lo, hi := max(off, pos), min(off+n, pos+ps); lo < hi {
					dst = appendParts(dst, p, lo-pos, hi-lo, depth+1)
				}
				if pos += ps; pos >= off+n {
					break
				}
			}
			return dst
		}
	}
	return append(dst, io.NewSectionReader(ra, off, n))
}

// shareAlign is the block size below which no file system shares blocks
// between files: copy_file_range can only reflink (or move whole pages)
// when the source and destination offsets agree modulo it.
const shareAlign = 4096

// testHookKernelCopy, when set by a test, is told where in the output
// each copy_file_range call started and how many bytes it copied.
var testHookKernelCopy func(at, n int64)

// payloadCopier copies segment payloads to cw. Into an *os.File a source
// is split into its parts (see Composite), and a part that is a file
// section is copied by copy_file_range when its source offset and its
// destination offset agree modulo shareAlign, the case where a file system
// can share blocks (as cp's copies do). Everything else goes through buf,
// at most copyBufferSize bytes, allocated on first use and reused: with
// misaligned offsets the kernel's page-splitting splice path is slower
// than a 1 MiB read/write loop.
type payloadCopier struct {
	cw        *countingWriter
	buf       []byte
	writeback bool  // WriteOptions.EarlyWriteback
	kicked    int64 // output offset up to which writeback was last started
}

// earlyWritebackStep is how many bytes WriteOptions.EarlyWriteback lets
// accumulate before it starts their writeback: large enough that the
// calls cost nothing next to the copy, small enough that the device
// starts early in a file of a few hundred MiB.
var earlyWritebackStep int64 = 64 << 20 // a variable so that tests can lower it

// kickWriteback starts the writeback of what was written since the last
// call, once earlyWritebackStep bytes have accumulated in an *os.File.
// Only a failure to flush the output buffer is an error.
func (c *payloadCopier) kickWriteback() error {
	dst, ok := c.cw.w.(*os.File)
	if !c.writeback || !ok || c.cw.pos-c.kicked < earlyWritebackStep {
		return nil
	}
	if err := c.cw.bw.Flush(); err != nil {
		return err
	}
	startWriteback(dst, c.kicked, c.cw.pos-c.kicked)
	if testHookWriteback != nil {
		testHookWriteback(c.kicked, c.cw.pos-c.kicked)
	}
	c.kicked = c.cw.pos
	return nil
}

// testHookWriteback, when set by a test, is told each range whose
// writeback kickWriteback started.
var testHookWriteback func(off, n int64)

// copy copies the first n bytes of src.
func (c *payloadCopier) copy(src *io.SectionReader, n int64) error {
	dst, ok := c.cw.w.(*os.File)
	if !ok || !copyFileRangeSupported {
		return c.buffered(src, 0, n, 0, n)
	}
	var done int64
	for _, part := range sourceParts(src, n) {
		size := part.Size()
		var k int64
		if in, off, ok := fileSection(part); ok && (c.cw.pos-off)%shareAlign == 0 {
			if err := c.cw.bw.Flush(); err != nil {
				return err
			}
			var err error
			k, err = c.kernelCopy(dst, in, off, size)
			if err != nil && !errors.Is(err, errors.ErrUnsupported) {
				return err
			}
		}
		// The rest of the part (all of it when the kernel could not copy
		// it) is read normally, which also reports a source that ended.
		if err := c.buffered(part, k, size, done, n); err != nil {
			return err
		}
		done += size
	}
	if done < n {
		return fmt.Errorf("source ended after %d of %d bytes: %w", done, n, io.ErrUnexpectedEOF)
	}
	return nil
}

// kernelCopy copies n bytes of in at off to dst with copy_file_range, in
// steps of earlyWritebackStep when writeback is to start early, so that a
// single large payload is written back while it is still being copied.
//
// The first call ends where the output reaches a multiple of
// WideCongruence: the kernel moves the bytes of one call in 64 KiB pieces
// counted from where the call starts, and pieces that straddle 64 KiB
// boundaries of the output leave its page cache in small folios, slower
// to write back and to free.
func (c *payloadCopier) kernelCopy(dst *os.File, in syscall.Conn, off, n int64) (int64, error) {
	step := n
	if c.writeback {
		step = earlyWritebackStep
	}
	lead := (WideCongruence - c.cw.pos%WideCongruence) % WideCongruence
	var done int64
	for done < n {
		want := min(step, n-done)
		if done == 0 && lead > 0 {
			want = min(want, lead)
		}
		k, err := copyFileRange(dst, in, off+done, want)
		if testHookKernelCopy != nil {
			testHookKernelCopy(c.cw.pos, k)
		}
		done += k
		c.cw.pos += k
		if err != nil || k < want {
			return done, err // an error, or the end of in: the caller reads the rest
		}
		if err := c.kickWriteback(); err != nil {
			return done, err
		}
	}
	return done, nil
}

// fileSection reports whether s reads straight from an open file (an
// *os.File, or any reader that gives its file descriptor through
// syscall.Conn, such as a file opened only while it is copied), and at
// which file offset.
func fileSection(s *io.SectionReader) (syscall.Conn, int64, bool) {
	ra, off, _ := s.Outer()
	f, ok := ra.(syscall.Conn)
	return f, off, ok
}

// buffered copies bytes [from, to) of src through c.buf. src starts at
// offset base of an n-byte payload; errors count bytes of the payload.
func (c *payloadCopier) buffered(src *io.SectionReader, from, to, base, n int64) error {
	if from >= to {
		return nil
	}
	if want := min(to-from, copyBufferSize); int64(len(c.buf)) < want {
		c.buf = make([]byte, want)
	}
	for from < to {
		b := c.buf[:min(int64(len(c.buf)), to-from)]
		k, err := src.ReadAt(b, from)
		if k < len(b) {
			if err == nil || err == io.EOF {
				err = fmt.Errorf("source ended after %d of %d bytes: %w", base+from+int64(k), n, io.ErrUnexpectedEOF)
			}
			return err
		}
		if _, err := c.cw.Write(b); err != nil {
			return err
		}
		if err := c.kickWriteback(); err != nil {
			return err
		}
		from += int64(k)
	}
	return nil
}
