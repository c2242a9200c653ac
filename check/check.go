// Package check is ptekit's one verdict on a program file: every check it
// knows, as a list of problems, each an error (ExecuTorch or the TensorRT
// delegate refuses the program, a method or a delegate, or misbehaves) or a
// warning. `pteinspect --verify` prints this list and fails on an error,
// `inspect.Check` and the views' "problems" are this list, and
// export.Rebake refuses an input with an error in it: what one calls an
// error, the others do too.
//
// Program runs the reader's checks (pte.File.Verify: the container and what
// each method needs to load) and, for every TensorRTBackend delegate, the
// checks of its compile specs and of its blob, read both the way its
// metadata means it and the way the deployed C++ reader reads it (package
// delegate). pte.File.Verify alone knows nothing of delegates: a program
// whose TensorRT blob the deployed reader misreads, or whose delegate has
// the weight_streaming_budget key twice, passes it and fails Program.
package check

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/internal/quote"
	"github.com/ptekit/ptekit/pte"
)

// Severities of a Problem.
const (
	SeverityError   = "error"   // ExecuTorch refuses the program, a method or a delegate, or misbehaves
	SeverityWarning = "warning" // legal but suspicious or unportable
)

// Problem is one finding: what is wrong, where, and what ExecuTorch does
// about it. Its JSON form is the "problems" member of `pteinspect --json`
// and the "findings" of `--verify --json` (docs/json.md).
type Problem struct {
	// Severity is SeverityError or SeverityWarning.
	Severity string `json:"severity"`
	// Method is the method the problem is about; empty (and absent from the
	// JSON form) for program-level problems.
	Method string `json:"method,omitempty"`
	// Path locates the problem in the program, in the JSON form's names,
	// e.g. "execution_plan[0].delegates[1].compile_specs".
	Path string `json:"path"`
	// Offset is the absolute file offset of the damaged bytes, or nil.
	Offset *int64 `json:"offset"`
	// Code is the ExecuTorch error class ("InvalidProgram", "NotFound",
	// ...) an error makes the runtime return; it may be "" for warnings.
	Code string `json:"code"`
	// Message says what is wrong.
	Message string `json:"message"`
}

// IsError reports whether the problem is an error.
func (p Problem) IsError() bool { return p.Severity == SeverityError }

// String formats the problem as
// "error: [METHOD] PATH: MESSAGE (at byte N) [CODE]".
func (p Problem) String() string {
	s := p.Severity + ": "
	if p.Method != "" {
		s += "[" + p.Method + "] "
	}
	if p.Path != "" {
		s += p.Path + ": "
	}
	s += p.Message
	if p.Offset != nil {
		s += " (at byte " + strconv.FormatInt(*p.Offset, 10) + ")"
	}
	if p.Code != "" {
		s += " [" + p.Code + "]"
	}
	return s
}

// FirstError returns the first error among ps and how many errors ps
// holds; ok is false when there is none.
func FirstError(ps []Problem) (first Problem, n int, ok bool) {
	for _, p := range ps {
		if p.IsError() {
			if n == 0 {
				first = p
			}
			n++
		}
	}
	return first, n, n > 0
}

// FormatProblem returns the Problem for a format error of the reader, such
// as the one pte.Open returns for a damaged file.
func FormatProblem(sev pte.Severity, method string, fe *pte.FormatError) Problem {
	p := Problem{Severity: sev.String(), Method: method, Path: fe.Path, Code: fe.Code.String(), Message: fe.Msg}
	if fe.Off >= 0 {
		p.Offset = new(fe.Off)
	}
	return p
}

// Program runs every check ptekit knows on an opened program, however it
// was opened (whole, with pte.OpenOptions.LazyPlans, or over HTTP): the
// reader's findings (Reader) and then each delegate's (Delegate), plan by
// plan. It reads only the header and metadata of TensorRT blobs, fetched
// ahead over HTTP (Prefetch). The error is only for failures to read the
// file.
func Program(f *pte.File) ([]Problem, error) {
	Prefetch(f)
	out := Reader(f, "")
	for pi, n := 0, f.Program.NumPlans(); pi < n; pi++ {
		for di, d := range f.Program.PlanDelegates(pi) {
			ps, err := Delegate(f, pi, di, d, nil)
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
		}
	}
	return out, nil
}

// Reader returns the reader's findings (pte.File.Verify) as problems,
// narrowed to one method (and program-level ones) when method is not
// empty.
func Reader(f *pte.File, method string) []Problem {
	var out []Problem
	for _, x := range f.Verify() {
		if x.Err != nil && (method == "" || x.Method == "" || x.Method == method) {
			out = append(out, FormatProblem(x.Severity, x.Method, x.Err))
		}
	}
	return out
}

// BlobReport reads the delegate.Check report of a TensorRT blob: the
// payload ref refers to, r, of size bytes. A view that also shows the blob
// passes one that keeps the report it read, so that the blob is read once.
type BlobReport func(ref *pte.BackendDelegateDataReference, r io.ReaderAt, size int64) (*delegate.Report, error)

