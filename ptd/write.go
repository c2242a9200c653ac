package ptd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/ptekit/ptekit/internal/atomicfile"
	"github.com/ptekit/ptekit/internal/fbs/flattensor"
)

// SegmentAlignment is the alignment Write gives the segment area and each
// segment (relative to the base), as ExecuTorch's serializer does by default.
const SegmentAlignment = 16

// Data is the content of a .ptd file, for Write: named data entries and
// the payload of each segment.
type Data struct {
	// Version is FlatTensor.version.
	Version uint32
	// NamedData lists the keys; SegmentIndex indexes Segments.
	NamedData []NamedData
	// Segments holds the payload of each segment, read when written.
	Segments []*io.SectionReader

	// src, when set, is the file Contents returned this Data for, with
	// what it returned (origND is src's entries, whose layouts d does not
	// share): Write copies the file verbatim while nothing was changed.
	src      *File
	origND   []NamedData
	origSegs []*io.SectionReader
}

// Contents returns f's content as a Data whose segments read from f. Write
// reproduces f byte for byte from it as long as it is not modified.
func (f *File) Contents() (*Data, error) {
	d := &Data{Version: f.Version, src: f}
	for i := range f.Segments {
		off, size, err := f.segmentRange(i, "")
		if err != nil {
			return nil, err
		}
		d.Segments = append(d.Segments, io.NewSectionReader(f.r, off, size))
	}
	for _, nd := range f.NamedData {
		if nd.Layout != nil {
			l := *nd.Layout
			l.Sizes, l.DimOrder = slices.Clone(l.Sizes), slices.Clone(l.DimOrder)
			nd.Layout = &l
		}
		d.NamedData = append(d.NamedData, nd)
	}
	// The entries to compare with are f's own: d's layouts are copies,
	// so an edit of one in place shows.
	d.origND = f.NamedData
	d.origSegs = slices.Clone(d.Segments)
	return d, nil
}

// unchanged reports whether d is still what Contents returned.
func (d *Data) unchanged() bool {
	if d.src == nil || d.Version != d.src.Version || !slices.Equal(d.Segments, d.origSegs) {
		return false
	}
	return slices.EqualFunc(d.NamedData, d.origND, func(nd, o NamedData) bool {
		return nd.Key == o.Key && nd.SegmentIndex == o.SegmentIndex && nd.KeyAbsent == o.KeyAbsent && (nd.Layout == nil) == (o.Layout == nil) &&
			(nd.Layout == nil || nd.Layout.ScalarType == o.Layout.ScalarType && slices.Equal(nd.Layout.Sizes, o.Layout.Sizes) &&
				slices.Equal(nd.Layout.DimOrder, o.Layout.DimOrder))
	})
}

// WriteInfo describes a written file.
type WriteInfo struct {
	// Size is the number of bytes written.
	Size int64
	// Header is the header written.
	Header Header
	// Verbatim is set when the source file was copied unchanged.
	Verbatim bool
}

// Write writes d as a .ptd file to w. Data from File.Contents that was not
// modified is copied byte for byte, streamed from its file. Otherwise the file is encoded afresh: the
// prefix, the "FH01" header, the FlatTensor flatbuffer, then the segments,
// each aligned to SegmentAlignment and streamed from its reader. A file in
// the pre-2025-06 layout can only be copied.
func Write(w io.Writer, d *Data) (*WriteInfo, error) {
	if d.unchanged() {
		f := d.src
		n, err := io.Copy(w, io.NewSectionReader(f.r, 0, f.Size))
		if err != nil {
			return nil, fmt.Errorf("ptd: copying %d-byte file: %w", f.Size, err)
		}
		return &WriteInfo{Size: n, Header: f.Header, Verbatim: true}, nil
	}
	if d.src != nil && d.src.Legacy != nil {
		return nil, errors.New("ptd: a file in the pre-2025-06 FlatTensor layout can be copied but not re-encoded")
	}
	head, h, offs, err := encode(d)
	if err != nil {
		return nil, err
	}
	cw := &countWriter{w: w}
	if _, err := cw.Write(head); err != nil {
		return nil, err
	}
	// Pad to the segment base even with no segment: the file must reach
	// segment_base_offset + segment_data_size, or it does not open.
	if err := cw.zeros(int64(h.SegmentBaseOffset)); err != nil {
		return nil, err
	}
	for i, s := range d.Segments {
		if err := cw.zeros(int64(h.SegmentBaseOffset + offs[i])); err != nil {
			return nil, err
		}
		n, err := io.Copy(cw, io.NewSectionReader(s, 0, s.Size()))
		if err != nil {
			return nil, fmt.Errorf("ptd: segment %d: %w", i, err)
		}
		if n != s.Size() {
			return nil, fmt.Errorf("ptd: segment %d: read %d of %d bytes", i, n, s.Size())
		}
	}
	return &WriteInfo{Size: cw.n, Header: h}, nil
}

