package inspect

import (
	"errors"
	"fmt"
	"github.com/ptekit/ptekit/internal/quote"
	"strconv"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/pte"
)

// Severities of a Problem.
const (
	SeverityError   = "error"   // ExecuTorch refuses the program, a method or a delegate, or misbehaves
	SeverityWarning = "warning" // legal but suspicious or unportable
)

// Problem is one finding of Check: what is wrong, where, and what ExecuTorch
// does about it.
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

// UndoRecordProblem is the warning that an undo record of an interrupted
// in-place re-bake lies beside the file, with msg saying what to do
// (undorecord.Notice.Message): the file is shown as it is, not repaired.
// Its message starts with "undo-record: "; its path is "" (the file as a
// whole).
func UndoRecordProblem(msg string) Problem {
	return Problem{Severity: SeverityWarning, Message: "undo-record: " + msg}
}

// FormatProblem returns the Problem for a format error of the reader, such
// as the one pte.Open returns for a damaged file.
func FormatProblem(sev pte.Severity, method string, fe *pte.FormatError) Problem {
	p := Problem{Severity: sev.String(), Method: method, Path: fe.Path, Code: fe.Code.String(), Message: fe.Msg}
	if fe.Off >= 0 {
		off := fe.Off
		p.Offset = &off
	}
	return p
}

// Check runs every check ptekit knows on an opened program: the reader's
// (pte.File.Verify: container invariants and what each method needs to
// load) and, for every TensorRT delegate, its compile specs and its blob
// read both the way the metadata means it and the way the deployed C++
// reader reads it. It reads only the header and metadata of TensorRT blobs.
// The error is only for failures to read the file.
func Check(f *pte.File) ([]Problem, error) {
	Prefetch(f)
	return check(f, "", nil)
}

// check is Check, narrowed to one method (and program-level problems) when
// method is not empty.
func check(f *pte.File, method string, reports *blobReports) ([]Problem, error) {
	out := verifyProblems(f, method)
	for pi, n := 0, f.NumPlans(); pi < n; pi++ {
		if method != "" && f.PlanName(pi) != method {
			continue
		}
		ep := f.Plan(pi)
		if ep == nil {
			continue
		}
		for di, d := range ep.Delegates {
			ps, err := delegateProblems(f, pi, di, ep.Name, d, reports)
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
		}
	}
	return out, nil
}

// verifyProblems are the reader's findings (pte.File.Verify) as problems,
// narrowed to one method (and program-level ones) when method is not empty.
func verifyProblems(f *pte.File, method string) []Problem {
	var out []Problem
	for _, x := range f.Verify() {
		if x.Err != nil && (method == "" || x.Method == "" || x.Method == method) {
			out = append(out, FormatProblem(x.Severity, x.Method, x.Err))
		}
	}
	return out
}

// delegateProblems are the problems of delegate di of method pi (named
// method): those of tensorRTProblems for a TensorRT delegate, none for
// another or a nil one.
func delegateProblems(f *pte.File, pi, di int, method string, d *pte.BackendDelegate, reports *blobReports) ([]Problem, error) {
	if d == nil || !delegate.IsTensorRT(d.ID) {
		return nil, nil
	}
	return tensorRTProblems(f, pi, di, method, d, reports)
}

