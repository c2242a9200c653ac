package delegate

import (
	"fmt"
	"github.com/ptekit/ptekit/internal/quote"
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
	// HazardMetadataUnread: the metadata is larger than MaxMetadataSize, so
	// ptekit did not read it; the deployed reader would scan it, with a
	// verdict ptekit cannot tell.
	HazardMetadataUnread
	// HazardTypeConfused: upstream's Python reader accepts the metadata
	// but ptekit's strict reading refuses it, because a value has the
	// wrong JSON type (device_id "1", is_input 1, ...) or is not
	// representable (see PyMetadata.Refused).
	HazardTypeConfused
	// HazardDuplicateName: two bindings carry the same name. TensorRT
	// tensor names are unique, so the runtime binds both to one tensor.
	HazardDuplicateName
	// HazardAliasedIOInvalid: an aliased_io entry, as the deployed reader
	// yields it, that TensorRTBackend init refuses with InvalidProgram: its
	// output or input is not a binding of that direction, or its kind is
	// neither kv_cache_update nor user. Binding names are only checked when
	// the blob names some (otherwise init infers them from the engine).
	HazardAliasedIOInvalid
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
	HazardMetadataUnread:     "metadata-unread",
	HazardTypeConfused:       "type-confused",
	HazardDuplicateName:      "duplicate-name",
	HazardAliasedIOInvalid:   "aliased-io-invalid",
}

// String returns a short stable name for the kind, e.g. "inputs".
func (k HazardKind) String() string {
	if s, ok := hazardKindNames[k]; ok {
		return s
	}
	return "HazardKind(" + strconv.Itoa(int(k)) + ")"
}

// Disagreement reports whether the kind is a difference between the JSON
// reading of the blob and the deployed C++ reader's, as opposed to a
// property both readers share (trailing bytes, a negative device id, a
// duplicate name, an aliased_io entry init refuses), a difference between
// the two JSON readings
// (HazardTypeConfused), or something ptekit did not read.
func (k HazardKind) Disagreement() bool {
	switch k {
	case HazardDeployedRejects, HazardDeployedAccepts, HazardInputs, HazardOutputs, HazardAliasedIO,
		HazardHardwareCompatible, HazardDeviceID, HazardEngineSizeWraps:
		return true
	}
	return false
}

// Hazard is one way in which the deployed runtime reads a blob differently
// from what its metadata says, or a property of the blob that makes the
// deployed runtime fail or misbehave.
type Hazard struct {
	Kind HazardKind // what kind of difference or property this is
	Msg  string     // a complete sentence-like description, in lower case
}

// String returns the message.
func (h Hazard) String() string { return h.Msg }

// Hazards compares the JSON meaning of a blob with what the deployed C++
// reader sees. b and decodeErr are Decode's results, d is ReadDeployed's.
// When both readers reject the blob there is nothing to compare and the
// result is empty: the blob is simply invalid (decodeErr says why). Besides
// the differences, the result lists properties of the blob on which the
// deployed runtime fails or misbehaves (see HazardKind.Disagreement). Check
// also compares with upstream's Python reader, which Hazards does not run.
func Hazards(b *Blob, decodeErr error, d *DeployedView) []Hazard {
	return hazards(&Report{Blob: b, Err: decodeErr, Deployed: d})
}

// MaxHazardsPerKind is the most hazards of one kind that Hazards and Check
// list one by one; the rest of that kind are counted in one last hazard of
// the kind, "and N more ...". A crafted blob can otherwise carry millions
// of bad aliased_io entries, each a hazard.
const MaxHazardsPerKind = 8

// hazardList collects hazards, at most MaxHazardsPerKind of each kind,
// counting (without formatting) the ones left out.
type hazardList struct {
	hz []Hazard
	n  map[HazardKind]int // hazards added, listed or not, by kind
}

func (l *hazardList) add(k HazardKind, format string, args ...any) {
	if l.n[k]++; l.n[k] > MaxHazardsPerKind {
		return
	}
	l.hz = append(l.hz, Hazard{Kind: k, Msg: fmt.Sprintf(format, args...)})
}

// list returns the hazards, each kind's overflow summarised after its last
// listed hazard.
func (l *hazardList) list() []Hazard {
	var out []Hazard
	seen := map[HazardKind]int{}
	for _, h := range l.hz {
		out = append(out, h)
		if seen[h.Kind]++; seen[h.Kind] == MaxHazardsPerKind && l.n[h.Kind] > MaxHazardsPerKind {
			out = append(out, Hazard{Kind: h.Kind, Msg: fmt.Sprintf("and %d more %s hazards", l.n[h.Kind]-MaxHazardsPerKind, h.Kind)})
		}
	}
	return out
}

