package delegate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// EncodeOptions controls how a blob is written. A nil *EncodeOptions is the
// default: safe mode.
type EncodeOptions struct {
	// UpstreamCompatible writes exactly the bytes upstream's Python writer
	// (serialize_engine) writes for the same metadata, even where the
	// deployed C++ reader misreads them: non-ASCII names become \u escapes
	// the C++ reader does not decode, control characters become escapes it
	// reads as letters, an empty name is dropped by it, and so on.
	//
	// When false (safe mode), names and aliased I/O strings are written as
	// raw UTF-8 and DEL as a raw byte, which both upstream readers read as
	// intended; when an aliased string would be found by the C++ reader's
	// text search for "hardware_compatible" or "device_id" before the real
	// key, those two members are written before aliased_io instead of
	// after it. Metadata that no blob can carry to both readers unchanged
	// is refused with a *MetadataError: empty or control-character names,
	// a name used twice, empty aliased strings, a device id outside a C++
	// int (see CheckNames). So is metadata that the C++ reader reads as
	// meant but TensorRTBackend init refuses: a negative device id, an
	// aliased kind other than kv_cache_update and user, and (when the
	// metadata names bindings) an aliased output or input that is not a
	// binding of that direction. For all other metadata the two modes
	// write identical bytes.
	UpstreamCompatible bool
}

func (o *EncodeOptions) upstream() bool { return o != nil && o.UpstreamCompatible }

// Encode writes a blob holding m and the engineSize bytes of engine to w,
// in safe mode, and returns the number of bytes written. The engine is
// streamed from its reader, never held in memory.
func Encode(w io.Writer, m *Metadata, engine io.ReaderAt, engineSize int64) (int64, error) {
	return (*EncodeOptions)(nil).Encode(w, m, engine, engineSize)
}

// NewBlobReader returns the blob Encode would write, in safe mode, as a
// reader: the header and metadata are served from memory and the engine
// bytes from engine, on demand. It suits writers that take a segment
// source, such as pte.Write.
//
// The reader behind the returned section also lists its two parts through
// a SegmentParts method (it satisfies pte.Composite): the in-memory prefix
// and a section of engine. A writer can then copy the engine range on its
// own, for example with copy_file_range when engine is an *os.File.
func NewBlobReader(m *Metadata, engine io.ReaderAt, engineSize int64) (*io.SectionReader, error) {
	return (*EncodeOptions)(nil).NewBlobReader(m, engine, engineSize)
}

// MarshalMetadata returns the metadata JSON: compact, keys in upstream's
// order, strings escaped as Python's json.dumps does (see EncodeOptions for
// the safe-mode difference).
func (o *EncodeOptions) MarshalMetadata(m *Metadata) ([]byte, error) {
	if m == nil {
		return nil, errors.New("trt metadata: nil Metadata")
	}
	if err := checkEncodable(m); err != nil {
		return nil, err
	}
	if o.upstream() {
		return appendMetadata(nil, m, false, false), nil
	}
	if err := checkSafe(m); err != nil {
		return nil, err
	}
	// Upstream's key order when the deployed reader reads it as meant (the
	// usual case: then both modes write the same bytes), else the scalars
	// before aliased_io, where its text search cannot reach an aliased
	// string first.
	js := appendMetadata(nil, m, true, false)
	err := verifyDeployedReading(js, m)
	if err != nil {
		alt := appendMetadata(nil, m, true, true)
		if verifyDeployedReading(alt, m) != nil {
			return nil, err
		}
		js = alt
	}
	return js, nil
}

// Encode writes the blob to w and returns the number of bytes written:
// what NewBlobReader serves, copied.
func (o *EncodeOptions) Encode(w io.Writer, m *Metadata, engine io.ReaderAt, engineSize int64) (int64, error) {
	r, err := o.NewBlobReader(m, engine, engineSize)
	if err != nil {
		return 0, err
	}
	return io.Copy(w, r)
}

