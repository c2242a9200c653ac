package delegate

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// HazardKind classifies a Hazard.
type HazardKind uint8

// Hazard kinds.
const (
	// HazardDeployedRejects: the metadata is valid but the deployed C++
	// reader rejects the blob, so TensorRTBackend::init fails with
	// InvalidProgram.
	HazardDeployedRejects HazardKind = iota + 1
	// HazardDeployedAccepts: the blob is invalid (Decode fails) but the
	// deployed C++ reader accepts it and runs with what it scanned.
	HazardDeployedAccepts
	// HazardInputs: the deployed reader sees different input names.
	HazardInputs
	// HazardOutputs: the deployed reader sees different output names.
	HazardOutputs
	// HazardAliasedIO: the deployed reader sees different aliased I/O.
	HazardAliasedIO
	// HazardHardwareCompatible: the deployed reader sees a different flag.
	HazardHardwareCompatible
	// HazardDeviceID: the deployed reader sees a different device id.
	HazardDeviceID
	// HazardEngineSizeWraps: engine_offset+engine_size overflows, which the
	// deployed reader does not catch.
	HazardEngineSizeWraps
	// HazardNoBindings: the deployed reader finds no binding names and
	// infers them from the engine's tensor names at init.
	HazardNoBindings
	// HazardMagic: the magic does not match the metadata (TR02 without
	// aliased I/O or TR01 with it). Both readers accept it.
	HazardMagic
	// HazardTrailingBytes: bytes after the engine, ignored by both readers.
	HazardTrailingBytes
	// HazardNegativeDeviceID: both readers agree on a negative device id,
	// which the runtime's cudaSetDevice rejects.
	HazardNegativeDeviceID
)

var hazardKindNames = map[HazardKind]string{
	HazardDeployedRejects:    "deployed-rejects",
	HazardDeployedAccepts:    "deployed-accepts-invalid",
	HazardInputs:             "inputs",
	HazardOutputs:            "outputs",
	HazardAliasedIO:          "aliased-io",
	HazardHardwareCompatible: "hardware-compatible",
	HazardDeviceID:           "device-id",
	HazardEngineSizeWraps:    "engine-size-wraps",
	HazardNoBindings:         "no-bindings",
	HazardMagic:              "magic",
	HazardTrailingBytes:      "trailing-bytes",
	HazardNegativeDeviceID:   "negative-device-id",
}

// String returns a short stable name for the kind, e.g. "inputs".
func (k HazardKind) String() string {
	if s, ok := hazardKindNames[k]; ok {
		return s
	}
	return "HazardKind(" + strconv.Itoa(int(k)) + ")"
}

// Disagreement reports whether the kind is a difference between the two
// readers (as opposed to a property both readers share, such as trailing
// bytes or a negative device id).
func (k HazardKind) Disagreement() bool {
	return k >= HazardDeployedRejects && k <= HazardEngineSizeWraps
}

// Hazard is one way in which the deployed runtime reads a blob differently
// from what its metadata says, or a property of the blob that makes the
// deployed runtime fail or misbehave.
type Hazard struct {
	Kind HazardKind
	Msg  string // a complete sentence-like description, in lower case
}

// String returns the message.
func (h Hazard) String() string { return h.Msg }

// Hazards compares the JSON meaning of a blob with what the deployed C++
// reader sees. b and decodeErr are Decode's results, d is ReadDeployed's.
// When both readers reject the blob there is nothing to compare and the
// result is empty: the blob is simply invalid (decodeErr says why).
func Hazards(b *Blob, decodeErr error, d *DeployedView) []Hazard {
	var hz []Hazard
	add := func(k HazardKind, format string, args ...any) {
		hz = append(hz, Hazard{Kind: k, Msg: fmt.Sprintf(format, args...)})
	}
	if d == nil {
		return nil
	}
	if d.OK && d.EngineSizeWraps {
		add(HazardEngineSizeWraps, "engine_size %d wraps engine_offset+engine_size past 2^64; the deployed reader accepts it and would hand TensorRT an engine far past the end of the blob", d.EngineSize)
	}
	if b == nil || decodeErr != nil {
		if d.OK {
			msg := "the blob is invalid"
			if decodeErr != nil {
				msg = decodeErr.Error()
			}
			add(HazardDeployedAccepts, "the deployed reader accepts a blob that is not valid (%s); it reads inputs %s, outputs %s, device_id %d",
				msg, quoteAll(d.Inputs), quoteAll(d.Outputs), d.DeviceID)
		}
		return hz
	}
	m := &b.Metadata
	if !d.OK {
		add(HazardDeployedRejects, "the deployed reader rejects this blob (%s); TensorRTBackend init would fail with InvalidProgram", d.Reason)
		return hz
	}
	compareNames(&hz, HazardInputs, "input", m.Inputs(), d.Inputs, m.Outputs(), d.Outputs)
	compareNames(&hz, HazardOutputs, "output", m.Outputs(), d.Outputs, m.Inputs(), d.Inputs)
	if !slices.Equal(m.AliasedIO, d.AliasedIO) {
		add(HazardAliasedIO, "aliased_io differs: the metadata says %s, the deployed reader sees %s", formatAliases(m.AliasedIO), formatAliases(d.AliasedIO))
	}
	if m.HardwareCompatible != d.HardwareCompatible {
		add(HazardHardwareCompatible, "hardware_compatible differs: the metadata says %t, the deployed reader sees %t", m.HardwareCompatible, d.HardwareCompatible)
	}
	if m.DeviceID != int64(d.DeviceID) {
		add(HazardDeviceID, "device_id differs: the metadata says %d, the deployed reader sees %d", m.DeviceID, d.DeviceID)
	} else if m.DeviceID < 0 {
		add(HazardNegativeDeviceID, "device_id %d is negative; the runtime cannot select that CUDA device and init fails", m.DeviceID)
	}
	if len(d.Inputs) == 0 && len(d.Outputs) == 0 {
		add(HazardNoBindings, "the deployed reader finds no binding names and infers them from the engine's tensor names, which must end in .N or _N")
	}
	if aliased := len(m.AliasedIO) > 0; aliased != (b.Header.Magic == MagicTR02) {
		if aliased {
			add(HazardMagic, "magic TR01 but the metadata has aliased_io; the upstream writer uses TR02")
		} else {
			add(HazardMagic, "magic TR02 but the metadata has no aliased_io; the upstream writer uses TR01")
		}
	}
	if n := b.TrailingBytes(); n > 0 {
		add(HazardTrailingBytes, "%d bytes after the engine are ignored by both readers", n)
	}
	return hz
}

