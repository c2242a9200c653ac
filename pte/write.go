package pte

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
)

// DefaultSegmentAlignment is the segment alignment ExecuTorch's serializer
// has used since 2024-08 (it was 4096 before).
const DefaultSegmentAlignment = 128

// Layout of the extended header this package writes.
const (
	// wrHeaderLength is the header length written: magic, length,
	// program_size, segment_base_offset and segment_data_size.
	wrHeaderLength = 32
	// wrHeaderPad is the room the header takes after the 8-byte prefix:
	// wrHeaderLength rounded up to the largest alignment in the flatbuffer
	// (inlineAlign), so that every offset inside it keeps its alignment.
	wrHeaderPad = (wrHeaderLength + inlineAlign - 1) / inlineAlign * inlineAlign
	// wrMinFileSize is the smallest file ExecuTorch can load: it reads this
	// many head bytes first. The flatbuffer region is padded up to it.
	wrMinFileSize = 64
)

// WriteOptions controls how Write lays out a program file. The zero value
// (and a nil *WriteOptions) gives ExecuTorch's defaults.
type WriteOptions struct {
	// SegmentAlignment aligns the segment base offset and every segment
	// offset. 0 means DefaultSegmentAlignment (128). It need not be a power
	// of two (ExecuTorch does not require one), but a value so large that
	// offsets overflow is refused.
	SegmentAlignment uint64
	// Dedup stores byte-identical segment payloads once and remaps every
	// reference to them: delegate SEGMENT indices, constant_segment,
	// mutable_data_segments and named_data segment indices. Without Dedup
	// the file has exactly one segment per payload. Only payloads that
	// share their size with another are read before writing: a pair is
	// compared byte by byte, larger groups are hashed (SHA-256).
	Dedup bool
	// PageCongruent lays the segments out so that the kernel can copy
	// their bytes (copy_file_range, which shares blocks on XFS and btrfs),
	// as the package documentation's "Segment layout" describes: the part
	// of a payload that is a file range of at least CongruentMin bytes (see
	// Composite) keeps its source offset modulo 4096 (WideCongruence for a
	// payload of WideCongruentMin bytes or more), at the cost of less than
	// that modulus in padding. It applies only when SegmentAlignment
	// divides 4096.
	PageCongruent bool
	// CongruentAnyReader makes PageCongruent treat a part read from any
	// reader not in memory (an HTTP range reader, a custom ReaderAt) as a
	// file range, so that a rewrite is laid out the same wherever its
	// bytes come from: a program re-baked from a URL equals the one
	// re-baked from the local file.
	CongruentAnyReader bool
	// HeadRoom reserves at least this many zero bytes between the program
	// region and the segment base, so that the tables can later grow where
	// they are (File.EncodeHead: an in-place re-bake that adds a compile
	// spec per delegate) without moving a segment. The base is then the
	// first offset from the program size plus HeadRoom that the layout
	// allows (a multiple of SegmentAlignment, or in a page-congruent layout
	// the same offset modulo 4096), so segments keep their offsets. A file
	// without segment data has no segment base and gets no room. At most
	// MaxHeadRoom; a re-bake recognises (File.HeadRoom) at least
	// MinHeadRoom.
	HeadRoom uint64
	// Strict refuses a program in which Verify would find an error, with a
	// *VerifyError listing them all. Without Strict, Write refuses only
	// what NewFile refuses, dangling payload references and model values
	// no file can hold (nil tables in vectors, typed nil union members, an
	// Unknown* member with a known tag), so that a program with a damaged
	// method can still be re-written as it is; an unknown union member is
	// written as its tag alone. Tools that build new programs should set
	// Strict.
	Strict bool
	// EarlyWriteback, for an *os.File destination that the caller will
	// sync (WriteFile and pteexport do), asks the system to start writing
	// the payloads back to the device while later ones are still being
	// copied (Linux: sync_file_range with SYNC_FILE_RANGE_WRITE, every
	// earlyWritebackStep bytes), so that the final fsync waits for the
	// tail instead of the whole file. It changes no byte and is a hint:
	// errors are ignored, and elsewhere it does nothing.
	EarlyWriteback bool
}