// NewBlobReader returns the blob as a reader that serves the header and
// metadata from memory and the engine from engine on demand.
func (o *EncodeOptions) NewBlobReader(m *Metadata, engine io.ReaderAt, engineSize int64) (*io.SectionReader, error) {
	prefix, err := o.Prefix(m, engineSize)
	if err != nil {
		return nil, err
	}
	if engine == nil && engineSize > 0 {
		return nil, &EngineError{Size: engineSize, Msg: fmt.Sprintf("nil engine reader for an engine of %d bytes", engineSize)}
	}
	r := &blobReaderAt{prefix: prefix, engine: engine, engineSize: engineSize}
	r.parts = []*io.SectionReader{io.NewSectionReader(bytes.NewReader(prefix), 0, int64(len(prefix)))}
	if engineSize > 0 {
		r.parts = append(r.parts, io.NewSectionReader(engine, 0, engineSize))
	}
	return io.NewSectionReader(r, 0, int64(len(prefix))+engineSize), nil
}

// Prefix returns every byte of the blob of m and an engine of engineSize
// bytes that comes before the engine: header, metadata and padding, as
// Encode writes them and NewBlobReader serves them. A caller that keeps
// many blobs' engines elsewhere (an export of many small engine files)
// keeps the prefix alone; the blob's size is len(prefix) + engineSize.
func (o *EncodeOptions) Prefix(m *Metadata, engineSize int64) ([]byte, error) {
	if engineSize < 0 {
		return nil, &EngineError{Size: engineSize, Msg: fmt.Sprintf("negative engine size %d", engineSize)}
	}
	js, err := o.MarshalMetadata(m)
	if err != nil {
		return nil, err
	}
	engineOff := align16(HeaderSize + uint64(len(js)))
	if engineOff > math.MaxUint32 {
		return nil, &MetadataError{Field: "metadata", Value: fmt.Sprintf("%d bytes", len(js)),
			Msg: "metadata too large: the engine offset must fit in 32 bits"}
	}
	if uint64(engineSize) > math.MaxInt64-engineOff {
		return nil, &EngineError{Size: engineSize, Msg: fmt.Sprintf("engine size %d overflows the blob size", engineSize)}
	}
	h := Header{
		Magic:          MagicTR01,
		MetadataOffset: HeaderSize,
		MetadataSize:   uint32(len(js)),
		EngineOffset:   uint32(engineOff),
		EngineSize:     uint64(engineSize),
		Reserved:       [8]byte{1},
	}
	if len(m.AliasedIO) > 0 {
		h.Magic = MagicTR02
	}
	buf := make([]byte, 0, engineOff)
	buf = h.appendTo(buf)
	buf = append(buf, js...)
	buf = buf[:engineOff] // capacity is engineOff; the padding is zero
	return buf, nil
}

// checkEncodable rejects metadata no writer can represent faithfully.
func checkEncodable(m *Metadata) error {
	var errs []error
	str := func(field, s string) {
		if !utf8.ValidString(s) {
			errs = append(errs, &MetadataError{Field: field, Value: s, Msg: "not valid UTF-8"})
		}
	}
	for i, b := range m.IOBindings {
		// The field is named only for an error: every call of an export
		// is checked.
		if !utf8.ValidString(b.Name) || !utf8.ValidString(b.DType) {
			p := fmt.Sprintf("io_bindings[%d].", i)
			str(p+"name", b.Name)
			str(p+"dtype", b.DType)
		}
	}
	seen := map[string]int{}
	for i, a := range m.AliasedIO {
		p := fmt.Sprintf("aliased_io[%d].", i)
		str(p+"output", a.Output)
		str(p+"input", a.Input)
		str(p+"kind", a.Kind)
		if j, dup := seen[a.Output]; dup {
			errs = append(errs, &MetadataError{Field: p + "output", Value: a.Output,
				Msg: fmt.Sprintf("already aliased by aliased_io[%d]; upstream keys aliased_io by output, so one entry would be lost", j)})
		} else {
			seen[a.Output] = i
		}
	}
	str("serialized_metadata", m.SerializedMetadata)
	str("target_platform", m.TargetPlatform)
	return errors.Join(errs...)
}