// tensorRTProblems checks TensorRT delegate di of method pi: its compile
// specs and, when its payload can be reached, its blob. A blob the deployed
// reader rejects, or reads differently from what it says, is an error; a
// property both readers share is a warning unless the runtime fails on it.
func tensorRTProblems(f *pte.File, pi, di int, method string, d *pte.BackendDelegate, reports *blobReports) ([]Problem, error) {
	var out []Problem
	out = append(out, cStringProblems(method, pi, di, d)...)
	if p, bad := budgetProblem(method, pi, di, d); bad {
		out = append(out, p)
	}
	pl, err := f.DelegateData(pi, di)
	if err != nil {
		return out, nil // an unreachable payload is the reader's finding
	}
	path := fmt.Sprintf("execution_plan[%d].delegates[%d] (TensorRT blob)", pi, di)
	rep, err := reports.check(d.Processed, pl, pl.Size())
	if err != nil {
		return nil, fmt.Errorf("inspect: %s: %w", path, err)
	}
	at := func(off int64) *int64 {
		if pl.FileOffset < 0 {
			return nil
		}
		v := pl.FileOffset + off
		return &v
	}
	invalid := pte.CodeInvalidProgram.String()
	if bothReject(rep) {
		p := Problem{Severity: SeverityError, Method: method, Path: path, Code: invalid,
			Message: rep.Err.Error() + "; the deployed C++ reader rejects it too (" + rep.Deployed.Reason + "), so TensorRTBackend init fails"}
		var be *delegate.BlobError
		if errors.As(rep.Err, &be) && be.Off >= 0 {
			p.Offset = at(be.Off)
		}
		out = append(out, p)
	}
	if p, bad := deviceProblem(method, pi, di, d, rep.Deployed); bad {
		out = append(out, p)
	}
	for _, h := range rep.Hazards {
		sev, code := hazardSeverity(h.Kind)
		out = append(out, Problem{Severity: sev, Method: method, Path: path, Offset: at(0), Code: code,
			Message: h.Kind.String() + ": " + h.Msg})
	}
	return out, nil
}

// bothReject reports whether the strict reading and the deployed C++ reader
// both reject the blob, which Hazards leaves out (there is nothing to
// compare). A blob whose metadata ptekit did not read is not rejected by
// the deployed reader: its verdict is unknown (HazardMetadataUnread).
func bothReject(rep *delegate.Report) bool {
	return rep.Err != nil && !rep.Deployed.OK && !rep.Deployed.MetadataUnread
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

// budgetProblem reports a weight_streaming_budget compile spec that the
// TensorRT delegate refuses at init: duplicated or malformed. (A valid
// load-time option would hide it; the file alone cannot know.)
func budgetProblem(method string, pi, di int, d *pte.BackendDelegate) (Problem, bool) {
	v, ok, err := compilespec.Get(d.CompileSpecs, compilespec.KeyWeightStreamingBudget)
	if err == nil && ok {
		_, err = compilespec.ParseBudget(v)
	}
	if err == nil {
		return Problem{}, false
	}
	p := Problem{Severity: SeverityError, Method: method, Code: pte.CodeInvalidProgram.String(),
		Path: fmt.Sprintf("execution_plan[%d].delegates[%d].compile_specs", pi, di)}
	p.Message = err.Error() + "; TensorRTBackend init fails unless a load-time budget option is given"
	return p, true
}

// cStringProblems warns about a TensorRT delegate whose backend id or
// compile spec keys hold a NUL: the deployed runtime reads them only up to
// it, so they mean something other than what a byte-for-byte reading (and
// most tools) shows.
func cStringProblems(method string, pi, di int, d *pte.BackendDelegate) []Problem {
	var out []Problem
	if d.ID != trtBackendID {
		out = append(out, Problem{Severity: SeverityWarning, Method: method,
			Path: fmt.Sprintf("execution_plan[%d].delegates[%d].id", pi, di),
			Message: fmt.Sprintf("backend id %s holds a NUL; ExecuTorch compares ids as C strings and hands the delegate to %s",
				quote.String(d.ID), trtBackendID)})
	}
	for i, s := range d.CompileSpecs {
		if s == nil {
			continue
		}
		for _, k := range []string{compilespec.KeyWeightStreamingBudget, compilespec.KeyTargetDevice} {
			if s.Key != k && compilespec.CKeyEqual(s.Key, k) {
				out = append(out, Problem{Severity: SeverityWarning, Method: method,
					Path: fmt.Sprintf("execution_plan[%d].delegates[%d].compile_specs[%d]", pi, di, i),
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
func deviceProblem(method string, pi, di int, d *pte.BackendDelegate, dv *delegate.DeployedView) (Problem, bool) {
	pin, ok, _ := compilespec.Get(d.CompileSpecs, compilespec.KeyTargetDevice)
	if !ok || dv == nil || !dv.OK {
		return Problem{}, false
	}
	err := compilespec.CheckTargetDevice(pin, int(dv.DeviceID))
	if err == nil {
		return Problem{}, false
	}
	msg := err.Error()
	return Problem{Severity: SeverityWarning, Method: method, Message: msg,
		Path: fmt.Sprintf("execution_plan[%d].delegates[%d].compile_specs", pi, di)}, true
}
