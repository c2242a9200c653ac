package testkit

import (
	"cmp"
	"io"
	"slices"
	"sync"
)

// RangeReaderAt is an [io.ReaderAt] that passes reads on to R and records
// the range of each (the bytes R returned), for tests that check that a
// reader reads no byte twice: [RangeReaderAt.Reread] finds any overlap,
// however the reads are cut. Memory grows with the number of reads, not
// with the bytes read.
//
// It is safe for concurrent use when R is. The zero value with R set is
// ready to use; a RangeReaderAt must not be copied after first use.
type RangeReaderAt struct {
	// R is the reader read from.
	R io.ReaderAt

	mu     sync.Mutex
	ranges []Range
}

// Range is the bytes from Off to End (excluded) of a reader.
type Range struct{ Off, End int64 }

// NewRangeReaderAt returns a RangeReaderAt reading from r.
func NewRangeReaderAt(r io.ReaderAt) *RangeReaderAt { return &RangeReaderAt{R: r} }

// ReadAt reads from R and records the range of the n bytes R returned
// (also when it returns an error).
func (c *RangeReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.R.ReadAt(p, off)
	if n > 0 {
		c.mu.Lock()
		c.ranges = append(c.ranges, Range{off, off + int64(n)})
		c.mu.Unlock()
	}
	return n, err
}

// Reset forgets the reads recorded so far (those of opening a file, say).
func (c *RangeReaderAt) Reset() {
	c.mu.Lock()
	c.ranges = nil
	c.mu.Unlock()
}

// Bytes returns the number of bytes read since the last Reset.
func (c *RangeReaderAt) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, r := range c.ranges {
		n += r.End - r.Off
	}
	return n
}

// Ranges returns the ranges read since the last Reset, in the order read.
func (c *RangeReaderAt) Ranges() []Range {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ranges)
}

// Reread returns how many bytes were read more than once since the last
// Reset (a byte read three times counts once), and the first range of
// them.
func (c *RangeReaderAt) Reread() (n int64, first Range) {
	c.mu.Lock()
	rs := slices.Clone(c.ranges)
	c.mu.Unlock()
	slices.SortFunc(rs, func(x, y Range) int { return cmp.Compare(x.Off, y.Off) })
	// Sweep in offset order: end is the furthest a range read so far
	// reaches; a range starting before it overlaps one before it, and
	// twice the furthest a byte was read twice.
	var end, twice int64
	first = Range{-1, -1}
	for _, r := range rs {
		lo, hi := max(r.Off, twice), min(r.End, end)
		if lo < hi {
			n += hi - lo
			if first.Off < 0 {
				first = Range{lo, hi}
			}
		}
		twice = max(twice, min(r.End, end))
		end = max(end, r.End)
	}
	return n, first
}
