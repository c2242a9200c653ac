package inspect

import (
	"encoding/json"
	"io"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/pte"
)

// TensorRT describes the payload of a TensorRTBackend delegate: its blob
// header, its metadata as the exporter meant it, what the deployed C++
// reader makes of it, and the differences between the two.
type TensorRT struct {
	// The header fields; null when the payload is shorter than the header.
	Magic          *string `json:"magic"` // four bytes, Latin-1
	MetadataOffset *uint32 `json:"metadata_offset"`
	MetadataSize   *uint32 `json:"metadata_size"`
	EngineOffset   *uint32 `json:"engine_offset"`
	EngineSize     *uint64 `json:"engine_size"`
	// Metadata is the parsed metadata JSON (strict JSON, as the upstream
	// Python reader reads it); null when the blob is unreadable.
	Metadata *TRTMetadata `json:"metadata"`
	// Error says why the blob is unreadable; absent when it is readable.
	Error string `json:"error,omitempty"`
	// Deployed is what the C++ delegate's reader yields at load time.
	Deployed *Deployed `json:"deployed"`
	// Hazards lists, in words, every way the deployed reader's view differs
	// from what the metadata says, and every property of the blob that makes
	// the deployed runtime fail (a blob both readers reject, aliased I/O
	// that init cannot bind); [] when none.
	Hazards []string `json:"hazards"`
}

// TRTMetadata is the metadata of a blob as upstream's Python reader holds
// it (delegate.PyMetadata): every value keeps the JSON type the blob gives
// it, because that reader checks no types (TensorRT.Hazards say what each
// reader makes of confused ones). Values are nil, bool, json.Number,
// string, []any or map[string]any; the non-finite numbers Python accepts
// are the strings "nan", "inf" and "-inf".
type TRTMetadata struct {
	IOBindings         []TRTBinding   `json:"io_bindings"`
	AliasedIO          []TRTAliasedIO `json:"aliased_io"`
	HardwareCompatible any            `json:"hardware_compatible"`
	DeviceID           any            `json:"device_id"`
	SerializedMetadata any            `json:"serialized_metadata"`
	TargetPlatform     any            `json:"target_platform"`
}

// TRTBinding is one binding as Python's reader holds it (see TRTMetadata
// for the value types). Python treats it as an input when IsInput is
// truthy (see Input).
type TRTBinding struct {
	Name    any `json:"name"`
	DType   any `json:"dtype"`
	Shape   any `json:"shape"`
	IsInput any `json:"is_input"`
}

// Input reports whether Python's reader takes the binding for an input:
// is_input is truthy.
func (b *TRTBinding) Input() bool {
	return (&delegate.PyBinding{IsInput: b.IsInput}).Input()
}

// TRTAliasedIO is one aliased I/O entry. In TRTMetadata its values are as
// Python's reader holds them (see there); in Deployed they are strings.
type TRTAliasedIO struct {
	Output any `json:"output"`
	Input  any `json:"input"`
	Kind   any `json:"kind"`
}

// Deployed is the JSON form of delegate.DeployedView. When OK is false the
// blob is rejected at load time (the backend's init fails with
// InvalidProgram) and only {"ok": false} is written.
type Deployed struct {
	OK                 bool           `json:"ok"`
	Inputs             []string       `json:"inputs"`
	Outputs            []string       `json:"outputs"`
	AliasedIO          []TRTAliasedIO `json:"aliased_io"`
	HardwareCompatible bool           `json:"hardware_compatible"`
	DeviceID           int32          `json:"device_id"`
}

// MarshalJSON writes only {"ok": false} for a rejected blob.
func (d *Deployed) MarshalJSON() ([]byte, error) {
	if !d.OK {
		return []byte(`{"ok":false}`), nil
	}
	type plain Deployed
	return json.Marshal((*plain)(d))
}

// blobReports keeps the delegate.Check report of the last delegate payload
// a view has read, by its reference, so that a view that shows a blob and
// checks it reads it once. Only one report is held, so that memory does
// not grow with the engine count. A nil *blobReports keeps nothing.
type blobReports struct {
	ref pte.BackendDelegateDataReference
	rep *delegate.Report
}

