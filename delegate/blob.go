package delegate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// BackendID is the backend id of a TensorRT delegate in an ExecuTorch program.
const BackendID = "TensorRTBackend"

// Layout constants of the blob.
const (
	HeaderSize      = 32 // size of the fixed header
	EngineAlignment = 16 // engine_offset is a multiple of this
)

// MaxMetadataSize is the largest metadata ptekit reads, 64 MiB. Real
// metadata is a few KiB (serialized_metadata, the largest member, is a
// base64 settings pickle), while the header allows up to 4 GiB-1: a crafted
// 4 KiB file must not make a reader allocate gigabytes. Decode refuses
// larger metadata with a *BlobError for metadata_size, and ReadDeployed
// reports it as unread (DeployedView.MetadataUnread), since the deployed
// C++ reader has no such limit and would scan it.
const MaxMetadataSize = 64 << 20

// MaxMetadataValues is the most JSON values (each object, array, string,
// number, boolean and null counts one) ptekit reads in one blob's metadata,
// about a million. Real metadata holds a few per binding. Each value costs
// ptekit a few hundred bytes once decoded, so without this limit metadata
// within MaxMetadataSize such as [0,0,0,...] would take gigabytes. Decode,
// DecodePython and Check stop parsing at the first value over the limit
// and refuse the metadata with a *BlobError at that value's offset, even
// though upstream's Python reader, which has no such limit, would read it.
const MaxMetadataValues = 1 << 20

// Magic numbers. MagicTR02 marks a blob whose metadata carries aliased_io.
var (
	MagicTR01 = [4]byte{'T', 'R', '0', '1'}
	MagicTR02 = [4]byte{'T', 'R', '0', '2'}
)

// Aliased I/O kinds written by the upstream exporter.
const (
	KindKVCacheUpdate = "kv_cache_update" // also the default for a missing kind
	KindUser          = "user"
)

// Binding is one TensorRT I/O binding of the engine.
type Binding struct {
	Name    string  // TensorRT tensor name
	DType   string  // informational; the exporter writes ""
	Shape   []int64 // informational; the exporter writes []
	IsInput bool    // input (true) or output (false)
}

// AliasedIO says that an engine output updates an engine input in place.
type AliasedIO struct {
	Output string // output binding name
	Input  string // input binding name
	Kind   string // KindKVCacheUpdate or KindUser
}

// Metadata is the JSON metadata of a blob.
type Metadata struct {
	IOBindings []Binding   // inputs first, then outputs, as the exporter writes them
	AliasedIO  []AliasedIO // written when non-empty; selects magic TR02
	// HardwareCompatible says the engine was built hardware compatible
	// (usable on GPU architectures other than the one it was built on).
	HardwareCompatible bool
	// DeviceID is the CUDA device index the engine was built for and runs
	// on. It is an int64 because the JSON (and upstream's Python writer)
	// allows any integer; the deployed C++ reader keeps a 32-bit int (see
	// DeployedView.DeviceID), and a program's target_device index is an
	// int8. Each type is the width of the place the value comes from.
	DeviceID int64
	// SerializedMetadata is an opaque string (base64 of the Torch-TensorRT
	// settings pickle). Nothing in the ExecuTorch path reads it.
	SerializedMetadata string
	// TargetPlatform names the platform the engine was built for, such as
	// "linux_x86_64". The deployed reader does not read it.
	TargetPlatform string
}

// Inputs returns the names of the input bindings, in order.
func (m *Metadata) Inputs() []string { return m.names(true) }

// Outputs returns the names of the output bindings, in order.
func (m *Metadata) Outputs() []string { return m.names(false) }

func (m *Metadata) names(input bool) []string {
	out := []string{}
	for _, b := range m.IOBindings {
		if b.IsInput == input {
			out = append(out, b.Name)
		}
	}
	return out
}

// Header is the fixed 32-byte blob header, as stored.
type Header struct {
	Magic          [4]byte // MagicTR01 or MagicTR02
	MetadataOffset uint32  // byte offset of the metadata JSON; 32 as written
	MetadataSize   uint32  // length of the metadata JSON
	EngineOffset   uint32  // byte offset of the engine, a multiple of 16
	EngineSize     uint64  // length of the engine
	// Reserved is written as 01 00 00 00 00 00 00 00; byte 0 is a version
	// byte that no reader checks.
	Reserved [8]byte
}

// Byte offsets of the header fields.
const (
	offMagic          = 0
	offMetadataOffset = 4
	offMetadataSize   = 8
	offEngineOffset   = 12
	offEngineSize     = 16
	offReserved       = 24
)

// ParseHeader unpacks the header from the first HeaderSize bytes of a
// blob, without checking it (Decode and Check do); ok is false when b is
// shorter. It lets a caller find the metadata to fetch ahead of a Check.
func ParseHeader(b []byte) (h Header, ok bool) {
	if len(b) < HeaderSize {
		return Header{}, false
	}
	copy(h.Magic[:], b[offMagic:])
	h.MetadataOffset = binary.LittleEndian.Uint32(b[offMetadataOffset:])
	h.MetadataSize = binary.LittleEndian.Uint32(b[offMetadataSize:])
	h.EngineOffset = binary.LittleEndian.Uint32(b[offEngineOffset:])
	h.EngineSize = binary.LittleEndian.Uint64(b[offEngineSize:])
	copy(h.Reserved[:], b[offReserved:])
	return h, true
}

