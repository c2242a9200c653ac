package delegate

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
)

// DeployedView is what the deployed C++ reader (TensorRTBackend's
// TensorRTBlobHeader::parse, upstream pytorch/TensorRT) yields for a blob.
//
// When OK is false the C++ reader rejects the blob and TensorRTBackend::init
// fails with InvalidProgram; Reason then says which check failed (the C++
// reader itself gives no reason), and the other fields hold whatever was
// read before the failure.
type DeployedView struct {
	// OK reports whether the C++ reader accepts the blob.
	OK bool
	// Reason says why the blob is rejected (or, with MetadataUnread, not
	// read); empty when OK.
	Reason string
	// MetadataUnread is set when the header passes the C++ checks but the
	// metadata is larger than MaxMetadataSize, so ptekit did not read it.
	// The deployed reader would scan it; its verdict is unknown. OK is then
	// false and the metadata fields below are empty.
	MetadataUnread bool

	Size int64 // blob size

	// The header fields as the C++ reader stores them. They are set once
	// the magic is known (TR01 or TR02), even when a later check fails.
	Magic          [4]byte
	MetadataOffset uint32
	MetadataSize   uint32
	EngineOffset   uint32
	EngineSize     uint64
	// EngineSizeWraps is set when engine_offset+engine_size overflows 64
	// bits, which the C++ bounds check does not catch: the runtime would
	// hand TensorRT an engine extending far past the blob.
	EngineSizeWraps bool

	// Inputs and Outputs are the binding names as the C++ reader reads them:
	// raw bytes, escapes not decoded (`\u00e9` reads as "u00e9"), not
	// necessarily valid UTF-8. Bindings with an empty name are dropped.
	Inputs, Outputs []string
	// AliasedIO holds the entries with a non-empty output and input; an
	// empty or missing kind reads as KindKVCacheUpdate.
	AliasedIO []AliasedIO
	// HardwareCompatible is the first "hardware_compatible" found by text
	// search after the io_bindings array; false when there is none.
	HardwareCompatible bool
	// DeviceID is read as a C++ int: digits accumulated with 32-bit wrap
	// around, stopping at the first non-digit ("1.5" reads as 1). See
	// Metadata.DeviceID for why the types differ.
	DeviceID int32
}

// ReadDeployed reads the blob in r (size bytes) the way the deployed C++
// reader does. A blob the C++ reader rejects gives a view with OK false, not
// an error; the error is reserved for failures to read r. Only the header
// and metadata are read.
func ReadDeployed(r io.ReaderAt, size int64) (*DeployedView, error) {
	hdr, err := readHeader(r, size)
	if err != nil {
		return nil, err
	}
	v := &DeployedView{Size: size}
	if !deployedHeader(hdr, size, v) {
		return v, nil
	}
	md, err := readMetadata(r, v.MetadataOffset, v.MetadataSize)
	if err != nil {
		return nil, err
	}
	scanMetadata(md, v)
	return v, nil
}

// deployedHeader applies the C++ header checks, in the C++ order, and
// reports whether the metadata should be scanned: not when a check fails,
// nor when ptekit will not read metadata that large (MetadataUnread).
func deployedHeader(hdr []byte, size int64, v *DeployedView) bool {
	fail := func(format string, args ...any) bool {
		v.OK = false
		v.Reason = fmt.Sprintf(format, args...)
		return false
	}
	h, ok := ParseHeader(hdr)
	if !ok {
		return fail("blob is %d bytes, shorter than the %d-byte header", size, HeaderSize)
	}
	v.Magic = h.Magic
	if !knownMagic(h.Magic) {
		return fail("unknown magic %s", h.MagicString())
	}
	v.MetadataOffset, v.MetadataSize = h.MetadataOffset, h.MetadataSize
	v.EngineOffset, v.EngineSize = h.EngineOffset, h.EngineSize
	usize := uint64(size)
	mdEnd := uint64(h.MetadataOffset) + uint64(h.MetadataSize)
	if h.MetadataOffset < HeaderSize {
		return fail("metadata offset %d is inside the header", h.MetadataOffset)
	}
	if h.EngineOffset%EngineAlignment != 0 {
		return fail("engine offset %d is not %d-byte aligned", h.EngineOffset, EngineAlignment)
	}
	if mdEnd > usize {
		return fail("metadata ends at %d, past the end of the %d-byte blob", mdEnd, size)
	}
	// size_t arithmetic: the sum wraps modulo 2^64.
	engEnd := uint64(h.EngineOffset) + h.EngineSize
	v.EngineSizeWraps = engEnd < h.EngineSize
	if engEnd > usize {
		return fail("engine ends at %d, past the end of the %d-byte blob", engEnd, size)
	}
	if mdEnd > uint64(h.EngineOffset) {
		return fail("metadata ends at %d, overlapping the engine at %d", mdEnd, h.EngineOffset)
	}
	if h.MetadataSize > MaxMetadataSize {
		v.MetadataUnread = true
		return fail("metadata of %d bytes is larger than the %d bytes ptekit reads; the deployed reader would scan it, with an unknown verdict",
			h.MetadataSize, MaxMetadataSize)
	}
	return true
}