// check returns the report of the payload ref refers to (r, of size
// bytes), the one kept when it is the same reference, else from
// delegate.Check.
func (c *blobReports) check(ref *pte.BackendDelegateDataReference, r io.ReaderAt, size int64) (*delegate.Report, error) {
	if c == nil || ref == nil {
		return delegate.Check(r, size)
	}
	if c.rep != nil && c.ref == *ref {
		return c.rep, nil
	}
	rep, err := delegate.Check(r, size)
	if err != nil {
		return nil, err
	}
	c.ref, c.rep = *ref, rep
	return rep, nil
}

// newTensorRT is the view of a TensorRT blob of size bytes from its
// delegate.Check report: both readings (the strict one and the deployed
// C++ reader's) and the hazards.
func newTensorRT(rep *delegate.Report, size int64) *TensorRT {
	t := &TensorRT{Hazards: []string{}}
	dv := rep.Deployed
	switch {
	case rep.Blob != nil:
		h := &rep.Blob.Header
		t.setHeader(h.Magic, &h.MetadataOffset, &h.MetadataSize, &h.EngineOffset, &h.EngineSize)
	case dv.Magic == delegate.MagicTR01 || dv.Magic == delegate.MagicTR02:
		// The deployed reader stores the offsets once the magic is known.
		t.setHeader(dv.Magic, &dv.MetadataOffset, &dv.MetadataSize, &dv.EngineOffset, &dv.EngineSize)
	case size >= delegate.HeaderSize:
		t.setHeader(dv.Magic, nil, nil, nil, nil)
	}
	if rep.Err != nil {
		t.Error = rep.Err.Error()
	}
	if rep.Python != nil {
		t.Metadata = trtMetadata(&rep.Python.Metadata)
	}
	t.Deployed = &Deployed{
		OK:                 dv.OK,
		Inputs:             nonNil(dv.Inputs),
		Outputs:            nonNil(dv.Outputs),
		AliasedIO:          aliased(dv.AliasedIO),
		HardwareCompatible: dv.HardwareCompatible,
		DeviceID:           dv.DeviceID,
	}
	for _, hz := range rep.Hazards {
		t.Hazards = append(t.Hazards, hz.String())
	}
	if rep.BothReject() {
		// Both readers reject it: no disagreement, but the runtime fails.
		t.Hazards = append(t.Hazards, "the deployed C++ reader rejects this blob ("+dv.Reason+"); TensorRTBackend init fails with InvalidProgram")
	}
	return t
}

func (t *TensorRT) setHeader(magic [4]byte, mo, ms, eo *uint32, es *uint64) {
	t.Magic = new(latin1(magic[:]))
	t.MetadataOffset, t.MetadataSize, t.EngineOffset, t.EngineSize = cp(mo), cp(ms), cp(eo), cp(es)
}

// cp returns a pointer to a copy of *p, or nil.
func cp[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return new(*p)
}

// nonNil returns s, or an empty slice for nil: a list written [], not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func aliased(a []delegate.AliasedIO) []TRTAliasedIO {
	out := make([]TRTAliasedIO, len(a))
	for i, x := range a {
		out[i] = TRTAliasedIO{Output: x.Output, Input: x.Input, Kind: x.Kind}
	}
	return out
}

func trtMetadata(m *delegate.PyMetadata) *TRTMetadata {
	out := &TRTMetadata{
		IOBindings:         make([]TRTBinding, len(m.IOBindings)),
		AliasedIO:          make([]TRTAliasedIO, len(m.AliasedIO)),
		HardwareCompatible: pyValue(m.HardwareCompatible),
		DeviceID:           pyValue(m.DeviceID),
		SerializedMetadata: pyValue(m.SerializedMetadata),
		TargetPlatform:     pyValue(m.TargetPlatform),
	}
	for i, b := range m.IOBindings {
		out.IOBindings[i] = TRTBinding{Name: pyValue(b.Name), DType: pyValue(b.DType), Shape: pyValue(b.Shape), IsInput: pyValue(b.IsInput)}
	}
	for i, a := range m.AliasedIO {
		out.AliasedIO[i] = TRTAliasedIO{Output: pyValue(a.Output), Input: pyValue(a.Input), Kind: pyValue(a.Kind)}
	}
	return out
}

// pyValue returns a value of Python's reading with the number literals JSON
// cannot hold (NaN, Infinity, -Infinity) as the strings "nan", "inf" and
// "-inf".
func pyValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		switch x {
		case "NaN":
			return "nan"
		case "Infinity":
			return "inf"
		case "-Infinity":
			return "-inf"
		}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = pyValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = pyValue(e)
		}
		return out
	}
	return v
}
