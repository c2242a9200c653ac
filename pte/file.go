package pte

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/ptekit/ptekit/internal/quote"
	"io"
	"math"
	"os"
	"sync"
	"sync/atomic"

	"github.com/ptekit/ptekit/internal/fbverify"
)

// A File is an open .pte program. Only the 8-byte prefix, the extended
// header and the flatbuffer region are read when it is opened; segment,
// constant, named and delegate payloads are read on demand through Payload
// handles.
//
// A File is safe for concurrent use by multiple goroutines as long as none
// of them modifies Program or calls Close: its methods only read, and the
// reader a File was created from is used through ReadAt only (an *os.File,
// as Open uses, allows concurrent ReadAt calls). Each returned Payload has
// its own read offset; share one between goroutines only through ReadAt.
type File struct {
	// Size is the file size in bytes.
	Size int64
	// RootOffset is the u32 at byte 0: the offset of the root Program table.
	RootOffset uint32
	// Identifier is the FlatBuffers file identifier at bytes 4..8, "ET12".
	Identifier string
	// Header is the extended header, nil when the file has none.
	Header *ExtendedHeader
	// Program is the decoded, verified program. Its byte vectors
	// (Buffer.Storage, BackendDelegateInlineData.Data, CompileSpec.Value)
	// share memory with the File's copy of the flatbuffer region: treat them
	// as read-only. Its plans are read through its methods (Plan, Plans,
	// ...), which answer the same however the File was opened.
	Program *Program

	r      io.ReaderAt
	closer io.Closer
	region []byte
	dec    *fbDecoder
	// lazy is OpenOptions.LazyPlans: plans are decoded by planAt, each with
	// its own decoder (recording positions when positions is set).
	lazy, positions bool
	// external[i] is whether lazily read plan i has a tensor whose data
	// is EXTERNAL, noted as Open checks its values; nil when none has.
	external []bool
	// Truncated is the error of a file shorter than its header says,
	// opened with OpenOptions.Truncated; nil otherwise.
	Truncated *TruncatedError

	// fbWarnings are what the FlatBuffers verifier accepted, as ExecuTorch
	// does, but flagged; Verify reports them.
	fbWarnings []fbverify.Error

	// nameLookups counts PlanIndex calls; byName is the index of plan
	// names PlanIndex builds once they are many (see planIndexScans).
	nameLookups atomic.Int64
	byNameOnce  sync.Once
	byName      map[string]int
}

// DefaultMaxProgramSize is the largest flatbuffer region Open and NewFile
// read: the FlatBuffers limit (FLATBUFFERS_MAX_BUFFER_SIZE, 2 GiB - 1).
const DefaultMaxProgramSize = rdMaxRegionSize

// OpenOptions tunes how a program is read. A nil *OpenOptions, like the
// zero value, gives the behaviour of Open and NewFile.
type OpenOptions struct {
	// MaxProgramSize caps the flatbuffer region (the prefix, the extended
	// header and the tables, with any inline constant or delegate data:
	// everything before the segments), which is read into memory whole
	// before it is verified. A file whose region is larger is refused with
	// a *FormatError of Code CodeMemoryAllocation before anything is
	// allocated for it. Segments are never read into memory when a file is
	// opened, so they do not count. 0 means DefaultMaxProgramSize; a
	// larger value is lowered to it. Services that open untrusted files
	// should set a limit that fits their memory.
	MaxProgramSize int64
	// Truncated opens a file that ends before the segment data its header
	// promises, as long as the program region itself is whole, so that a
	// viewer can still show its structure: File.Truncated holds the error
	// (also Verify's first finding), and a payload past the end fails when
	// it is read. ExecuTorch refuses such a file; so does Open.
	Truncated bool
	// LazyPlans is a hint about memory that changes nothing callers see:
	// the execution plans are left in the verified region when the file is
	// opened, and the Program decodes each when asked (Plan, Plans,
	// PlanName, ...) and keeps none, rather than holding them all decoded.
	// Open still checks every plan the way ExecuTorch's Program::load
	// does. A viewer that looks at one method at a time then holds little
	// more than the region: a decoded program takes several times the
	// region's size. Every Plan call decodes anew, so keep what you need.
	LazyPlans bool
	// noPositions skips recording where each table was decoded from, for
	// Write's read-back check, which wants a verdict and reads the file
	// again with positions only to report a refusal.
	noPositions bool
	// model, for Write's check, is the program the region was encoded
	// from, taken as its decoding instead of decoding the region again
	// (see writePlan.model). Set with noPositions, never with LazyPlans.
	model *Program
	// region, for Write's check, is the flatbuffer region of the file
	// read, already in memory: it is taken, when it is as long as the
	// header says, instead of reading the region from the file.
	region []byte
}