// checkSafe rejects metadata that no blob carries to the deployed C++
// reader unchanged, and metadata that reader reads as meant but
// TensorRTBackend init refuses.
func checkSafe(m *Metadata) error {
	err := nameProblems(m, false)
	if m.DeviceID < math.MinInt32 || m.DeviceID > math.MaxInt32 {
		err = errors.Join(err, &MetadataError{Field: "device_id", Value: strconv.FormatInt(m.DeviceID, 10),
			Msg: "outside a 32-bit int: the deployed C++ reader would wrap it to " +
				strconv.FormatInt(int64(int32(m.DeviceID)), 10)})
	} else if m.DeviceID < 0 {
		err = errors.Join(err, &MetadataError{Field: "device_id", Value: strconv.FormatInt(m.DeviceID, 10),
			Msg: "negative: the runtime cannot select that CUDA device, so TensorRTBackend init fails"})
	}
	return errors.Join(err, initProblems(m))
}

// initProblems reports the aliased_io entries TensorRTBackend init refuses
// with InvalidProgram although the deployed reader reads them as written:
// a kind other than kv_cache_update and user, and, when the metadata names
// bindings (without any, init takes them from the engine), an output or
// input that is not a binding of that direction. Empty strings are left
// to nameProblems.
func initProblems(m *Metadata) error {
	var errs []error
	named := len(m.IOBindings) > 0
	ins, outs := m.Inputs(), m.Outputs()
	for i, a := range m.AliasedIO {
		p := fmt.Sprintf("aliased_io[%d].", i)
		if named && a.Output != "" && !slices.Contains(outs, a.Output) {
			errs = append(errs, &MetadataError{Field: p + "output", Value: a.Output,
				Msg: "not the name of an output binding: TensorRTBackend init fails with InvalidProgram"})
		}
		if named && a.Input != "" && !slices.Contains(ins, a.Input) {
			errs = append(errs, &MetadataError{Field: p + "input", Value: a.Input,
				Msg: "not the name of an input binding: TensorRTBackend init fails with InvalidProgram"})
		}
		if a.Kind != "" && a.Kind != KindKVCacheUpdate && a.Kind != KindUser {
			errs = append(errs, &MetadataError{Field: p + "kind", Value: a.Kind,
				Msg: fmt.Sprintf("neither %q nor %q: TensorRTBackend init fails with InvalidProgram", KindKVCacheUpdate, KindUser)})
		}
	}
	return errors.Join(errs...)
}

// scalarKeys are the keys the C++ reader finds by substring search after the
// io_bindings array.
var scalarKeys = []string{"hardware_compatible", "device_id"}

// CheckNames reports every binding and aliased I/O string that the deployed
// C++ reader would read differently from what it says in a blob laid out as
// upstream writes it, even with names written as raw UTF-8: an empty binding
// name (dropped), a name used by two bindings (TensorRT tensor names are
// unique), an empty aliased output or input (entry dropped), an empty kind
// (read as kv_cache_update), control characters (only writable as escapes,
// which the C++ reader turns into letters), and an aliased string that the
// C++ key search for "hardware_compatible" or "device_id" would find before
// the real key (the blob is then rejected). The error joins one
// *MetadataError per problem.
//
// CheckNames suits a blob passed on unchanged. Encode's safe mode refuses
// all of these but the last, which it avoids by writing hardware_compatible
// and device_id before aliased_io.
func CheckNames(m *Metadata) error { return nameProblems(m, true) }