// hazards lists the hazards of the blob's readings in r: Hazards, and with
// Check's Python reading (Python or PythonErr set), that reading's too.
func hazards(r *Report) []Hazard {
	b, decodeErr, d := r.Blob, r.Err, r.Deployed
	if d == nil {
		return nil
	}
	hz := &hazardList{n: map[HazardKind]int{}}
	add := hz.add
	if d.MetadataUnread {
		add(HazardMetadataUnread, "the metadata is %d bytes, more than the %d ptekit reads; what the deployed reader, which has no limit, makes of it is unknown",
			d.MetadataSize, MaxMetadataSize)
		return hz.list()
	}
	if d.OK && d.EngineSizeWraps {
		add(HazardEngineSizeWraps, "engine_size %d wraps engine_offset+engine_size past 2^64; the deployed reader accepts it and would hand TensorRT an engine far past the end of the blob", d.EngineSize)
	}
	if b == nil || decodeErr != nil {
		msg := "the blob is invalid"
		if decodeErr != nil {
			msg = decodeErr.Error()
		}
		if r.Python != nil {
			add(HazardTypeConfused, "upstream's Python reader accepts metadata that ptekit's strict reading refuses: %s", refusals(r.Python.Metadata.Refused))
		}
		if d.OK {
			reads := fmt.Sprintf("it reads inputs %s, outputs %s, device_id %d", quoteAll(d.Inputs), quoteAll(d.Outputs), d.DeviceID)
			switch {
			case r.Python != nil:
				add(HazardDeployedAccepts, "ptekit's strict reading rejects this blob (%s) and upstream's Python reader accepts it with other types, while the deployed reader accepts it; %s", msg, reads)
			case r.PythonErr == nil: // Hazards: the Python reading was not run
				add(HazardDeployedAccepts, "ptekit's strict reading rejects this blob (%s), but the deployed reader accepts it; %s", msg, reads)
			default:
				add(HazardDeployedAccepts, "the blob is invalid (%s): upstream's Python reader and ptekit reject it, but the deployed reader accepts it; %s", msg, reads)
			}
			invalidAliases(hz, d)
		}
		return hz.list()
	}
	m := &b.Metadata
	if !d.OK {
		add(HazardDeployedRejects, "the deployed reader rejects this blob (%s); TensorRTBackend init would fail with InvalidProgram", d.Reason)
		return hz.list()
	}
	compareNames(hz, HazardInputs, "input", m.Inputs(), d.Inputs, m.Outputs(), d.Outputs)
	compareNames(hz, HazardOutputs, "output", m.Outputs(), d.Outputs, m.Inputs(), d.Inputs)
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
	for _, dup := range duplicateNames(m.IOBindings) {
		add(HazardDuplicateName, "binding name %s is used by io_bindings %s; TensorRT tensor names are unique, so the runtime binds them all to one tensor",
			quote.String(m.IOBindings[dup[0]].Name), formatIndices(dup))
	}
	invalidAliases(hz, d)
	switch aliased, tr02 := len(m.AliasedIO) > 0, b.Header.Magic == MagicTR02; {
	case aliased && !tr02:
		add(HazardMagic, "magic TR01 but the metadata has aliased_io; the upstream writer uses TR02")
	case !aliased && tr02:
		add(HazardMagic, "magic TR02 but the metadata has no aliased_io; the upstream writer uses TR01")
	}
	if n := b.TrailingBytes(); n > 0 {
		add(HazardTrailingBytes, "%d bytes after the engine are ignored by both readers", n)
	}
	return hz.list()
}

// invalidAliases adds a HazardAliasedIOInvalid for each reason
// TensorRTBackend init refuses an aliased_io entry of d, an accepting
// deployed view: init checks that the output and the input are bindings
// of the blob (when the blob lists none, it takes them from the engine,
// which ptekit does not see) and that the kind is kv_cache_update or user.
func invalidAliases(hz *hazardList, d *DeployedView) {
	named := len(d.Inputs)+len(d.Outputs) > 0
	for _, a := range d.AliasedIO {
		entry := fmt.Sprintf("aliased_io entry %s <- %s", quote.String(a.Output), quote.String(a.Input))
		if named && !slices.Contains(d.Outputs, a.Output) {
			hz.add(HazardAliasedIOInvalid, "%s: output %s is not an output binding of the blob; TensorRTBackend init fails with InvalidProgram (aliased_io names not found)", entry, quote.String(a.Output))
		}
		if named && !slices.Contains(d.Inputs, a.Input) {
			hz.add(HazardAliasedIOInvalid, "%s: input %s is not an input binding of the blob; TensorRTBackend init fails with InvalidProgram (aliased_io names not found)", entry, quote.String(a.Input))
		}
		if a.Kind != KindKVCacheUpdate && a.Kind != KindUser {
			hz.add(HazardAliasedIOInvalid, "%s has kind %s; TensorRTBackend init accepts only %s and %s and fails with InvalidProgram", entry, quote.String(a.Kind), quote.String(KindKVCacheUpdate), quote.String(KindUser))
		}
	}
}