// ProgramLimitError reports a flatbuffer region larger than
// OpenOptions.MaxProgramSize, before anything is allocated for it. Err is
// the *FormatError with the offending offset (errors.As finds it).
type ProgramLimitError struct {
	Size  uint64 // the region's size as the file states it
	Limit uint64 // the limit in effect
	Err   *FormatError
}

// Error implements error.
func (e *ProgramLimitError) Error() string { return e.Err.Error() }

// Unwrap returns the *FormatError.
func (e *ProgramLimitError) Unwrap() error { return e.Err }

// maxProgramSize returns the effective region limit of o.
func (o *OpenOptions) maxProgramSize() uint64 {
	if o == nil || o.MaxProgramSize <= 0 || o.MaxProgramSize > DefaultMaxProgramSize {
		return DefaultMaxProgramSize
	}
	return uint64(o.MaxProgramSize)
}

// Open opens the named file and reads its program; see NewFile. The caller
// must Close the File.
func Open(name string) (*File, error) {
	return OpenWith(name, nil)
}

// OpenWith is Open with options; nil options give Open's behaviour.
func OpenWith(name string, opts *OpenOptions) (*File, error) {
	osf, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := osf.Stat()
	if err != nil {
		osf.Close()
		return nil, err
	}
	f, err := NewFileWith(osf, fi.Size(), opts)
	if err != nil {
		osf.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f.closer = osf
	return f, nil
}

// Close closes the File. If it was created with NewFile rather than Open,
// Close does nothing to the underlying reader.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	err := f.closer.Close()
	f.closer = nil
	return err
}

// ReaderAt returns the reader the File reads from, for copying payloads
// through untouched.
func (f *File) ReaderAt() io.ReaderAt { return f.r }

// Region returns the file's first bytes as read when it was opened: the
// flatbuffer region (with the prefix and extended header), which the File
// holds for its life. A reader that needs these bytes again, such as a
// pass hashing the whole file, takes them from here rather than reading
// them twice. The slice is the File's own: do not modify it.
func (f *File) Region() []byte { return f.region }

// NewFile reads a program from r, which holds size bytes. It reads the
// 8-byte prefix, the optional extended header and the flatbuffer region,
// verifies the region with a FlatBuffers verifier before decoding it, and
// applies the checks ExecuTorch's Program::load (with InternalConsistency
// verification) applies. It fails on anything that makes the file unreadable
// or that Program::load rejects; the error wraps a *FormatError whose Code
// is the error ExecuTorch would report. Problems that ExecuTorch detects only
// when it loads a method are reported by Verify instead.
//
// A .ptd external-data file or a .bpte bundled program is refused with an
// error that names what it is.
//
// NewFile holds the whole flatbuffer region in memory for the life of the
// File, up to DefaultMaxProgramSize bytes (the file's size when it has no
// extended header); use NewFileWith to set a lower limit for untrusted
// input.
func NewFile(r io.ReaderAt, size int64) (*File, error) {
	return NewFileWith(r, size, nil)
}

