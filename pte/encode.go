package pte

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"

	flatbuffers "github.com/google/flatbuffers/go"
)

// maxProgramSize is the largest flatbuffer region (8-byte prefix, extended
// header and all tables) a program file can have. FlatBuffers offsets are
// signed 32-bit, so ExecuTorch's verifier refuses anything larger. It is a
// variable so that tests can exercise the limit without allocating 2 GiB.
var maxProgramSize int64 = math.MaxInt32

// inlineAlign is the force_align of Buffer.storage and
// BackendDelegateInlineData.data in program.fbs, and the largest alignment the
// encoder ever asks the builder for.
const inlineAlign = 16

// ErrProgramTooLarge is matched (errors.Is) by the error Write returns when
// the FlatBuffers region would exceed the 2 GiB FlatBuffers limit, which
// happens when too many bytes are stored inline (Program.ConstantBuffer or
// Program.BackendDelegateData). Such payloads must be moved to segments.
var ErrProgramTooLarge = errors.New("pte: flatbuffer region too large")

// tooLargeError is a *FormatError that also matches ErrProgramTooLarge.
type tooLargeError struct{ fe *FormatError }

func (e *tooLargeError) Error() string   { return e.fe.Error() }
func (e *tooLargeError) Unwrap() []error { return []error{e.fe, ErrProgramTooLarge} }

func errTooLarge(size int64) error {
	return &tooLargeError{&FormatError{
		Off:  -1,
		Msg:  fmt.Sprintf("flatbuffer region needs at least %d bytes, over the FlatBuffers limit of %d: move inline constant_buffer and backend_delegate_data payloads to segments", size, maxProgramSize),
		Code: CodeInvalidProgram,
	}}
}

// encodeError returns a *FormatError for a program that cannot be encoded.
// path is relative; callers up the tree prefix it with their own field name.
func encodeError(path, format string, args ...any) *FormatError {
	return &FormatError{Off: -1, Path: path, Msg: fmt.Sprintf(format, args...), Code: CodeInvalidProgram}
}

// within prefixes the path of err (a *FormatError from this file) with
// field, or field[i] when i >= 0.
func within(err error, field string, i int) error {
	fe, ok := errors.AsType[*FormatError](err)
	if !ok {
		return err
	}
	p := field
	if i >= 0 {
		p += "[" + strconv.Itoa(i) + "]"
	}
	switch {
	case fe.Path == "":
		fe.Path = p
	case fe.Path[0] == '[':
		fe.Path = p + fe.Path
	default:
		fe.Path = p + "." + fe.Path
	}
	return err
}

// segmentRefs says how segment indices stored in the program are rewritten.
type segmentRefs struct {
	// remap maps an input segment index to the written one; nil keeps
	// indices unchanged.
	remap []int
	// layout replaces Program.Segments; nil writes the field absent.
	layout []*DataSegment
}

func (r *segmentRefs) index(i uint32) (uint32, error) {
	if r.remap == nil {
		return i, nil
	}
	if uint64(i) >= uint64(len(r.remap)) {
		return 0, encodeError("", "segment index %d out of range (%d segment payloads given), cannot remap it for deduplication", i, len(r.remap))
	}
	return uint32(r.remap[i]), nil
}

// encoder turns a Program into FlatBuffers bytes.
type encoder struct {
	b    *flatbuffers.Builder
	refs *segmentRefs
	// strs is where each string is written: a string is written once
	// however many fields hold it (as the builder's CreateSharedString
	// does), in a map sized for the program's method names (see str).
	strs map[string]flatbuffers.UOffsetT
}

// encodeProgram returns the finished FlatBuffers bytes of p with the segment
// table and segment references taken from refs. It does not modify p. The
// result starts with the root offset and "ET12" and its length is a multiple
// of 16. reserve is the room for an extended header after the first 8
// bytes (0 or wrHeaderPad): with reserve > 0 the result is the whole
// region, the root offset moved past the room and the room zero, for the
// caller to fill (putHeader); it is made in the builder's unused bytes
// before the encoding, so that the region is never copied.
func encodeProgram(p *Program, refs *segmentRefs, reserve int64) (out []byte, err error) {
	if p == nil {
		return nil, encodeError("", "nil program")
	}
	inline := inlineBytes(p)
	if inline+reserve+8 > maxProgramSize {
		return nil, errTooLarge(inline + reserve + 8)
	}
	bound := sizeBound(p, refs) + reserve
	initial := builderSize(bound, inline)
	// The method names of a program are distinct and few of its other
	// strings are, so the string table starts with room for one string per
	// method (growing it from empty was a fifth of the encoding's time).
	e := &encoder{b: flatbuffers.NewBuilder(int(initial)), refs: refs,
		strs: make(map[string]flatbuffers.UOffsetT, p.NumPlans()+16)}
	defer func() {
		// The builder panics instead of growing past its 32-bit limit.
		if r := recover(); r != nil {
			if s, ok := r.(string); ok && s == "cannot grow buffer beyond 2 gigabytes" {
				out, err = nil, errTooLarge(bound)
				return
			}
			panic(r)
		}
	}()
	root, err := e.encodeProgram(p)
	if err != nil {
		return nil, err
	}
	e.b.FinishWithFileIdentifier(root, []byte(identET12))
	out = withHeaderRoom(e.b.Bytes, int(e.b.Head()), int(reserve))
	if n := int64(len(out)); n > maxProgramSize {
		return nil, errTooLarge(n)
	}
	return out, nil
}