// WriteInfo describes a file written by Write.
type WriteInfo struct {
	// Size is the number of bytes written.
	Size int64
	// ProgramSize is the size of the FlatBuffers region (prefix, extended
	// header and tables), the offset at which padding and segments begin.
	ProgramSize int64
	// Header is the extended header written, nil when the file has none
	// (no segment holds a byte).
	Header *ExtendedHeader
	// Segments is Program.Segments as written: offsets relative to
	// Header.SegmentBaseOffset.
	Segments []*DataSegment
	// SegmentIndex maps each payload given to Write to the index of the
	// segment that holds it. Without Dedup it is the identity.
	SegmentIndex []int
}

// SegmentError reports a segment payload that could not be copied: its
// source failed or ended early (errors.Is(err, io.ErrUnexpectedEOF)).
type SegmentError struct {
	// Index is the position of the payload in the slice given to Write.
	Index int
	// Err is the underlying error.
	Err error
}

// Error formats the error as "pte: segment payload <index>: <cause>".
func (e *SegmentError) Error() string {
	return fmt.Sprintf("pte: segment payload %d: %v", e.Index, e.Err)
}

// Unwrap returns the underlying error.
func (e *SegmentError) Unwrap() error { return e.Err }

// Write writes p as a program file to w, followed by one segment per entry
// of segments, in order (or one per distinct payload with opts.Dedup).
//
// Write computes Program.Segments itself from the payload sizes: the
// segments field of p is replaced in the output by that layout, and p is not
// modified. Segment references in p (delegate SEGMENT indices,
// constant_segment, mutable_data_segments, named_data) are indices into
// segments. The "eh00" extended header (length 32) is inserted when any
// segment holds at least one byte, as ExecuTorch's serializer does, and
// also when a delegate refers to a segment (ExecuTorch cannot resolve a
// SEGMENT reference, even to an empty segment, without the header);
// otherwise the file is the bare flatbuffer, padded to 64 bytes.
//
// Payload bytes are streamed from their sources with a bounded buffer, or
// copied by the kernel when both ends are files at offsets equal modulo
// 4096 (see Composite for sources made of parts), never held in memory.
// Each source is read from its start, regardless of its current seek
// offset, and (without opts.Dedup) exactly once, in order. Inline
// payloads (ConstantBuffer, BackendDelegateData) live inside the
// flatbuffer, which must stay under 2 GiB; a larger program is refused
// with an error matching ErrProgramTooLarge.
//
// What Write writes, NewFile reads: before writing anything, Write checks
// that every segment reference names a payload and every INLINE reference
// an entry of BackendDelegateData, encodes the program and reads the
// encoded region back with NewFile. Problems ExecuTorch finds only when it
// loads a method (what Verify reports, such as a method without chains or a
// value of union type NONE) are written as they are unless opts.Strict is
// set.
//
// Errors in p are reported as *FormatError with the path of the field; a
// program that encodes but would not read back as *VerifyError (which
// unwraps to its *FormatErrors); failing sources as *SegmentError.
func Write(w io.Writer, p *Program, segments []*io.SectionReader, opts *WriteOptions) (*WriteInfo, error) {
	plan, err := planWrite(p, segments, opts)
	if err != nil {
		return nil, err
	}
	return plan.writeTo(w)
}

// writePlan is everything decided before the first byte is written.
type writePlan struct {
	srcs        []*io.SectionReader
	unique      []int  // payload index of each written segment
	region      []byte // the flatbuffer region, with the extended header if any
	info        *WriteInfo
	segmentBase uint64
	writeback   bool // WriteOptions.EarlyWriteback
}

// planWrite lays out and encodes p, and makes sure NewFile (and Verify,
// with opts.Strict) accepts the result.
func planWrite(p *Program, segments []*io.SectionReader, opts *WriteOptions) (*writePlan, error) {
	if p == nil {
		return nil, errors.New("pte: write: nil program")
	}
	if err := checkSources(segments); err != nil {
		return nil, err
	}
	p = p.decoded()
	if err := checkReferences(p, len(segments)); err != nil {
		return nil, err
	}
	pl, err := layoutWrite(p, segments, opts)
	if err != nil {
		return nil, err
	}
	// A program of several methods is checked one plan at a time (each
	// decoded, checked and let go of), which holds far less memory.
	if err := pl.check(opts != nil && opts.Strict, p.NumPlans() > 1, pl.model(p, opts != nil && opts.Dedup)); err != nil {
		return nil, err
	}
	return pl, nil
}