// NewFileWith is NewFile with options; nil options give NewFile's
// behaviour.
func NewFileWith(r io.ReaderAt, size int64, opts *OpenOptions) (*File, error) {
	if size < 0 {
		return nil, fmt.Errorf("pte: negative file size %d", size)
	}
	head := make([]byte, min(size, rdHeadBytes))
	if err := readFullAt(r, head, 0); err != nil {
		return nil, fmt.Errorf("pte: reading file head: %w", err)
	}
	if what := foreignFormat(head); what != "" {
		return nil, &FormatError{Off: 4, Path: "file_identifier", Msg: "file is " + what, Code: CodeInvalidProgram}
	}
	if size < rdHeadBytes {
		return nil, &FormatError{Off: size,
			Msg:  fmt.Sprintf("file is %d bytes; ExecuTorch reads %d head bytes before anything else and cannot load it", size, rdHeadBytes),
			Code: CodeInvalidArgument}
	}
	f := &File{Size: size, r: r}
	h, err := parseHeader(head)
	if err != nil {
		return nil, err
	}
	programSize := uint64(size)
	if h != nil {
		if err := checkHeaderSize(h, size); err != nil {
			var te *TruncatedError
			if opts == nil || !opts.Truncated || !errors.As(err, &te) || h.ProgramSize > uint64(size) {
				return nil, err
			}
			f.Truncated = te // the program region is whole: read it
		}
		if h.ProgramSize > uint64(size) {
			return nil, &FormatError{Off: 16, Path: "extended_header.program_size",
				Msg:  fmt.Sprintf("program_size %d is past the end of the %d-byte file", h.ProgramSize, size),
				Code: CodeInvalidArgument}
		}
		programSize = h.ProgramSize
		f.Header = h
	}
	f.RootOffset = uint32(head[0]) | uint32(head[1])<<8 | uint32(head[2])<<16 | uint32(head[3])<<24
	f.Identifier = string(head[4:8])
	if err := checkIdentifier(head); err != nil {
		return nil, err
	}
	if err := checkRegionSize(programSize, f.Header != nil, opts); err != nil {
		return nil, err
	}
	// The region starts with the head already read: each byte is read
	// once.
	if opts != nil && uint64(len(opts.region)) == programSize {
		f.region = opts.region
	} else {
		f.region = make([]byte, programSize)
		if n := copy(f.region, head); n < len(f.region) {
			if err := readFullAt(r, f.region[n:], int64(n)); err != nil {
				return nil, fmt.Errorf("pte: reading %d-byte flatbuffer region: %w", programSize, err)
			}
		}
	}
	v, err := verifyProgramBuffer(f.region)
	if err != nil {
		return nil, err
	}
	f.fbWarnings = v.Warnings
	f.positions = opts == nil || !opts.noPositions
	f.lazy = opts != nil && opts.LazyPlans
	if opts != nil && opts.model != nil {
		f.Program, f.dec = opts.model, &fbDecoder{vec: map[any]uint32{}}
	} else {
		f.Program, f.dec = decodeProgramWith(f.region, v, f.positions, f.lazy)
	}
	if f.lazy {
		f.Program.file = f
	}
	if err := f.checkLoad(); err != nil {
		return nil, err
	}
	return f, nil
}

// checkIdentifier refuses a head (at least 8 bytes) whose file identifier
// is not that of a program this reader supports.
func checkIdentifier(head []byte) error {
	if what := foreignFormat(head); what != "" {
		return &FormatError{Off: 4, Path: "file_identifier", Msg: "file is " + what, Code: CodeInvalidProgram}
	}
	if id := string(head[4:8]); id != identET12 {
		msg := fmt.Sprintf("not an ExecuTorch program: file identifier %q, want %q", id, identET12)
		if id[:2] == "ET" {
			msg = fmt.Sprintf("incompatible program version: file identifier %q, this reader supports %q", id, identET12)
		}
		return &FormatError{Off: 4, Path: "file_identifier", Msg: msg, Code: CodeInvalidProgram}
	}
	return nil
}