// compareNames reports how the deployed names of one direction (got)
// differ from the metadata's (want); otherWant and otherGot are the names
// of the other direction, to recognise a binding that changed direction.
func compareNames(hz *[]Hazard, kind HazardKind, what string, want, got, otherWant, otherGot []string) {
	if slices.Equal(want, got) {
		return
	}
	var details []string
	if len(want) == len(got) {
		for i := range want {
			if want[i] != got[i] {
				details = append(details, fmt.Sprintf("%s %d %q is read as %q", what, i, want[i], got[i]))
			}
		}
	} else {
		for _, n := range want {
			switch {
			case slices.Contains(got, n):
			case n == "":
				details = append(details, fmt.Sprintf("the %s with an empty name is dropped", what))
			case slices.Contains(otherGot, n):
				opposite := "an output"
				if what == "output" {
					opposite = "an input"
				}
				details = append(details, fmt.Sprintf("%q is read as %s", n, opposite))
			default:
				details = append(details, fmt.Sprintf("%q is missing", n))
			}
		}
		for _, n := range got {
			if !slices.Contains(want, n) && !slices.Contains(otherWant, n) {
				details = append(details, fmt.Sprintf("%q is not in the metadata", n))
			}
		}
	}
	msg := fmt.Sprintf("%ss differ: the metadata says %s, the deployed reader sees %s", what, quoteAll(want), quoteAll(got))
	if len(details) > 0 {
		msg += " (" + strings.Join(details, "; ") + ")"
	}
	*hz = append(*hz, Hazard{Kind: kind, Msg: msg})
}

func formatAliases(a []AliasedIO) string {
	parts := make([]string, len(a))
	for i, x := range a {
		parts[i] = fmt.Sprintf("%q<-%q (%s)", x.Output, x.Input, x.Kind)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Report is the result of Check: both readings of a blob and their
// differences.
type Report struct {
	Blob     *Blob         // the strict reading; nil when Err is set
	Err      error         // why Decode rejects the blob, if it does
	Deployed *DeployedView // the deployed C++ reader's view
	Hazards  []Hazard      // Hazards(Blob, Err, Deployed)
}

// Check reads a blob both ways, reading its header and metadata once, and
// lists the hazards. The error is only for failures to read r; a malformed
// blob is reported in Report.Err and Report.Deployed.
func Check(r io.ReaderAt, size int64) (*Report, error) {
	hdr, err := readHeader(r, size)
	if err != nil {
		return nil, err
	}
	rep := &Report{Deployed: &DeployedView{Size: size}}
	h, herr := checkHeader(hdr, size)
	scan := deployedHeader(hdr, size, rep.Deployed)
	var md []byte
	if herr == nil || scan {
		// Both header checks accept only the same metadata range.
		hh := parseHeader(hdr)
		if md, err = readMetadata(r, hh.MetadataOffset, hh.MetadataSize); err != nil {
			return nil, err
		}
	}
	if scan {
		deployedMetadata(md, rep.Deployed)
	}
	if herr != nil {
		rep.Err = herr
	} else {
		rep.Blob, rep.Err = decodeWith(r, size, h, md)
	}
	rep.Hazards = Hazards(rep.Blob, rep.Err, rep.Deployed)
	return rep, nil
}
