package ptd

import (
	"fmt"
	"io"

	"github.com/ptekit/ptekit/pte"
)

// Lookup finds key as FlatTensorDataMap does: the first named_data entry
// whose key equals it as a C string (compared up to the first NUL), then
// the segment checks. It returns the entry's index in NamedData. Errors are
// *FormatError: an unknown key has Code CodeNotFound, a segment index out of
// range or a segment past the segment area CodeInvalidExternalData.
//
// The segment check mirrors an upstream quirk: the segment's relative
// offset + size is compared with the absolute segment_base_offset +
// segment_data_size, so a segment past segment_data_size but inside the
// file passes.
func (f *File) Lookup(key string) (int, error) {
	if f.Legacy != nil {
		return -1, legacyErr(f, key)
	}
	want := cString(key)
	for i, nd := range f.NamedData {
		if cString(nd.Key) != want {
			continue
		}
		if nd.SegmentIndex >= uint32(len(f.Segments)) {
			return i, &FormatError{Off: f.ndPos[i], Path: fmt.Sprintf("named_data[%d].segment_index", i), Code: pte.CodeInvalidExternal,
				Msg: fmt.Sprintf("key %q: segment index %d out of range (%d segments)", key, nd.SegmentIndex, len(f.Segments))}
		}
		s := f.Segments[nd.SegmentIndex]
		end := f.Header.SegmentBaseOffset + f.Header.SegmentDataSize // u64, wraps as upstream's does
		if s.Offset+s.Size > end {
			return i, &FormatError{Off: f.segPos[nd.SegmentIndex], Path: fmt.Sprintf("segments[%d]", nd.SegmentIndex), Code: pte.CodeInvalidExternal,
				Msg: fmt.Sprintf("key %q: segment offset %d + size %d is past segment_base_offset + segment_data_size %d", key, s.Offset, s.Size, end)}
		}
		return i, nil
	}
	return -1, &FormatError{Off: -1, Path: "named_data", Code: pte.CodeNotFound, Msg: fmt.Sprintf("no key %q", key)}
}

// segmentRange returns the absolute file range of Segments[i]; a range
// that overflows or runs past the end of the file fails the data loader
// with InvalidArgument.
func (f *File) segmentRange(i int, key string) (off, size int64, err *FormatError) {
	if i < 0 || i >= len(f.Segments) {
		return 0, 0, &FormatError{Off: -1, Path: "segments", Code: pte.CodeInvalidExternal,
			Msg: fmt.Sprintf("segment index %d out of range (%d segments)", i, len(f.Segments))}
	}
	s := f.Segments[i]
	start := f.Header.SegmentBaseOffset + s.Offset
	what := ""
	if key != "" {
		what = fmt.Sprintf("key %q: ", key)
	}
	if start < s.Offset || start+s.Size < start || start+s.Size > uint64(f.Size) {
		return 0, 0, &FormatError{Off: f.segPos[i], Path: fmt.Sprintf("segments[%d]", i), Code: pte.CodeInvalidArgument,
			Msg: fmt.Sprintf("%ssegment bytes at segment_base_offset %d + offset %d, size %d, are not inside the %d-byte file",
				what, f.Header.SegmentBaseOffset, s.Offset, s.Size, f.Size)}
	}
	return int64(start), int64(s.Size), nil
}

// Segment returns the bytes of Segments[i].
func (f *File) Segment(i int) (*pte.Payload, error) { return f.payload(i, "") }

// payload returns the bytes of Segments[i], whose key (for errors) is key.
func (f *File) payload(i int, key string) (*pte.Payload, error) {
	off, size, err := f.segmentRange(i, key)
	if err != nil {
		return nil, err
	}
	return &pte.Payload{SectionReader: io.NewSectionReader(f.r, off, size), FileOffset: off}, nil
}

// Data returns the bytes stored under key, as FlatTensorDataMap::get_data
// does: Lookup, then the whole segment. Nothing is read until the payload
// is.
func (f *File) Data(key string) (*pte.Payload, error) {
	i, err := f.Lookup(key)
	if err != nil {
		return nil, err
	}
	return f.payload(int(f.NamedData[i].SegmentIndex), key)
}