// checkRegionSize refuses a flatbuffer region of programSize bytes that
// FlatBuffers cannot address or that is over opts' limit (a
// *ProgramLimitError). Without an extended header (header false) the
// region is the whole file.
func checkRegionSize(programSize uint64, header bool, opts *OpenOptions) error {
	if programSize > rdMaxRegionSize {
		return &FormatError{Off: 16, Path: "extended_header.program_size",
			Msg:  fmt.Sprintf("flatbuffer region of %d bytes exceeds the FlatBuffers limit of %d", programSize, rdMaxRegionSize),
			Code: CodeInvalidProgram}
	}
	if limit := opts.maxProgramSize(); programSize > limit {
		fe := &FormatError{Off: 16, Path: "extended_header.program_size",
			Msg:  fmt.Sprintf("flatbuffer region of %d bytes exceeds OpenOptions.MaxProgramSize %d", programSize, limit),
			Code: CodeMemoryAllocation}
		if !header {
			fe.Off, fe.Path = 0, ""
			fe.Msg = fmt.Sprintf("flatbuffer region (the whole %d-byte file: no extended header) exceeds OpenOptions.MaxProgramSize %d", programSize, limit)
		}
		return &ProgramLimitError{Size: programSize, Limit: limit, Err: fe}
	}
	return nil
}

// HeadSize is how many bytes CheckHead wants: what ExecuTorch reads of a
// program before anything else.
const HeadSize = rdHeadBytes

// CheckHead applies to the first bytes of a program (HeadSize of them, or
// all of a shorter input) the checks NewFileWith makes before it reads
// anything else: the file identifier (a .ptd, a .bpte, an ETDump or any
// other file is refused), the extended header, and the flatbuffer
// region's size against opts.MaxProgramSize. It returns where the program
// ends as its header says (the end of the segment data, or of the region
// when there is none), or -1 when the head does not say: no extended
// header (the region is the whole input), an old header that leaves the
// segment data's size out, or a head too short to tell. A reader of a
// stream, which cannot seek, uses it to refuse a wrong input before
// reading more, and to bound what it reads. A head that passes may still
// be refused by NewFileWith.
func CheckHead(head []byte, opts *OpenOptions) (int64, error) {
	if len(head) < 8 {
		return -1, nil
	}
	if err := checkIdentifier(head); err != nil {
		return -1, err
	}
	if len(head) < rdHeadBytes {
		return -1, nil
	}
	h, err := parseHeader(head)
	if err != nil || h == nil {
		return -1, err
	}
	if err := checkRegionSize(h.ProgramSize, true, opts); err != nil {
		return -1, err
	}
	if h.SegmentBaseOffset == 0 {
		return int64(h.ProgramSize), nil
	}
	if h.SegmentDataSize == 0 {
		return -1, nil
	}
	end := h.SegmentBaseOffset + h.SegmentDataSize
	if end < h.SegmentBaseOffset || end > math.MaxInt64 {
		return -1, &FormatError{Off: 24, Path: "extended_header", Msg: "segment_base_offset + segment_data_size overflows", Code: CodeInvalidProgram}
	}
	return int64(max(end, h.ProgramSize)), nil
}

