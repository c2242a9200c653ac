package pte

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// ErrNotSequential is matched (errors.Is) by the error a SequentialSource
// returns when it is read anywhere but at its next unread byte.
var ErrNotSequential = errors.New("pte: sequential source read out of order")

// SequentialSource returns a segment source for Write whose size bytes come
// from r, such as a pipe or standard input, so that a payload that is not a
// file need not be staged in one first.
//
// The source can be read once, from start to end: each ReadAt must start at
// the next unread byte, and any other read fails with an error matching
// ErrNotSequential. Write reads every segment exactly once, in order, so it
// can copy such a source; with WriteOptions.Dedup, a sequential source is
// never compared with other payloads (that would read it twice) and is
// written as a segment of its own, unless the very same source is given
// twice. If r ends before size bytes, Write fails with a *SegmentError
// matching io.ErrUnexpectedEOF.
func SequentialSource(r io.Reader, size int64) *io.SectionReader {
	return io.NewSectionReader(&sequentialReaderAt{r: r}, 0, size)
}

// sequentialReaderAt serves ReadAt calls from an io.Reader, in order.
type sequentialReaderAt struct {
	mu   sync.Mutex
	r    io.Reader
	next int64 // offset of the next unread byte
}

func (s *sequentialReaderAt) ReadAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if off != s.next {
		return 0, fmt.Errorf("%w: read at offset %d, but the next unread byte is at %d (a sequential source is read once, from start to end)",
			ErrNotSequential, off, s.next)
	}
	n, err := io.ReadFull(s.r, p)
	s.next += int64(n)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.EOF // the source ended: ReadAt's way of saying so
	}
	return n, err
}

// partsSequential reports whether any part (see sourceParts) reads a
// SequentialSource.
func partsSequential(parts []*io.SectionReader) bool {
	for _, part := range parts {
		if ra, _, _ := part.Outer(); ra != nil {
			if _, ok := ra.(*sequentialReaderAt); ok {
				return true
			}
		}
	}
	return false
}
