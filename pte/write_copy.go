package pte

import (
	"fmt"
	"io"
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
		start := f.Header.SegmentBaseOffset + s.Offset
		end := start + s.Size
		if start < s.Offset || end < start || end > uint64(f.Size) {
			return nil, &FormatError{Off: -1, Path: path,
				Msg:  fmt.Sprintf("segment base %d + offset %d + size %d is past the end of the %d-byte file", f.Header.SegmentBaseOffset, s.Offset, s.Size, f.Size),
				Code: CodeInvalidArgument}
		}
		out[i] = io.NewSectionReader(f.ReaderAt(), int64(start), int64(s.Size))
	}
	return out, nil
}