// The C++ scanner, re-implemented from its documented behaviour. It is a
// forward scanner over raw bytes: no UTF-8 check, no escape decoding, keys
// found by substring search. Every function returns the position after what
// it consumed, or -1 on failure.

// cppSpace is the C++ scanner's whitespace.
func cppSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(s []byte, p int) int {
	for p < len(s) && cppSpace(s[p]) {
		p++
	}
	return p
}

// cppString reads a string starting at its opening quote. A backslash is
// dropped and the byte after it kept as is.
func cppString(s []byte, p int) (string, int) {
	if p >= len(s) || s[p] != '"' {
		return "", -1
	}
	p++
	// Most strings have no backslash: one copy of their bytes, without
	// growing a buffer (the encoder reads back every blob it writes).
	start := p
	for p < len(s) && s[p] != '"' && s[p] != '\\' {
		p++
	}
	if p < len(s) && s[p] == '"' {
		return string(s[start:p]), p + 1
	}
	out := append([]byte(nil), s[start:p]...)
	for p < len(s) && s[p] != '"' {
		if s[p] == '\\' && p+1 < len(s) {
			p++
		}
		out = append(out, s[p])
		p++
	}
	if p >= len(s) {
		return "", -1
	}
	return string(out), p + 1
}

// cppSkipValue skips a value the scanner does not read: a string, a
// bracketed group (counting only its own bracket kind, skipping strings),
// or a bare token up to ',', '}', ']' or whitespace.
func cppSkipValue(s []byte, p int) int {
	p = skipSpace(s, p)
	if p >= len(s) {
		return -1
	}
	switch open := s[p]; open {
	case '"':
		_, p = cppString(s, p)
		return p
	case '{', '[':
		closer := byte('}')
		if open == '[' {
			closer = ']'
		}
		depth := 1
		p++
		for p < len(s) && depth > 0 {
			switch s[p] {
			case '"':
				if _, p = cppString(s, p); p < 0 {
					return -1
				}
				continue
			case open:
				depth++
			case closer:
				depth--
			}
			p++
		}
		return p
	}
	for p < len(s) && s[p] != ',' && s[p] != '}' && s[p] != ']' && !cppSpace(s[p]) {
		p++
	}
	return p
}

// cppHasPrefix is std::string::compare(pos, len(lit), lit) == 0.
func cppHasPrefix(s []byte, p int, lit string) bool {
	return p <= len(s) && bytes.HasPrefix(s[p:], []byte(lit))
}

// cppBool reads true or false at p and returns the position after it, -1
// when neither is there.
func cppBool(s []byte, p int) (bool, int) {
	switch {
	case cppHasPrefix(s, p, "true"):
		return true, p + 4
	case cppHasPrefix(s, p, "false"):
		return false, p + 5
	}
	return false, -1
}

// cppArray finds the first `"key"` at or after from and walks the array
// of objects after the next '[' (cppObjects). It returns the position after
// the array, or -1 with why ("" when the key is absent).
func cppArray(s []byte, from int, key string, member func(key string, p int) int, end func()) (int, string) {
	k := cppFind(s, from, key)
	if k < 0 {
		return -1, ""
	}
	open := bytes.IndexByte(s[k:], '[')
	if open < 0 {
		return -1, `no '[' after "` + key + `"`
	}
	pos, reason := cppObjects(s, k+open+1, member, end)
	if pos < 0 {
		return -1, key + ": " + reason
	}
	return pos, ""
}

// cppFind returns the position just after the first `"key"` at or after
// from, -1 when there is none.
func cppFind(s []byte, from int, key string) int {
	k := bytes.Index(s[from:], []byte(`"`+key+`"`))
	if k < 0 {
		return -1
	}
	return from + k + len(key) + 2
}