// refusals lists strict-reading refusals for a message.
func refusals(errs []*BlobError) string {
	var parts []string
	for _, e := range errs[:min(len(errs), MaxHazardsPerKind)] {
		parts = append(parts, fmt.Sprintf("%s: %s (at byte %d)", e.Field, e.Msg, e.Off))
	}
	return strings.Join(moreItems(parts, len(errs)), "; ")
}

// moreItems appends "and N more" to the first items of a list of total.
func moreItems(items []string, total int) []string {
	if total > len(items) {
		items = append(items, fmt.Sprintf("and %d more", total-len(items)))
	}
	return items
}

// duplicateNames returns, for each binding name used more than once, the
// indices of the bindings that use it, in order of first use.
func duplicateNames(bs []Binding) [][]int {
	at := map[string][]int{}
	for i, b := range bs {
		at[b.Name] = append(at[b.Name], i)
	}
	var out [][]int
	for i, b := range bs {
		if idx := at[b.Name]; len(idx) > 1 && idx[0] == i {
			out = append(out, idx)
		}
	}
	return out
}

// formatIndices writes idx as "[1], [4]".
func formatIndices(idx []int) string { return strings.ReplaceAll(fmt.Sprint(idx), " ", "], [") }

// compareNames reports how the deployed names of one direction (got)
// differ from the metadata's (want); otherWant and otherGot are the names
// of the other direction, to recognise a binding that changed direction.
func compareNames(hz *hazardList, kind HazardKind, what string, want, got, otherWant, otherGot []string) {
	if slices.Equal(want, got) {
		return
	}
	var details []string
	if len(want) == len(got) {
		for i := range want {
			if want[i] != got[i] {
				details = append(details, fmt.Sprintf("%s %d %s is read as %s", what, i, quote.String(want[i]), quote.String(got[i])))
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
				details = append(details, fmt.Sprintf("%s is read as %s", quote.String(n), opposite))
			default:
				details = append(details, fmt.Sprintf("%s is missing", quote.String(n)))
			}
		}
		for _, n := range got {
			if !slices.Contains(want, n) && !slices.Contains(otherWant, n) {
				details = append(details, fmt.Sprintf("%s is not in the metadata", quote.String(n)))
			}
		}
	}
	msg := fmt.Sprintf("%ss differ: the metadata says %s, the deployed reader sees %s", what, quoteAll(want), quoteAll(got))
	if len(details) > 0 {
		msg += " (" + strings.Join(moreItems(details[:min(len(details), MaxHazardsPerKind)], len(details)), "; ") + ")"
	}
	hz.add(kind, "%s", msg)
}

func formatAliases(a []AliasedIO) string {
	parts := make([]string, len(a))
	for i, x := range a {
		parts[i] = fmt.Sprintf("%s<-%s (%s)", quote.String(x.Output), quote.String(x.Input), x.Kind)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Report is the result of Check: both readings of a blob and their
// differences.
type Report struct {
	Blob      *Blob         // the strict reading; nil when Err is set
	Err       error         // why Decode rejects the blob, if it does
	Python    *PyBlob       // upstream's Python reading; nil when PythonErr is set
	PythonErr error         // why DecodePython rejects the blob, if it does
	Deployed  *DeployedView // the deployed C++ reader's view
	// Hazards are Hazards(Blob, Err, Deployed) and, when Python's reader
	// accepts what the strict reading refuses, a HazardTypeConfused.
	Hazards []Hazard
}

// BothReject reports whether the strict reading and the deployed C++ reader
// both reject the blob, which Hazards leaves out (there is nothing to
// compare), although TensorRTBackend init fails on it. A blob whose
// metadata ptekit did not read is not rejected by the deployed reader: its
// verdict is unknown (HazardMetadataUnread).
func (r *Report) BothReject() bool {
	return r.Err != nil && !r.Deployed.OK && !r.Deployed.MetadataUnread
}

// Check reads a blob three ways (the strict reading, upstream's Python
// reading and the deployed C++ reader's), reading its header and metadata
// once, and lists the hazards. The error is only for failures to read r; a malformed
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
		if md, err = readMetadata(r, rep.Deployed.MetadataOffset, rep.Deployed.MetadataSize); err != nil {
			return nil, err
		}
	}
	if scan {
		scanMetadata(md, rep.Deployed)
	}
	if herr != nil {
		rep.Err, rep.PythonErr = herr, herr
	} else if py, err := decodePyMetadata(md, int64(h.MetadataOffset)); err != nil {
		rep.Err, rep.PythonErr = err, err
	} else {
		rep.Python = &PyBlob{Header: *h, Metadata: *py, MetadataRaw: md, Size: size, r: r}
		rep.Blob, rep.Err = rep.Python.strict()
	}
	rep.Hazards = hazards(rep)
	return rep, nil
}