// layoutWrite lays out and encodes p without checking that the result
// loads; tests use it directly to craft damaged files.
func layoutWrite(p *Program, segments []*io.SectionReader, opts *WriteOptions) (*writePlan, error) {
	if p == nil {
		return nil, errors.New("pte: write: nil program")
	}
	align := uint64(DefaultSegmentAlignment)
	if opts != nil && opts.SegmentAlignment != 0 {
		align = opts.SegmentAlignment
	}
	if align > math.MaxInt32 {
		// No sane layout needs more; it also keeps offsets far from overflow.
		return nil, fmt.Errorf("pte: write: segment alignment %d is larger than %d", align, math.MaxInt32)
	}
	if err := checkSources(segments); err != nil {
		return nil, err
	}
	dedup := opts != nil && opts.Dedup
	pl := &writePlan{srcs: segments, info: &WriteInfo{}, writeback: opts != nil && opts.EarlyWriteback}
	// One segment per payload, or with dedup one per distinct content.
	var remap []int
	var err error
	if dedup {
		if remap, pl.unique, err = DedupPayloads(segments); err != nil {
			return nil, err
		}
	} else {
		remap = make([]int, len(segments))
		pl.unique = make([]int, len(segments))
		for i := range segments {
			remap[i], pl.unique[i] = i, i
		}
	}
	pl.info.SegmentIndex = remap

	sl, sizes, err := pl.placePayloads(opts, align)
	if err != nil {
		return nil, err
	}
	if opts != nil {
		if opts.HeadRoom > MaxHeadRoom {
			return nil, fmt.Errorf("pte: write: head room %d is larger than %d", opts.HeadRoom, uint64(MaxHeadRoom))
		}
		sl.headRoom = opts.HeadRoom
	}
	// One allocation for the table rather than one per segment.
	layout := make([]*DataSegment, len(pl.unique))
	segs := make([]DataSegment, len(pl.unique))
	for k := range layout {
		segs[k] = DataSegment{Offset: sl.offsets[k], Size: sizes[k]}
		layout[k] = &segs[k]
	}
	if p.Segments == nil && len(layout) == 0 {
		layout = nil // no payloads and no table in p: keep the field absent
	}
	pl.info.Segments = layout

	refs := &segmentRefs{layout: layout}
	if dedup {
		refs.remap = remap
	}
	if err := pl.encode(p, refs, sl, align); err != nil {
		return nil, err
	}
	return pl, nil
}

// placePayloads places the segments written (pl.unique) after the program,
// each aligned and, with opts.PageCongruent, at the page offset of its
// source; it returns the layout and the segment sizes.
func (pl *writePlan) placePayloads(opts *WriteOptions, align uint64) (*segmentLayout, []uint64, error) {
	sizes := make([]uint64, len(pl.unique))
	var anchors []anchor
	if opts != nil && opts.PageCongruent {
		anchors = make([]anchor, len(pl.unique))
	}
	for k, i := range pl.unique {
		sizes[k] = uint64(pl.srcs[i].Size())
		if anchors != nil {
			anchors[k] = anchorOf(pl.srcs[i], pl.srcs[i].Size(), opts.CongruentAnyReader)
		}
	}
	sl, k, err := placeSegments(sizes, anchors, align)
	if err != nil {
		return nil, nil, &SegmentError{Index: pl.unique[k], Err: err}
	}
	return sl, sizes, nil
}