// encode builds the prefix, header and flatbuffer, and the relative offset
// of each segment.
func encode(d *Data) ([]byte, Header, []uint64, error) {
	offs := make([]uint64, len(d.Segments))
	var end uint64
	for i, s := range d.Segments {
		if s == nil {
			return nil, Header{}, nil, fmt.Errorf("ptd: segment %d has no reader", i)
		}
		offs[i] = roundUp(end, SegmentAlignment)
		end = offs[i] + uint64(s.Size())
	}
	for i, nd := range d.NamedData {
		if nd.SegmentIndex >= uint32(len(d.Segments)) {
			return nil, Header{}, nil, fmt.Errorf("ptd: named_data[%d] (%q): segment index %d out of range (%d segments)", i, nd.Key, nd.SegmentIndex, len(d.Segments))
		}
	}
	b := flatbuffers.NewBuilder(1024)
	nds := encodeNamedData(b, d.NamedData)
	segs := make([]flatbuffers.UOffsetT, len(d.Segments))
	for i, s := range d.Segments {
		flattensor.DataSegmentStart(b)
		flattensor.DataSegmentAddOffset(b, offs[i])
		flattensor.DataSegmentAddSize(b, uint64(s.Size()))
		segs[i] = flattensor.DataSegmentEnd(b)
	}
	vec := func(start func(*flatbuffers.Builder, int) flatbuffers.UOffsetT, xs []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
		start(b, len(xs))
		for i := len(xs) - 1; i >= 0; i-- {
			b.PrependUOffsetT(xs[i])
		}
		return b.EndVector(len(xs))
	}
	segVec := vec(flattensor.FlatTensorStartSegmentsVector, segs)
	ndVec := vec(flattensor.FlatTensorStartNamedDataVector, nds)
	flattensor.FlatTensorStart(b)
	flattensor.FlatTensorAddVersion(b, d.Version)
	flattensor.FlatTensorAddSegments(b, segVec)
	flattensor.FlatTensorAddNamedData(b, ndVec)
	b.FinishWithFileIdentifier(flattensor.FlatTensorEnd(b), []byte(Identifier))
	fb := b.FinishedBytes()
	// Insert the header after the identifier: everything after byte 8
	// moves by MinHeaderLength (a multiple of 8, so alignment holds), and
	// only the root offset, the one absolute offset, changes.
	out := slices.Concat(fb[:8], make([]byte, MinHeaderLength), fb[8:])
	binary.LittleEndian.PutUint32(out, binary.LittleEndian.Uint32(fb)+MinHeaderLength)
	h := Header{Length: MinHeaderLength, FlatbufferOffset: HeaderOffset + MinHeaderLength,
		FlatbufferSize: uint64(len(fb) - 8), SegmentDataSize: end}
	h.SegmentBaseOffset = roundUp(uint64(len(out)), SegmentAlignment)
	putHeader(out[HeaderOffset:], h)
	return out, h, offs, nil
}

// encodeNamedData adds the named_data tables to b, in order, and returns
// their offsets. An absent key (NamedData.KeyAbsent with no key) is left
// out of its table, as the reader found it.
func encodeNamedData(b *flatbuffers.Builder, named []NamedData) []flatbuffers.UOffsetT {
	nds := make([]flatbuffers.UOffsetT, len(named))
	for i, nd := range named {
		var key, layout flatbuffers.UOffsetT
		if !nd.KeyAbsent || nd.Key != "" {
			key = b.CreateString(nd.Key)
		}
		if l := nd.Layout; l != nil {
			flattensor.TensorLayoutStartSizesVector(b, len(l.Sizes))
			for j := len(l.Sizes) - 1; j >= 0; j-- {
				b.PrependInt32(l.Sizes[j])
			}
			sizes := b.EndVector(len(l.Sizes))
			dims := b.CreateByteVector(l.DimOrder)
			flattensor.TensorLayoutStart(b)
			flattensor.TensorLayoutAddScalarType(b, flattensor.ScalarType(l.ScalarType))
			flattensor.TensorLayoutAddSizes(b, sizes)
			flattensor.TensorLayoutAddDimOrder(b, dims)
			layout = flattensor.TensorLayoutEnd(b)
		}
		flattensor.NamedDataStart(b)
		if key != 0 {
			flattensor.NamedDataAddKey(b, key)
		}
		flattensor.NamedDataAddSegmentIndex(b, nd.SegmentIndex)
		if layout != 0 {
			flattensor.NamedDataAddTensorLayout(b, layout)
		}
		nds[i] = flattensor.NamedDataEnd(b)
	}
	return nds
}

// putHeader writes h at b[0:40].
func putHeader(b []byte, h Header) {
	le := binary.LittleEndian
	copy(b, HeaderMagic)
	le.PutUint32(b[4:], h.Length)
	le.PutUint64(b[8:], h.FlatbufferOffset)
	le.PutUint64(b[16:], h.FlatbufferSize)
	le.PutUint64(b[24:], h.SegmentBaseOffset)
	le.PutUint64(b[32:], h.SegmentDataSize)
}

func roundUp(x, a uint64) uint64 { return (x + a - 1) / a * a }

// countWriter counts bytes and pads with zeros.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// zeros pads to absolute offset to.
func (c *countWriter) zeros(to int64) error {
	var pad [SegmentAlignment]byte
	for c.n < to {
		if _, err := c.Write(pad[:min(int64(len(pad)), to-c.n)]); err != nil {
			return err
		}
	}
	return nil
}

// WriteFile writes d to path like Write, atomically, through
// internal/atomicfile: path is either untouched or complete, and nothing is
// left behind on error. Segments are read before the file is put in place,
// so d may read from the file at path. A new file gets mode 0666 less the
// umask; an existing one keeps its permission bits. When path is a
// symbolic link, the file it points to is replaced.
func WriteFile(path string, d *Data) (*WriteInfo, error) {
	f, err := atomicfile.Create(path, nil)
	if err != nil {
		return nil, fmt.Errorf("ptd: %w", err)
	}
	defer f.Abort()
	info, err := Write(f.OSFile(), d)
	if err != nil {
		return nil, err
	}
	if err := f.Commit(); err != nil {
		return nil, fmt.Errorf("ptd: %w", err)
	}
	return info, nil
}
