package pte

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrNoHeadRoom is returned (wrapped) by File.EncodeHead when the program,
// encoded, does not fit before the file's segment base.
var ErrNoHeadRoom = errors.New("pte: the program does not fit before the segment base")

// EncodeHead encodes p as a replacement for the head of f: the 8-byte
// prefix, an "eh00" extended header that keeps f's segment base and segment
// data size, and the tables, with f's segment table in place of
// p.Segments, so that every segment of f stays where it is. It is what an
// in-place edit of a program's metadata (a re-bake of compile specs)
// writes over bytes [0, len(head)) of the file; the bytes from there up
// to the segment base are padding that no reader looks at.
//
// It refuses a file without an extended header or without segment data
// (there the flatbuffer is the whole file) and, with an error wrapping
// ErrNoHeadRoom, a program that ends past the segment base. The result is
// read back with NewFile, laid over f's size, before it is returned, as
// Write does; a program that would not read back is a *VerifyError.
func (f *File) EncodeHead(p *Program) ([]byte, error) {
	if p == nil {
		return nil, errors.New("pte: encode head: nil program")
	}
	h := f.Header
	if h == nil || h.SegmentBaseOffset == 0 {
		return nil, errors.New("pte: encode head: the file has no segment base (no extended header or no segment data), so its head cannot be rewritten alone")
	}
	p = p.decoded()
	if err := checkReferences(p, len(f.Program.Segments)); err != nil {
		return nil, err
	}
	refs := &segmentRefs{layout: f.Program.Segments}
	head, err := encodeProgram(p, refs, wrHeaderPad)
	if err != nil {
		return nil, err
	}
	programSize := uint64(len(head))
	if programSize > h.SegmentBaseOffset {
		return nil, fmt.Errorf("%w: it needs %d bytes, the segment base is at %d", ErrNoHeadRoom, programSize, h.SegmentBaseOffset)
	}
	putHeader(head, &ExtendedHeader{
		Magic:             magicEH00,
		Length:            wrHeaderLength,
		ProgramSize:       programSize,
		SegmentBaseOffset: h.SegmentBaseOffset,
		SegmentDataSize:   h.SegmentDataSize,
	})
	if _, err := readBack(head, f.Size, OpenOptions{}, "encode head"); err != nil {
		return nil, err
	}
	return head, nil
}

// putHeader writes h into the room encodeProgram left for it in region,
// bytes [8, 8+wrHeaderPad).
func putHeader(region []byte, h *ExtendedHeader) {
	head := region[:8+wrHeaderPad]
	copy(head[8:12], h.Magic)
	binary.LittleEndian.PutUint32(head[12:], h.Length)
	binary.LittleEndian.PutUint64(head[16:], h.ProgramSize)
	binary.LittleEndian.PutUint64(head[24:], h.SegmentBaseOffset)
	binary.LittleEndian.PutUint64(head[32:], h.SegmentDataSize)
	clear(head[40 : 8+wrHeaderPad])
}