// encode encodes p with its segment references resolved through refs and
// sets the head of the file: the bare flatbuffer, or with the extended
// header when the program has segment data.
func (pl *writePlan) encode(p *Program, refs *segmentRefs, sl *segmentLayout, align uint64) error {
	// Like ExecuTorch's serializer, write the header only when a segment
	// holds a byte, or else when the program loads data from a segment:
	// the runtime cannot locate a segment without the header, even an
	// empty one (upstream never writes that case; it keeps empty delegate
	// blobs INLINE, and an all-empty constant segment is rare).
	needHeader := sl.hasData || refersToSegment(p)
	var reserve int64
	if needHeader {
		reserve = wrHeaderPad
	}
	fb, err := encodeProgram(p, refs, reserve)
	if err != nil {
		return err
	}
	// ExecuTorch reads 64 head bytes before anything else, so a shorter
	// file cannot be loaded. Zeros after the tables are not part of any
	// table, so a tiny program is simply padded.
	if n := len(fb); n < wrMinFileSize {
		fb = append(fb, make([]byte, wrMinFileSize-n)...)
	}
	pl.region = fb
	pl.info.ProgramSize, pl.info.Size = int64(len(fb)), int64(len(fb))
	if !needHeader {
		return nil
	}
	// Fill the room encodeProgram left for the extended header and place
	// the segment base after the region.
	programSize := uint64(len(fb))
	base := sl.base(programSize, align)
	h := &ExtendedHeader{
		Magic:             "eh00",
		Length:            wrHeaderLength,
		ProgramSize:       programSize,
		SegmentBaseOffset: base,
		SegmentDataSize:   sl.dataSize,
	}
	if base+sl.dataSize > math.MaxInt64 {
		return fmt.Errorf("pte: write: file would be %d+%d bytes", base, sl.dataSize)
	}
	putHeader(fb, h)
	pl.segmentBase = base
	pl.info.Header = h
	pl.info.Size = int64(base + sl.dataSize)
	return nil
}

// checkSources refuses a nil payload source.
func checkSources(segments []*io.SectionReader) error {
	for i, s := range segments {
		if s == nil {
			return &SegmentError{Index: i, Err: errors.New("nil source")}
		}
	}
	return nil
}

// refersToSegment reports whether p loads data from a segment: a delegate
// keeps its data in one, the constant segment lists constants, or there is
// named or mutable data.
func refersToSegment(p *Program) bool {
	if cs := p.ConstantSegment; cs != nil && len(cs.Offsets) > 1 {
		return true
	}
	if len(p.NamedData) > 0 || len(p.MutableDataSegments) > 0 {
		return true
	}
	for _, ep := range p.executionPlan {
		if ep == nil {
			continue
		}
		for _, d := range ep.Delegates {
			if d != nil && d.Processed != nil && d.Processed.Location == DataLocationSEGMENT {
				return true
			}
		}
	}
	return false
}

// roundUp rounds x up to a multiple of a (a > 0); on overflow the result is
// smaller than x.
func roundUp(x, a uint64) uint64 {
	r := x % a
	if r == 0 {
		return x
	}
	return x + (a - r)
}

// countingWriter tracks the output position. Writes go through bw, so
// that a program of many small segments is not written a few bytes per
// system call; flush bw before writing to w another way.
type countingWriter struct {
	w   io.Writer
	bw  *bufio.Writer
	pos int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.bw.Write(b)
	c.pos += int64(n)
	return n, err
}

var zeros [4096]byte

// padTo writes zero bytes up to position to.
func (c *countingWriter) padTo(to int64) error {
	for c.pos < to {
		n := min(to-c.pos, int64(len(zeros)))
		if _, err := c.Write(zeros[:n]); err != nil {
			return err
		}
	}
	return nil
}

// copyBufferSize bounds the memory a segment copy uses.
const copyBufferSize = 1 << 20

// writeBufferSize is the output buffer: copies of at least its size go
// around it.
const writeBufferSize = 64 << 10

func (pl *writePlan) writeTo(w io.Writer) (*WriteInfo, error) {
	cw := &countingWriter{w: w, bw: bufio.NewWriterSize(w, writeBufferSize)}
	if _, err := cw.Write(pl.region); err != nil {
		return nil, fmt.Errorf("pte: write: %w", err)
	}
	if err := cw.padTo(int64(pl.segmentBase)); err != nil {
		return nil, fmt.Errorf("pte: write: %w", err)
	}
	pc := &payloadCopier{cw: cw, writeback: pl.writeback}
	for k, i := range pl.unique {
		seg := pl.info.Segments[k]
		if err := cw.padTo(int64(pl.segmentBase + seg.Offset)); err != nil {
			return nil, fmt.Errorf("pte: write: %w", err)
		}
		if err := pc.copy(pl.srcs[i], int64(seg.Size)); err != nil {
			return nil, &SegmentError{Index: i, Err: err}
		}
	}
	if err := cw.bw.Flush(); err != nil {
		return nil, fmt.Errorf("pte: write: %w", err)
	}
	if cw.pos != pl.info.Size {
		return nil, fmt.Errorf("pte: write: wrote %d bytes, layout says %d", cw.pos, pl.info.Size)
	}
	return pl.info, nil
}