// withHeaderRoom returns the finished encoding buf[head:] with reserve
// zero bytes inserted after its first 8 (the root offset, which grows by
// reserve, and the file identifier), in buf when the builder left reserve
// bytes before head (sizeBound counts them), else in a copy.
func withHeaderRoom(buf []byte, head, reserve int) []byte {
	fb := buf[head:]
	if reserve == 0 {
		return fb
	}
	root, ident := binary.LittleEndian.Uint32(fb)+uint32(reserve), [4]byte(fb[4:8])
	var out []byte
	if head >= reserve {
		out = buf[head-reserve:] // out[8+reserve:] is fb[8:]
	} else {
		out = make([]byte, len(fb)+reserve)
		copy(out[8+reserve:], fb[8:])
	}
	binary.LittleEndian.PutUint32(out, root)
	copy(out[4:8], ident[:])
	clear(out[8 : 8+reserve])
	return out
}

// inlineBytes is the number of payload bytes p stores inside the flatbuffer.
func inlineBytes(p *Program) int64 {
	var n int64
	for _, b := range p.ConstantBuffer {
		if b != nil {
			n += int64(len(b.Storage))
		}
	}
	for _, d := range p.BackendDelegateData {
		if d != nil {
			n += int64(len(d.Data))
		}
	}
	return n
}

// Upper bounds of the bytes the builder uses, so that it can be allocated
// once (the builder cannot grow past 1 GiB by itself) and so that a program
// over the limit is refused before doing the work.
func boundString(s string) int64 { return int64(len(s)) + 8 }
func boundVec(n int, elem int64) int64 {
	return 4 + int64(n)*elem + 15 // length, elements, worst-case alignment
}
func boundTable(slots int) int64 { return 16 + 12*int64(slots) } // vtable, soffset, fields, padding

// growableBound is the largest bound for which the builder may start
// smaller and grow: the builder doubles its buffer and refuses to double
// one of 1 GiB or more, so a program that may need more gets its bound
// allocated at once.
const growableBound = 1 << 30

// initialBuilderSize is the buffer the builder starts with for a program
// whose encoded size is at most bound, inline of it payload bytes. The
// bound of the tables is loose (real programs share vtables and strings
// and come out at a quarter to a third of it), and the builder's buffer is
// zeroed when it is made, so it starts from the payloads plus three eighths
// of the rest, and grows by doubling when that is short.
func initialBuilderSize(bound, inline int64) int64 {
	if bound >= growableBound {
		return min(bound, maxProgramSize)
	}
	return max(1024, inline+(bound-inline)*3/8)
}

// builderSize is initialBuilderSize; tests make the builder start tiny,
// so that it grows, and compare the bytes.
var builderSize = initialBuilderSize

// sizeBound bounds the bytes the builder uses for p: its tables with
// what they hold (bound<Table> in codec_generated.go), the root offset,
// the identifier and the final alignment.
func sizeBound(p *Program, refs *segmentRefs) int64 {
	return 64 + (&encoder{refs: refs}).boundProgram(p)
}

// offsets writes a vector of the tables at offs (encode<Table><Field> in
// codec_generated.go).
func (e *encoder) offsets(offs []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	e.b.StartVector(4, len(offs), 4)
	for i := len(offs) - 1; i >= 0; i-- {
		e.b.PrependUOffsetT(offs[i])
	}
	return e.b.EndVector(len(offs))
}

// str writes s, or returns where it was written before.
func (e *encoder) str(s string) flatbuffers.UOffsetT {
	if off, ok := e.strs[s]; ok {
		return off
	}
	off := e.b.CreateString(s)
	e.strs[s] = off
	return off
}

// optStr writes the string field named field (schema name) unless the
// table's Absent list keeps it absent, in which case it returns 0 and the
// caller leaves the field out.
func (e *encoder) optStr(s string, absent []string, field string) flatbuffers.UOffsetT {
	if isAbsent(absent, field, s) {
		return 0
	}
	return e.str(s)
}

// bytes writes a [ubyte] vector, or nothing (0) for nil. align is the
// force_align of the field (1 when none).
func (e *encoder) bytes(v []byte, align int) flatbuffers.UOffsetT {
	if v == nil {
		return 0
	}
	if align > 1 {
		// Pad so that the element data (not the length) ends up aligned,
		// which is what force_align means; CreateByteVector then adds
		// nothing because 4 divides align.
		e.b.Prep(align, len(v))
	}
	return e.b.CreateByteVector(v)
}

// scalars writes a vector of scalars of size bytes each, or nothing (0) for
// nil; put is the builder's Prepend method for the element type.
func scalars[T any](e *encoder, v []T, size int, put func(T)) flatbuffers.UOffsetT {
	if v == nil {
		return 0
	}
	e.b.StartVector(size, len(v), size)
	for i := len(v) - 1; i >= 0; i-- {
		put(v[i])
	}
	return e.b.EndVector(len(v))
}

// isNilPointer reports whether v holds a typed nil pointer.
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