// readFullAt fills buf from r at off.
func readFullAt(r io.ReaderAt, buf []byte, off int64) error {
	n, err := r.ReadAt(buf, off)
	if n == len(buf) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// Payload is a lazily read byte range of a file, like an io.SectionReader,
// plus where it starts.
type Payload struct {
	*io.SectionReader
	// FileOffset is the absolute offset of the first byte in the file, or -1
	// when the bytes do not come from the file (a modified Program).
	FileOffset int64
}

// Data reads the whole range into memory.
func (p *Payload) Data() ([]byte, error) {
	buf := make([]byte, p.Size())
	if err := readFullAt(p.SectionReader, buf, 0); err != nil {
		return nil, fmt.Errorf("pte: reading %d-byte payload at file offset %d: %w", len(buf), p.FileOffset, err)
	}
	return buf, nil
}

// regionPayload returns a payload over data, the byte vector of owner: over
// the bytes of the flatbuffer region it aliases when the decoder knows
// where it starts, else over data itself.
func (f *File) regionPayload(owner any, data []byte) *Payload {
	if start, known := f.dec.vec[owner]; known && uint64(start)+uint64(len(data)) <= uint64(len(f.region)) {
		return &Payload{SectionReader: io.NewSectionReader(bytes.NewReader(f.region), int64(start), int64(len(data))),
			FileOffset: int64(start)}
	}
	return &Payload{SectionReader: io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), FileOffset: -1}
}

// segmentRange resolves Program.Segments[i] to an absolute file range the
// way ExecuTorch's Program::LoadSegment does, with its error classes.
func (f *File) segmentRange(i int, pathOf func() string, refOff int64) (off, size int64, err error) {
	p := f.Program
	if f.Header == nil || f.Header.SegmentBaseOffset == 0 {
		return 0, 0, &FormatError{Off: refOff, Path: pathOf(),
			Msg:  fmt.Sprintf("segment %d is unreachable: the file has no extended header with a segment base offset", i),
			Code: CodeNotFound}
	}
	if p.Segments == nil {
		return 0, 0, &FormatError{Off: refOff, Path: pathOf(), Msg: "program has no segments table", Code: CodeInvalidProgram}
	}
	if i < 0 || i >= len(p.Segments) {
		return 0, 0, &FormatError{Off: refOff, Path: pathOf(),
			Msg:  fmt.Sprintf("segment index %d out of range (%d segments)", i, len(p.Segments)),
			Code: CodeNotFound}
	}
	start, err := f.segmentSpan(i, f.Header.SegmentBaseOffset)
	if err != nil {
		return 0, 0, err
	}
	return start, int64(p.Segments[i].Size), nil
}

// segmentSpan is the one segment range check: it returns where
// Program.Segments[i] starts when its bytes, at base + offset, lie inside
// the file, and otherwise a *FormatError at the segment's table entry.
func (f *File) segmentSpan(i int, base uint64) (int64, error) {
	s := f.Program.Segments[i]
	// The path and the table's position are found only for an error:
	// Verify and Write's check resolve every segment.
	path := func() string { return fmt.Sprintf("segments[%d]", i) }
	start := base + s.Offset
	if start < s.Offset || start+s.Size < start {
		return 0, &FormatError{Off: f.segmentPos(i), Path: path(),
			Msg: fmt.Sprintf("segment base %d + offset %d + size %d overflows", base, s.Offset, s.Size), Code: CodeInvalidProgram}
	}
	if start+s.Size > uint64(f.Size) {
		return 0, &FormatError{Off: f.segmentPos(i), Path: path(),
			Msg:  fmt.Sprintf("segment bytes [%d, %d) run past the end of the %d-byte file", start, start+s.Size, f.Size),
			Code: CodeInvalidArgument}
	}
	return int64(start), nil
}

// Segment returns the bytes of Program.Segments[i]. It needs the extended
// header (without it ExecuTorch cannot locate segment data).
func (f *File) Segment(i int) (*Payload, error) {
	off, size, err := f.segmentRange(i, func() string { return fmt.Sprintf("segments[%d]", i) }, -1)
	if err != nil {
		return nil, err
	}
	return &Payload{SectionReader: io.NewSectionReader(f.r, off, size), FileOffset: off}, nil
}