// Delegate returns the problems of delegate di of plan pi, d: none for a
// delegate of another backend (or a nil one); for a TensorRTBackend
// delegate, its compile specs' and, when its payload can be reached (an
// unreachable one is the reader's finding), its blob's. A blob the deployed
// reader rejects, or reads differently from what it says, is an error; a
// property both readers share is a warning unless the runtime fails on it.
// report reads the blob's report; nil reads it with delegate.Check.
func Delegate(f *pte.File, pi, di int, d *pte.BackendDelegate, report BlobReport) ([]Problem, error) {
	if d == nil || !delegate.IsTensorRT(d.ID) {
		return nil, nil
	}
	if report == nil {
		report = func(_ *pte.BackendDelegateDataReference, r io.ReaderAt, size int64) (*delegate.Report, error) {
			return delegate.Check(r, size)
		}
	}
	method := f.Program.PlanName(pi)
	at := fmt.Sprintf("execution_plan[%d].delegates[%d]", pi, di)
	out := cStringProblems(method, at, d)
	// A weight_streaming_budget compile spec the TensorRT delegate refuses
	// at init: duplicated or malformed. (A valid load-time option would
	// hide it; the file alone cannot know.)
	if _, err := compilespec.SpecBudget(d.CompileSpecs); err != nil {
		out = append(out, Problem{Severity: SeverityError, Method: method, Path: at + ".compile_specs", Code: pte.CodeInvalidProgram.String(),
			Message: err.Error() + "; TensorRTBackend init fails unless a load-time budget option is given"})
	}
	pl, err := f.DelegateData(pi, di)
	if err != nil {
		return out, nil // an unreachable payload is the reader's finding
	}
	path := at + " (TensorRT blob)"
	rep, err := report(d.Processed, pl, pl.Size())
	if err != nil {
		return nil, fmt.Errorf("check: %s: %w", path, err)
	}
	offset := func(off int64) *int64 {
		if pl.FileOffset < 0 {
			return nil
		}
		return new(pl.FileOffset + off)
	}
	if rep.BothReject() {
		p := Problem{Severity: SeverityError, Method: method, Path: path, Code: pte.CodeInvalidProgram.String(),
			Message: rep.Err.Error() + "; the deployed C++ reader rejects it too (" + rep.Deployed.Reason + "), so TensorRTBackend init fails"}
		if be, ok := errors.AsType[*delegate.BlobError](rep.Err); ok && be.Off >= 0 {
			p.Offset = offset(be.Off)
		}
		out = append(out, p)
	}
	if err := deviceProblem(d, rep.Deployed); err != nil {
		out = append(out, Problem{Severity: SeverityWarning, Method: method, Path: at + ".compile_specs", Message: err.Error()})
	}
	for _, h := range rep.Hazards {
		sev, code := hazardSeverity(h.Kind)
		out = append(out, Problem{Severity: sev, Method: method, Path: path, Offset: offset(0), Code: code,
			Message: h.Kind.String() + ": " + h.Msg})
	}
	return out, nil
}

// hazardSeverity is the severity of a hazard's Problem, and the ExecuTorch
// error class, if any, that TensorRTBackend init returns for it:
//
//   - an error when the deployed runtime refuses the delegate (the C++
//     reader rejects the blob, a negative device_id, an aliased_io entry
//     init refuses: InvalidProgram), when the deployed reader reads the
//     blob differently from what it says (a disagreement: the load may
//     succeed with other bindings than meant, so no code), or when the
//     runtime misbehaves (two bindings with one name: TensorRT names are
//     unique, so one engine tensor is bound twice and another never; init
//     does not notice, so no code);
//   - a warning otherwise: properties both readers share and the runtime
//     copes with (magic, trailing bytes, no binding names), metadata only
//     Python's lenient reader accepts (HazardTypeConfused: what the
//     deployed reader makes of it is a hazard of its own), and metadata
//     too large for ptekit to read (HazardMetadataUnread: nothing is known
//     to be wrong, but nothing was checked either).
func hazardSeverity(k delegate.HazardKind) (severity, code string) {
	switch {
	case k == delegate.HazardDeployedRejects, k == delegate.HazardNegativeDeviceID, k == delegate.HazardAliasedIOInvalid:
		return SeverityError, pte.CodeInvalidProgram.String()
	case k.Disagreement(), k == delegate.HazardDuplicateName:
		return SeverityError, ""
	}
	return SeverityWarning, ""
}

// cStringProblems warns about a TensorRT delegate whose backend id or
// compile spec keys hold a NUL: the deployed runtime reads them only up to
// it, so they mean something other than what a byte-for-byte reading (and
// most tools) shows.
func cStringProblems(method, at string, d *pte.BackendDelegate) []Problem {
	var out []Problem
	if d.ID != delegate.BackendID {
		out = append(out, Problem{Severity: SeverityWarning, Method: method, Path: at + ".id",
			Message: fmt.Sprintf("backend id %s holds a NUL; ExecuTorch compares ids as C strings and hands the delegate to %s",
				quote.String(d.ID), delegate.BackendID)})
	}
	for i, s := range d.CompileSpecs {
		if s == nil {
			continue
		}
		for _, k := range []string{compilespec.KeyWeightStreamingBudget, compilespec.KeyTargetDevice} {
			if s.Key != k && compilespec.CKeyEqual(s.Key, k) {
				out = append(out, Problem{Severity: SeverityWarning, Method: method, Path: fmt.Sprintf("%s.compile_specs[%d]", at, i),
					Message: fmt.Sprintf("key %s holds a NUL; the delegate compares keys as C strings and reads it as %s",
						quote.String(s.Key), k)})
			}
		}
	}
	return out
}

// deviceProblem reports a target_device compile spec that disagrees with
// the device the deployed runtime runs the engine on (the blob's
// device_id as the C++ reader reads it), or that cannot be read. The
// program loads, but ExecuTorch places the delegate's inputs and outputs on
// the pinned device while TensorRT runs the engine on the other one.
func deviceProblem(d *pte.BackendDelegate, dv *delegate.DeployedView) error {
	pin, ok, _ := compilespec.Get(d.CompileSpecs, compilespec.KeyTargetDevice)
	if !ok || dv == nil || !dv.OK {
		return nil
	}
	return compilespec.CheckTargetDevice(pin, int(dv.DeviceID))
}
