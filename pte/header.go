package pte

import (
	"encoding/binary"
	"fmt"
)

// Fixed facts of the container (see pte-format.md sections 2 and 3).
const (
	// identET12 is the FlatBuffers file identifier of a loadable program.
	identET12 = "ET12"
	// magicEH00 is the magic of the extended header at file offset 8.
	magicEH00 = "eh00"

	// rdHeadBytes is what ExecuTorch's Program::load reads first; a shorter
	// file cannot be loaded.
	rdHeadBytes = 64
	// rdHeaderOffset is where the extended header starts.
	rdHeaderOffset = 8
	// rdMinHeaderLength is the smallest valid ExtendedHeader.Length (the
	// header without segment_data_size).
	rdMinHeaderLength = 24
	// rdFullHeaderLength is the header length that includes segment_data_size.
	rdFullHeaderLength = 32
	// rdMaxRegionSize is the largest flatbuffer region FlatBuffers can address
	// (FLATBUFFERS_MAX_BUFFER_SIZE).
	rdMaxRegionSize = 1<<31 - 1
)

// ExtendedHeader is the optional "eh00" header that follows the 8-byte
// FlatBuffers prefix. It tells where the flatbuffer region ends and where
// segment data begins.
type ExtendedHeader struct {
	// Magic is "eh00".
	Magic string
	// Length is the stored size of the header fields, 24 or 32 in real files;
	// it excludes the zero padding that follows the header.
	Length uint32
	// ProgramSize is the file offset where the flatbuffer region ends.
	ProgramSize uint64
	// SegmentBaseOffset is the absolute file offset of segment data, 0 when
	// there is none.
	SegmentBaseOffset uint64
	// SegmentDataSize is the number of bytes from SegmentBaseOffset to the
	// end of the last segment; 0 when Length < 32.
	SegmentDataSize uint64
}

// foreignFormat names well-known non-program files by their identifier, so
// that they are refused with a useful message instead of a parse failure.
func foreignFormat(head []byte) string {
	if len(head) < 8 {
		return ""
	}
	id := string(head[4:8])
	switch {
	case id == "FT01" || (len(head) >= 12 && string(head[8:12]) == "FH01"):
		return "external tensor data (.ptd, FlatTensor " + id + "), not a program; open the .pte that refers to it"
	case id == "BP08" || id == "BP04":
		return "a bundled program (.bpte, identifier " + id + "), not a plain program; extract its embedded program first"
	case id == "ED00":
		return "an ETDump profiling file (ED00), not a program"
	}
	return ""
}

// parseHeader reads the extended header from the head bytes of a file
// (at least rdHeadBytes long). It returns nil when there is no "eh00" magic;
// like ExecuTorch, any other magic means "no header".
func parseHeader(head []byte) (*ExtendedHeader, error) {
	if len(head) < rdHeaderOffset+rdMinHeaderLength || string(head[8:12]) != magicEH00 {
		return nil, nil
	}
	h := &ExtendedHeader{
		Magic:  magicEH00,
		Length: binary.LittleEndian.Uint32(head[12:16]),
	}
	if h.Length < rdMinHeaderLength {
		return nil, &FormatError{Off: 12, Path: "extended_header.length",
			Msg:  fmt.Sprintf("extended header length %d is below the minimum %d", h.Length, rdMinHeaderLength),
			Code: CodeInvalidProgram}
	}
	h.ProgramSize = binary.LittleEndian.Uint64(head[16:24])
	h.SegmentBaseOffset = binary.LittleEndian.Uint64(head[24:32])
	if h.Length >= rdFullHeaderLength {
		h.SegmentDataSize = binary.LittleEndian.Uint64(head[32:40])
	}
	return h, nil
}

// checkHeaderSize applies Program::load's file-size rule: unless an old
// 24-byte header with segments leaves the data size unknown, the file must
// hold everything the header promises. The error of a file that ends early
// (rather than of a header that cannot be right) is a *TruncatedError.
func checkHeaderSize(h *ExtendedHeader, size int64) error {
	if !((h.SegmentDataSize == 0 && h.SegmentBaseOffset == 0) || h.SegmentDataSize > 0) {
		return nil
	}
	expected := h.ProgramSize
	what := "program_size"
	off := int64(16)
	if h.SegmentBaseOffset != 0 {
		expected = h.SegmentBaseOffset + h.SegmentDataSize
		what = "segment_base_offset + segment_data_size"
		off = 24
		if expected < h.SegmentBaseOffset {
			return &FormatError{Off: off, Path: "extended_header",
				Msg:  "segment_base_offset + segment_data_size overflows",
				Code: CodeInvalidProgram}
		}
	}
	if expected > uint64(size) {
		return &TruncatedError{FormatError{Off: off, Path: "extended_header",
			Msg:  fmt.Sprintf("%s = %d is past the end of the %d-byte file (truncated?)", what, expected, size),
			Code: CodeInvalidProgram}}
	}
	return nil
}

// TruncatedError is the error of a file shorter than its extended header
// says: ExecuTorch refuses to load it. With OpenOptions.Truncated the file
// opens anyway, when its program region is whole, for inspection.
type TruncatedError struct{ FormatError }

// Unwrap returns the *FormatError, so that errors.As finds it.
func (e *TruncatedError) Unwrap() error { return &e.FormatError }