// DelegateData returns the processed payload of delegate number delegate
// of execution plan plan (Program.Plan): a slice of
// backend_delegate_data (INLINE) or a segment (SEGMENT). Errors are
// *FormatError: an out-of-range plan or delegate index has Code
// CodeInvalidArgument; the others carry the error class ExecuTorch reports
// when it initializes that delegate.
func (f *File) DelegateData(plan, delegate int) (*Payload, error) {
	ref, err := f.delegateRef(plan, delegate)
	if err != nil {
		return nil, err
	}
	if ref.inline != nil {
		return f.regionPayload(ref.inline, ref.inline.Data), nil
	}
	return &Payload{SectionReader: io.NewSectionReader(f.r, ref.off, ref.size), FileOffset: ref.off}, nil
}

// dataRef is where a delegate's processed data is: an entry of
// backend_delegate_data (inline) or a range of the file.
type dataRef struct {
	inline    *BackendDelegateInlineData
	off, size int64
}

// delegateRef is DelegateData without the Payload, for Verify, which
// only asks whether every delegate's data can be found.
func (f *File) delegateRef(plan, delegate int) (dataRef, error) {
	ref, err := f.delegateRefAt(plan, delegate, false)
	if err != nil && f.lazy && f.positions {
		// A lazily read delegate's positions are recorded only to say
		// where a refusal is: Verify and the views ask for every one.
		return f.delegateRefAt(plan, delegate, true)
	}
	return ref, err
}

// delegateRefAt is delegateRef, recording the delegate's positions when
// positions is set (a File read whole knows them anyway).
func (f *File) delegateRefAt(plan, delegate int, positions bool) (dataRef, error) {
	p := f.Program
	d, dec, err := f.delegateAt(plan, delegate, positions)
	if err != nil {
		return dataRef{}, err
	}
	// Built only for an error: Verify asks for every delegate's data.
	path := func() string { return fmt.Sprintf("execution_plan[%d].delegates[%d].processed", plan, delegate) }
	if d.Processed == nil {
		return dataRef{}, &FormatError{Off: dec.posOf(d), Path: path(), Msg: "delegate has no processed data reference", Code: CodeInvalidProgram}
	}
	ref := d.Processed
	switch ref.Location {
	case DataLocationINLINE:
		if p.BackendDelegateData == nil {
			return dataRef{}, &FormatError{Off: dec.posOf(ref), Path: path() + ".location",
				Msg: "INLINE delegate data but the program has no backend_delegate_data", Code: CodeInvalidProgram}
		}
		if uint64(ref.Index) >= uint64(len(p.BackendDelegateData)) {
			return dataRef{}, &FormatError{Off: dec.posOf(ref), Path: path() + ".index",
				Msg:  fmt.Sprintf("INLINE index %d out of range (%d backend_delegate_data entries)", ref.Index, len(p.BackendDelegateData)),
				Code: CodeNotFound}
		}
		bd := p.BackendDelegateData[ref.Index]
		if bd == nil || bd.Data == nil {
			return dataRef{}, &FormatError{Off: f.dec.posOf(bd), Path: fmt.Sprintf("backend_delegate_data[%d].data", ref.Index),
				Msg: "inline delegate data is absent", Code: CodeInvalidProgram}
		}
		return dataRef{inline: bd}, nil
	case DataLocationSEGMENT:
		off, size, err := f.segmentRange(int(ref.Index), func() string { return path() + ".index" }, dec.posOf(ref))
		if err != nil {
			return dataRef{}, err
		}
		return dataRef{off: off, size: size}, nil
	}
	return dataRef{}, &FormatError{Off: dec.posOf(ref), Path: path() + ".location",
		Msg: fmt.Sprintf("unknown data location %d", ref.Location), Code: CodeInternal}
}