// appendTo appends the little-endian encoding of h.
func (h *Header) appendTo(dst []byte) []byte {
	dst = append(dst, h.Magic[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, h.MetadataOffset)
	dst = binary.LittleEndian.AppendUint32(dst, h.MetadataSize)
	dst = binary.LittleEndian.AppendUint32(dst, h.EngineOffset)
	dst = binary.LittleEndian.AppendUint64(dst, h.EngineSize)
	return append(dst, h.Reserved[:]...)
}

// MagicString returns the magic as text, quoting it when it is not printable
// ASCII, e.g. TR01 or "\x00ZZZ".
func (h *Header) MagicString() string {
	m := string(h.Magic[:])
	if strings.ContainsFunc(m, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return strconv.Quote(m)
	}
	return m
}

// knownMagic reports whether m is TR01 or TR02.
func knownMagic(m [4]byte) bool { return m == MagicTR01 || m == MagicTR02 }

// align16 rounds n up to a multiple of EngineAlignment.
func align16(n uint64) uint64 { return (n + EngineAlignment - 1) &^ (EngineAlignment - 1) }

// Blob is a decoded TensorRT blob. The engine bytes are not loaded: use
// Engine to read them.
type Blob struct {
	Header      Header   // the header as stored
	Metadata    Metadata // the metadata, with defaults for absent keys
	MetadataRaw []byte   // the metadata bytes as stored
	Size        int64    // size of the whole blob

	r io.ReaderAt
}

// Engine returns the serialized TensorRT engine as a lazy section of the
// blob's reader. For a Blob not made by Decode, which has no reader, every
// read of the section fails with an error.
func (b *Blob) Engine() *io.SectionReader {
	return engineSection(b.r, &b.Header)
}

// TrailingBytes is the number of bytes after the end of the engine. The
// upstream writer leaves none; both upstream readers ignore them.
func (b *Blob) TrailingBytes() int64 {
	end := uint64(b.Header.EngineOffset) + b.Header.EngineSize
	if end < b.Header.EngineSize || end >= uint64(b.Size) {
		return 0
	}
	return b.Size - int64(end)
}

func engineSection(r io.ReaderAt, h *Header) *io.SectionReader {
	if r == nil {
		r = noReader{}
	}
	return io.NewSectionReader(r, int64(h.EngineOffset), int64(min(h.EngineSize, math.MaxInt64)))
}

// noReader is the reader of a Blob that was not decoded.
type noReader struct{}

func (noReader) ReadAt([]byte, int64) (int, error) {
	return 0, errors.New("trt blob: the Blob has no reader (it was not made by Decode)")
}

// BlobError reports a malformed blob: which field is wrong, where, and why.
type BlobError struct {
	// Field names the header field ("magic", "engine_offset", ...) or the
	// metadata member ("metadata", "metadata.io_bindings[1].is_input", ...).
	Field string
	// Off is the byte offset within the blob, or -1 when there is none.
	Off int64
	// Msg says what is wrong, in lower case without trailing punctuation.
	Msg string
}

// Error formats the error as "trt blob: <field>: <msg> (at byte <off>)".
func (e *BlobError) Error() string {
	s := "trt blob: " + e.Field + ": " + e.Msg
	if e.Off >= 0 {
		s += " (at byte " + strconv.FormatInt(e.Off, 10) + ")"
	}
	return s
}

// MetadataError reports metadata that Encode refuses to write: a value that
// cannot be represented, or (in the default safe mode) one that the deployed
// C++ reader would read differently from what it says.
type MetadataError struct {
	Field string // e.g. "io_bindings[2].name", "aliased_io[0].output", "device_id"
	Value string // the offending value, as text
	Msg   string // what is wrong and why, in lower case
}

// Error formats the error as `trt metadata: <field> "<value>": <msg>`.
func (e *MetadataError) Error() string {
	return fmt.Sprintf("trt metadata: %s %q: %s", e.Field, e.Value, e.Msg)
}

// EngineError reports an engine source that Encode or a blob reader cannot
// use: a negative size, a nil reader, or a reader that ends before the size
// it was given.
type EngineError struct {
	Size int64  // the engine size given
	Msg  string // what is wrong, in lower case
	// Err is the underlying error: the reader's own error, or
	// io.ErrUnexpectedEOF when the engine ends early. Nil otherwise.
	Err error
}

// Error formats the error as "trt engine: <msg>[: <err>]".
func (e *EngineError) Error() string {
	s := "trt engine: " + e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns Err.
func (e *EngineError) Unwrap() error { return e.Err }

// IsTensorRT reports whether ExecuTorch hands a delegate with backend id to
// the TensorRT backend. The runtime looks backends up by C string, so the
// bytes of id from its first NUL on are ignored: "TensorRTBackend\x00x" is
// a TensorRT delegate too.
func IsTensorRT(id string) bool {
	return id == BackendID || strings.HasPrefix(id, BackendID+"\x00")
}