// nameProblems implements CheckNames; collisions selects the aliased
// string versus scalar key check.
func nameProblems(m *Metadata, collisions bool) error {
	var errs []error
	bad := func(field, v, msg string) {
		errs = append(errs, &MetadataError{Field: field, Value: v, Msg: msg})
	}
	ctl := func(field, v string) bool {
		for _, r := range v {
			if r < 0x20 {
				bad(field, v, fmt.Sprintf("contains control character U+%04X, which JSON can only carry as an escape and the deployed C++ reader does not decode escapes", r))
				return true
			}
		}
		return false
	}
	first := map[string]int{}
	for i, b := range m.IOBindings {
		// The field is named only for a problem: every call of an
		// export is checked.
		f := func() string { return fmt.Sprintf("io_bindings[%d].name", i) }
		if b.Name == "" {
			bad(f(), b.Name, "empty: the deployed C++ reader drops a binding with an empty name")
			continue
		}
		if j, dup := first[b.Name]; dup {
			bad(f(), b.Name, fmt.Sprintf("already the name of io_bindings[%d]: TensorRT tensor names are unique, so both would bind one tensor", j))
			continue
		}
		first[b.Name] = i
		if strings.IndexFunc(b.Name, func(r rune) bool { return r < 0x20 }) >= 0 {
			ctl(f(), b.Name)
		}
	}
	for i, a := range m.AliasedIO {
		p := fmt.Sprintf("aliased_io[%d].", i)
		for _, fv := range [...]struct{ f, v string }{{"output", a.Output}, {"input", a.Input}, {"kind", a.Kind}} {
			f := p + fv.f
			if fv.v == "" {
				if fv.f == "kind" {
					bad(f, fv.v, "empty: the deployed C++ reader reads an empty kind as kv_cache_update")
				} else {
					bad(f, fv.v, "empty: the deployed C++ reader drops an aliased entry with an empty "+fv.f)
				}
				continue
			}
			if ctl(f, fv.v) || !collisions {
				continue
			}
			for _, k := range scalarKeys {
				if fv.v == k || len(fv.v) > len(k) && fv.v[len(fv.v)-len(k)-1:] == `"`+k {
					bad(f, fv.v, fmt.Sprintf("the deployed C++ reader finds %q by searching the text after io_bindings and would take this string for the key, rejecting a blob in upstream's key order", k))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// verifyDeployedReading runs the C++ scanner over metadata written in safe
// mode and confirms it reads what m says. It is the safety net behind the
// explicit checks.
func verifyDeployedReading(js []byte, m *Metadata) error {
	var v DeployedView
	if reason := scanMetadata(js, &v); reason != "" {
		return &MetadataError{Field: "metadata", Value: truncate(string(js), 80),
			Msg: "the deployed C++ reader would reject this metadata: " + reason}
	}
	fail := func(field, what string, got, want any) error {
		return &MetadataError{Field: field, Value: fmt.Sprint(want),
			Msg: fmt.Sprintf("the deployed C++ reader would read %s as %v", what, got)}
	}
	if got, want := v.Inputs, m.Inputs(); !slices.Equal(got, want) {
		return fail("io_bindings", "the inputs", quoteAll(got), quoteAll(want))
	}
	if got, want := v.Outputs, m.Outputs(); !slices.Equal(got, want) {
		return fail("io_bindings", "the outputs", quoteAll(got), quoteAll(want))
	}
	if len(v.AliasedIO) != len(m.AliasedIO) {
		return fail("aliased_io", "the aliased I/O", v.AliasedIO, m.AliasedIO)
	}
	for i := range v.AliasedIO {
		if v.AliasedIO[i] != m.AliasedIO[i] {
			return fail(fmt.Sprintf("aliased_io[%d]", i), "this entry", v.AliasedIO[i], m.AliasedIO[i])
		}
	}
	if v.HardwareCompatible != m.HardwareCompatible {
		return fail("hardware_compatible", "it", v.HardwareCompatible, m.HardwareCompatible)
	}
	if int64(v.DeviceID) != m.DeviceID {
		return fail("device_id", "it", v.DeviceID, m.DeviceID)
	}
	return nil
}

// appendMetadata appends the metadata JSON. With safe set, the strings the
// C++ reader reads (names, aliased I/O) are written with raw non-ASCII and
// DEL. With scalarsFirst set, hardware_compatible and device_id come right
// after io_bindings, before aliased_io.
func appendMetadata(dst []byte, m *Metadata, safe, scalarsFirst bool) []byte {
	dst = append(dst, `{"io_bindings":[`...)
	for i, b := range m.IOBindings {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"name":`...)
		dst = appendString(dst, b.Name, safe)
		dst = append(dst, `,"dtype":`...)
		dst = appendString(dst, b.DType, false)
		dst = append(dst, `,"shape":[`...)
		for j, d := range b.Shape {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, d, 10)
		}
		dst = append(dst, `],"is_input":`...)
		dst = strconv.AppendBool(dst, b.IsInput)
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if scalarsFirst {
		dst = appendScalars(dst, m)
	}
	dst = append(dst, `,"aliased_io":[`...)
	for i, a := range m.AliasedIO {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"output":`...)
		dst = appendString(dst, a.Output, safe)
		dst = append(dst, `,"input":`...)
		dst = appendString(dst, a.Input, safe)
		dst = append(dst, `,"kind":`...)
		dst = appendString(dst, a.Kind, safe)
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if !scalarsFirst {
		dst = appendScalars(dst, m)
	}
	dst = append(dst, `,"serialized_metadata":`...)
	dst = appendString(dst, m.SerializedMetadata, false)
	dst = append(dst, `,"target_platform":`...)
	dst = appendString(dst, m.TargetPlatform, false)
	return append(dst, '}')
}

// appendScalars appends the hardware_compatible and device_id members, each
// after a comma.
func appendScalars(dst []byte, m *Metadata) []byte {
	dst = append(dst, `,"hardware_compatible":`...)
	dst = strconv.AppendBool(dst, m.HardwareCompatible)
	dst = append(dst, `,"device_id":`...)
	return strconv.AppendInt(dst, m.DeviceID, 10)
}

const hexDigits = "0123456789abcdef"

// shortEscaped are the characters json.dumps writes as a backslash and the
// letter at the same index of shortEscapes.
const shortEscaped, shortEscapes = "\"\\\n\r\t\b\f", `"\nrtbf`

// appendString appends s as a JSON string escaped like Python's json.dumps
// with ensure_ascii=True: lowercase \u escapes, astral characters as
// surrogate pairs, DEL escaped, no HTML escaping. With raw set, non-ASCII
// characters and DEL are written as they are. s must be valid UTF-8.
func appendString(dst []byte, s string, raw bool) []byte {
	dst = append(dst, '"')
	for _, r := range s {
		switch e := strings.IndexRune(shortEscaped, r); {
		case e >= 0:
			dst = append(dst, '\\', shortEscapes[e])
		case r < 0x20:
			dst = appendU(dst, r)
		case r < 0x7f:
			dst = append(dst, byte(r))
		case raw:
			dst = utf8.AppendRune(dst, r)
		case r > 0xffff:
			r -= 0x10000
			dst = appendU(dst, 0xd800+(r>>10))
			dst = appendU(dst, 0xdc00+(r&0x3ff))
		default:
			dst = appendU(dst, r)
		}
	}
	return append(dst, '"')
}

func appendU(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// blobReaderAt serves a blob from its in-memory prefix and the engine reader.
type blobReaderAt struct {
	prefix     []byte
	engine     io.ReaderAt
	engineSize int64
	parts      []*io.SectionReader // SegmentParts, made once
}

// SegmentParts returns the blob as its in-memory prefix followed by the
// engine range, sections whose bytes concatenate to what ReadAt reads.
// The writer asks for them to lay out, deduplicate and copy each blob, so
// they are made once, with the reader; sections are read only through
// ReadAt, which keeps no state, so sharing them is safe.
func (b *blobReaderAt) SegmentParts() []*io.SectionReader { return b.parts }

func (b *blobReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("trt blob: negative offset")
	}
	size := int64(len(b.prefix)) + b.engineSize
	if off >= size {
		return 0, io.EOF
	}
	n := 0
	if off < int64(len(b.prefix)) {
		n = copy(p, b.prefix[off:])
	}
	for n < len(p) && off+int64(n) < size {
		eoff := off + int64(n) - int64(len(b.prefix))
		want := min(int64(len(p)-n), b.engineSize-eoff)
		k, err := b.engine.ReadAt(p[n:n+int(want)], eoff)
		n += k
		if int64(k) == want {
			continue
		}
		if err == nil || err == io.EOF {
			return n, &EngineError{Size: b.engineSize, Err: io.ErrUnexpectedEOF,
				Msg: fmt.Sprintf("engine source ended after %d of %d bytes", eoff+int64(k), b.engineSize)}
		}
		return n, &EngineError{Size: b.engineSize, Msg: fmt.Sprintf("reading the engine at %d", eoff+int64(k)), Err: err}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// quoteAll writes s as ["a" "b"], each string quoted as strconv.Quote does.
func quoteAll(s []string) string { return fmt.Sprintf("%q", s) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