// cppObjects walks an array of objects starting just after its '['. For
// each member it calls member(key, p) with p at the value, which returns the
// position after the value or -1; end is called after each object. It
// returns the position after the closing ']'.
func cppObjects(s []byte, p int, member func(key string, p int) int, end func()) (int, string) {
	for {
		p = skipSpace(s, p)
		if p >= len(s) {
			return -1, "unterminated array"
		}
		switch s[p] {
		case ']':
			return p + 1, ""
		case ',':
			p++
			continue
		case '{':
		default:
			return -1, fmt.Sprintf("array element at metadata byte %d is not an object", p)
		}
		p++
		for {
			p = skipSpace(s, p)
			if p >= len(s) {
				return -1, "unterminated object"
			}
			if s[p] == '}' {
				p++
				break
			}
			if s[p] == ',' {
				p++
				continue
			}
			key, q := cppString(s, p)
			if q < 0 {
				return -1, fmt.Sprintf("expected a string key at metadata byte %d", p)
			}
			q = skipSpace(s, q)
			if q >= len(s) || s[q] != ':' {
				return -1, fmt.Sprintf("expected ':' after key %q at metadata byte %d", key, q)
			}
			vp := skipSpace(s, q+1)
			if p = member(key, vp); p < 0 {
				return -1, fmt.Sprintf("cannot read the value of %q at metadata byte %d", key, vp)
			}
		}
		end()
	}
}

// scanMetadata fills v's bindings, aliased I/O, hardware_compatible and
// device_id from the metadata as the C++ reader does, and v.OK and
// v.Reason. It returns "" on success, else why the C++ reader fails.
func scanMetadata(s []byte, v *DeployedView) string {
	v.Inputs, v.Outputs, v.AliasedIO = []string{}, []string{}, []AliasedIO{}
	v.HardwareCompatible, v.DeviceID = false, 0
	pos, reason := scanBindings(s, v)
	if reason == "" {
		reason = scanAliasedIO(s, pos, v)
	}
	// The scalars: first textual occurrence after the io_bindings array.
	if reason == "" {
		reason = scanHardwareCompatible(s, pos, v)
	}
	if reason == "" {
		reason = scanDeviceID(s, pos, v)
	}
	v.OK, v.Reason = reason == "", reason
	return reason
}

// scanBindings fills v.Inputs and v.Outputs from the "io_bindings" array
// and returns the metadata position just after it, or why it cannot.
func scanBindings(s []byte, v *DeployedView) (int, string) {
	var name string
	var isInput bool
	pos, reason := cppArray(s, 0, "io_bindings", func(key string, p int) int {
		switch key {
		case "name":
			name, p = cppString(s, p)
		case "is_input":
			isInput, p = cppBool(s, p)
		default:
			p = cppSkipValue(s, p)
		}
		return p
	}, func() {
		if name != "" {
			if isInput {
				v.Inputs = append(v.Inputs, name)
			} else {
				v.Outputs = append(v.Outputs, name)
			}
		}
		name, isInput = "", false
	})
	if pos < 0 {
		return -1, cmp.Or(reason, `no "io_bindings" key`)
	}
	return pos, ""
}

// scanAliasedIO fills v.AliasedIO from the "aliased_io" array, which is
// searched only after the io_bindings array (from pos).
func scanAliasedIO(s []byte, pos int, v *DeployedView) string {
	var a AliasedIO
	_, reason := cppArray(s, pos, "aliased_io", func(key string, p int) int {
		switch key {
		case "output":
			a.Output, p = cppString(s, p)
		case "input":
			a.Input, p = cppString(s, p)
		case "kind":
			a.Kind, p = cppString(s, p)
		default:
			p = cppSkipValue(s, p)
		}
		return p
	}, func() {
		if a.Output != "" && a.Input != "" {
			if a.Kind == "" {
				a.Kind = KindKVCacheUpdate
			}
			v.AliasedIO = append(v.AliasedIO, a)
		}
		a = AliasedIO{}
	})
	return reason
}

// scanHardwareCompatible sets v.HardwareCompatible from the first
// "hardware_compatible" after pos, if any.
func scanHardwareCompatible(s []byte, pos int, v *DeployedView) string {
	p, reason := cppScalar(s, pos, "hardware_compatible")
	if reason != "" || p < 0 {
		return reason
	}
	var end int
	if v.HardwareCompatible, end = cppBool(s, p); end < 0 {
		return fmt.Sprintf(`"hardware_compatible" found by text search is followed by %s at metadata byte %d, not true or false`, excerpt(s, p), p)
	}
	return ""
}