// ConstantData returns constant buffer bufferIndex (a Tensor's
// data_buffer_idx): from the constant segment when
// Program.ConstantSegment lists more than the placeholder offset, else from
// the deprecated inline Program.ConstantBuffer. A constant-segment entry runs
// to the next larger offset or to the segment end, so it may include
// alignment padding after the tensor's bytes.
func (f *File) ConstantData(bufferIndex int) (*Payload, error) {
	p := f.Program
	if cs := p.ConstantSegment; cs != nil && len(cs.Offsets) > 1 {
		path := fmt.Sprintf("constant_segment.offsets[%d]", bufferIndex)
		if bufferIndex < 0 || bufferIndex >= len(cs.Offsets) {
			return nil, &FormatError{Off: f.dec.posOf(cs), Path: "constant_segment.offsets",
				Msg: fmt.Sprintf("constant index %d out of range (%d offsets)", bufferIndex, len(cs.Offsets)), Code: CodeInvalidArgument}
		}
		segOff, segSize, err := f.segmentRange(int(cs.SegmentIndex), func() string { return "constant_segment.segment_index" }, f.dec.posOf(cs))
		if err != nil {
			return nil, err
		}
		start := cs.Offsets[bufferIndex]
		if start > uint64(segSize) {
			return nil, &FormatError{Off: f.dec.posOf(cs), Path: path,
				Msg: fmt.Sprintf("constant offset %d is past the %d-byte constant segment", start, segSize), Code: CodeInvalidArgument}
		}
		end := uint64(segSize)
		for _, o := range cs.Offsets {
			if o > start && o < end {
				end = o
			}
		}
		return &Payload{SectionReader: io.NewSectionReader(f.r, segOff+int64(start), int64(end-start)),
			FileOffset: segOff + int64(start)}, nil
	}
	if bufferIndex < 0 || bufferIndex >= len(p.ConstantBuffer) {
		return nil, &FormatError{Off: -1, Path: "constant_buffer",
			Msg: fmt.Sprintf("constant index %d out of range (%d constant buffers)", bufferIndex, len(p.ConstantBuffer)), Code: CodeInvalidArgument}
	}
	b := p.ConstantBuffer[bufferIndex]
	if b == nil {
		return nil, &FormatError{Off: -1, Path: fmt.Sprintf("constant_buffer[%d]", bufferIndex), Msg: "constant buffer is absent", Code: CodeInvalidArgument}
	}
	return f.regionPayload(b, b.Storage), nil
}

// NamedData returns the payload stored under key in Program.NamedData (the
// first entry with that key, as ExecuTorch looks it up). Like ExecuTorch, it
// fails when it meets an entry without a key before the one it looks for.
func (f *File) NamedData(key string) (*Payload, error) {
	p := f.Program
	for i, nd := range p.NamedData {
		if nd != nil && isAbsent(nd.Absent, "key", nd.Key) {
			return nil, &FormatError{Off: f.dec.posOf(nd), Path: fmt.Sprintf("named_data[%d].key", i),
				Msg: fmt.Sprintf("looking up %s: named data entry has no key", quote.String(key)), Code: CodeInvalidArgument}
		}
		if nd == nil || nd.Key != key {
			continue
		}
		if p.Segments == nil || uint64(nd.SegmentIndex) >= uint64(len(p.Segments)) {
			return nil, &FormatError{Off: f.dec.posOf(nd), Path: fmt.Sprintf("named_data[%d].segment_index", i),
				Msg: fmt.Sprintf("named data %s: segment index %d out of range (%d segments)", quote.String(key), nd.SegmentIndex, len(p.Segments)), Code: CodeInvalidArgument}
		}
		return f.Segment(int(nd.SegmentIndex))
	}
	return nil, &FormatError{Off: -1, Path: "named_data", Msg: fmt.Sprintf("no named data with key %s", quote.String(key)), Code: CodeNotFound}
}

// segmentPos returns the file offset of the table of Program.Segments[i]
// as the file holds it, or -1.
func (f *File) segmentPos(i int) int64 {
	t, ok := rootTab(f.region).tableAt(slotProgramSegments, i)
	if !ok {
		return -1
	}
	return int64(t.pos)
}
