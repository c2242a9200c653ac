package pte

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
)

// DefaultTensorAlignment is the alignment of constant tensors inside the
// constant segment that ExecuTorch's serializer uses by default
// (constant_tensor_alignment).
const DefaultTensorAlignment = 16

// ConstantSegment lays out constant tensor data the way ExecuTorch's
// serializer builds the constant segment, for Program.ConstantSegment and
// one segment payload of Write.
//
// tensors are the constants in data_buffer_idx order starting at 1: index 0
// is the placeholder reserved for non-constant tensors and takes no bytes.
// The tensors are concatenated, each followed by zero bytes up to a
// multiple of alignment except the last. 0 means DefaultTensorAlignment;
// alignment 1 packs them with no padding, the layout of a mutable data
// segment.
//
// offsets has len(tensors)+1 entries: offsets[0] is the placeholder 0 and
// offsets[i] is where tensors[i-1] starts, so
//
//	p.ConstantSegment = &SubsegmentOffsets{SegmentIndex: k, Offsets: offsets}
//
// with payload as segment k of Write. payload reads nothing until it is
// read; it is a Composite of the tensor sections and zero padding, so Write
// copies tensors that are sections of files with copy_file_range.
func ConstantSegment(tensors []*io.SectionReader, alignment uint64) (offsets []uint64, payload *io.SectionReader, err error) {
	if alignment == 0 {
		alignment = DefaultTensorAlignment
	}
	if alignment > math.MaxInt32 {
		return nil, nil, fmt.Errorf("pte: constant segment: tensor alignment %d is larger than %d", alignment, math.MaxInt32)
	}
	offsets = make([]uint64, 1, len(tensors)+1)
	c := &concatReaderAt{}
	var end int64
	for i, t := range tensors {
		if t == nil {
			return nil, nil, fmt.Errorf("pte: constant segment: tensor %d (data_buffer_idx %d) has a nil source", i, i+1)
		}
		n := t.Size()
		if n > math.MaxInt64-end-int64(alignment) {
			return nil, nil, fmt.Errorf("pte: constant segment: tensor %d (data_buffer_idx %d) of %d bytes overflows the segment size", i, i+1, n)
		}
		offsets = append(offsets, uint64(end))
		c.add(t)
		end += n
		if i < len(tensors)-1 {
			if pad := int64(roundUp(uint64(end), alignment)) - end; pad > 0 {
				c.add(io.NewSectionReader(zeroReaderAt{}, 0, pad))
				end += pad
			}
		}
	}
	return offsets, io.NewSectionReader(c, 0, end), nil
}

// zeroReaderAt reads zeros, endlessly.
type zeroReaderAt struct{}

func (zeroReaderAt) ReadAt(p []byte, off int64) (int, error) {
	clear(p)
	return len(p), nil
}

// concatReaderAt is the concatenation of sections, a Composite.
type concatReaderAt struct {
	parts  []*io.SectionReader
	starts []int64 // starts[i] is the offset of parts[i]
	size   int64
}

func (c *concatReaderAt) add(s *io.SectionReader) {
	if s.Size() == 0 {
		return
	}
	c.parts = append(c.parts, s)
	c.starts = append(c.starts, c.size)
	c.size += s.Size()
}

// SegmentParts returns the sections, in order.
func (c *concatReaderAt) SegmentParts() []*io.SectionReader { return c.parts }

// ReadAt reads from the parts that hold bytes [off, off+len(p)).
func (c *concatReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("pte: negative offset")
	}
	if off >= c.size {
		return 0, io.EOF
	}
	// The last part starting at or before off.
	i := sort.Search(len(c.starts), func(i int) bool { return c.starts[i] > off }) - 1
	n := 0
	for ; i < len(c.parts) && n < len(p); i++ {
		pos := off + int64(n) - c.starts[i]
		want := int(min(int64(len(p)-n), c.parts[i].Size()-pos))
		k, err := c.parts[i].ReadAt(p[n:n+want], pos)
		n += k
		if k < want {
			if err == nil || err == io.EOF {
				err = fmt.Errorf("constant segment part %d ended after %d of %d bytes: %w", i, pos+int64(k), c.parts[i].Size(), io.ErrUnexpectedEOF)
			}
			return n, err
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