// scanDeviceID sets v.DeviceID from the first "device_id" after pos, if
// any, read as the C++ reader reads an int: digits that wrap on overflow.
func scanDeviceID(s []byte, pos int, v *DeployedView) string {
	p, reason := cppScalar(s, pos, "device_id")
	if reason != "" || p < 0 {
		return reason
	}
	start := p
	neg := p < len(s) && s[p] == '-'
	if neg {
		p++
	}
	var n int32
	digits := 0
	for ; p < len(s) && s[p] >= '0' && s[p] <= '9'; p++ {
		n = n*10 + int32(s[p]-'0') // wraps like the C++ int
		digits++
	}
	if digits == 0 {
		return fmt.Sprintf(`"device_id" found by text search is followed by %s at metadata byte %d, not an integer`, excerpt(s, start), start)
	}
	if neg {
		n = -n
	}
	v.DeviceID = n
	return ""
}

// cppScalar finds the first `"key"` at or after from and returns the
// position of the value after the next ':' (whitespace skipped), or -1 when
// the key is absent.
func cppScalar(s []byte, from int, key string) (int, string) {
	k := cppFind(s, from, key)
	if k < 0 {
		return -1, ""
	}
	c := bytes.IndexByte(s[k:], ':')
	if c < 0 {
		return -1, fmt.Sprintf(`no ':' after "%s" at metadata byte %d`, key, k)
	}
	return skipSpace(s, k+c+1), ""
}

// excerpt quotes up to 16 bytes of s from p.
func excerpt(s []byte, p int) string {
	if p >= len(s) {
		return "the end of the metadata"
	}
	return fmt.Sprintf("%q", s[p:min(len(s), p+16)])
}

// readHeader reads the first min(size, HeaderSize) bytes, after checking
// that r really holds size bytes: a reader shorter than the size it is given
// would otherwise pass for a blob whose engine lies past its end. The check
// reads one byte, the last.
func readHeader(r io.ReaderAt, size int64) ([]byte, error) {
	if size < 0 {
		return nil, fmt.Errorf("trt blob: negative size %d", size)
	}
	n := min(size, HeaderSize)
	hdr := make([]byte, n)
	if got, err := r.ReadAt(hdr, 0); int64(got) < n {
		return nil, fmt.Errorf("trt blob: reading header: %w", eofIsUnexpected(err))
	}
	if size > n {
		var last [1]byte
		if got, err := r.ReadAt(last[:], size-1); got < 1 {
			if err != nil && err != io.EOF {
				// A failed read, not a short reader.
				return nil, fmt.Errorf("trt blob: reading its last byte (%d): %w", size-1, err)
			}
			return nil, fmt.Errorf("trt blob: reader ends before the stated blob size %d: %w", size, eofIsUnexpected(err))
		}
	}
	return hdr, nil
}

// readMetadata reads the metadata range, already checked to lie within the
// blob and to be at most MaxMetadataSize, with one allocation of exactly its
// size and one read.
func readMetadata(r io.ReaderAt, off, n uint32) ([]byte, error) {
	if n > MaxMetadataSize {
		return nil, fmt.Errorf("trt blob: metadata of %d bytes is larger than %d", n, MaxMetadataSize)
	}
	md := make([]byte, n)
	if got, err := r.ReadAt(md, int64(off)); got < len(md) {
		return nil, fmt.Errorf("trt blob: reading metadata: %w", eofIsUnexpected(err))
	}
	return md, nil
}

func eofIsUnexpected(err error) error {
	if err == nil || err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// InitRefusal says why the deployed TensorRTBackend::init fails on the blob
// before it reaches TensorRT: the C++ reader rejects it, or the engine range
// wraps around (upstream would hand TensorRT bytes past the blob). It is ""
// when init gets as far as deserializing the engine, and also when the
// metadata was not read (MetadataUnread), whose outcome is unknown.
func (v *DeployedView) InitRefusal() string {
	switch {
	case v.MetadataUnread:
		return ""
	case !v.OK:
		return "failed to parse TensorRT blob: " + v.Reason
	case v.EngineSizeWraps:
		return fmt.Sprintf("failed to parse TensorRT blob: engine_offset %d + engine_size %d wraps around (upstream would read out of bounds)",
			v.EngineOffset, v.EngineSize)
	}
	return ""
}
