package ptejson

import (
	"errors"
	"fmt"
	"slices"
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
	return check(f, "")
}

// check is Check, narrowed to one method (and program-level problems) when
// method is not empty.
func check(f *pte.File, method string) ([]Problem, error) {
	var out []Problem
	for _, x := range f.Verify() {
		if x.Err != nil && (method == "" || x.Method == "" || x.Method == method) {
			out = append(out, FormatProblem(x.Severity, x.Method, x.Err))
		}
	}
	for pi, ep := range f.Program.ExecutionPlan {
		if ep == nil || (method != "" && ep.Name != method) {
			continue
		}
		for di, d := range ep.Delegates {
			if d == nil || d.ID != trtBackendID {
				continue
			}
			ps, err := tensorRTProblems(f, pi, di, ep.Name, d)
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
		}
	}
	return out, nil
}

// tensorRTProblems checks TensorRT delegate di of method pi: its compile
// specs and, when its payload can be reached, its blob. A blob the deployed
// reader rejects, or reads differently from what it says, is an error; a
// property both readers share is a warning unless the runtime fails on it.
func tensorRTProblems(f *pte.File, pi, di int, method string, d *pte.BackendDelegate) ([]Problem, error) {
	var out []Problem
	if p, bad := budgetProblem(method, pi, di, d); bad {
		out = append(out, p)
	}
	pl, err := f.DelegateData(pi, di)
	if err != nil {
		return out, nil // an unreachable payload is the reader's finding
	}
	path := fmt.Sprintf("execution_plan[%d].delegates[%d] (TensorRT blob)", pi, di)
	rep, err := delegate.Check(pl, pl.Size())
	if err != nil {
		return nil, fmt.Errorf("ptejson: %s: %w", path, err)
	}
	at := func(off int64) *int64 {
		if pl.FileOffset < 0 {
			return nil
		}
		v := pl.FileOffset + off
		return &v
	}
	invalid := pte.CodeInvalidProgram.String()
	if rep.Err != nil && !rep.Deployed.OK {
		p := Problem{Severity: SeverityError, Method: method, Path: path, Code: invalid,
			Message: rep.Err.Error() + "; the deployed C++ reader rejects it too (" + rep.Deployed.Reason + "), so TensorRTBackend init fails"}
		var be *delegate.BlobError
		if errors.As(rep.Err, &be) && be.Off >= 0 {
			p.Offset = at(be.Off)
		}
		out = append(out, p)
	}
	for _, h := range rep.Hazards {
		sev, code := SeverityWarning, ""
		switch {
		case h.Kind == delegate.HazardDeployedRejects, h.Kind == delegate.HazardNegativeDeviceID:
			sev, code = SeverityError, invalid
		case h.Kind.Disagreement():
			sev = SeverityError
		}
		out = append(out, Problem{Severity: sev, Method: method, Path: path, Offset: at(0), Code: code,
			Message: h.Kind.String() + ": " + h.Msg})
	}
	for _, msg := range aliasFailures(rep.Deployed) {
		out = append(out, Problem{Severity: SeverityError, Method: method, Path: path, Offset: at(0), Code: invalid,
			Message: "aliased-io: " + msg})
	}
	return out, nil
}

// budgetProblem reports a weight_streaming_budget compile spec that the
// TensorRT delegate refuses at init: duplicated or malformed. (A valid
// load-time option would hide it; the file alone cannot know.)
func budgetProblem(method string, pi, di int, d *pte.BackendDelegate) (Problem, bool) {
	p := Problem{Severity: SeverityError, Method: method, Code: pte.CodeInvalidProgram.String(),
		Path: fmt.Sprintf("execution_plan[%d].delegates[%d].compile_specs", pi, di)}
	v, ok, err := compilespec.Get(d.CompileSpecs, compilespec.KeyWeightStreamingBudget)
	if err == nil && ok {
		_, err = compilespec.ParseBudget(v)
	}
	if err == nil {
		return p, false
	}
	p.Message = err.Error() + "; TensorRTBackend init fails unless a load-time budget option is given"
	return p, true
}

// aliasFailures lists the aliased I/O entries the TensorRT delegate's init
// refuses (with InvalidProgram) when it binds aliases: an entry must name
// an output binding and an input binding of the blob, and its kind must be
// kv_cache_update or user. When the blob lists no binding names, init takes
// them from the engine, which this check cannot see; kinds are still
// checked. The entries are those the deployed reader yields.
func aliasFailures(dv *delegate.DeployedView) []string {
	if dv == nil || !dv.OK {
		return nil
	}
	named := len(dv.Inputs)+len(dv.Outputs) > 0
	var out []string
	for _, a := range dv.AliasedIO {
		entry := fmt.Sprintf("aliased_io entry %q <- %q", a.Output, a.Input)
		if a.Kind != delegate.KindKVCacheUpdate && a.Kind != delegate.KindUser {
			out = append(out, fmt.Sprintf("%s has kind %q; TensorRTBackend init accepts only %q and %q and fails with InvalidProgram",
				entry, a.Kind, delegate.KindKVCacheUpdate, delegate.KindUser))
		}
		if !named {
			continue
		}
		var missing []string
		if !slices.Contains(dv.Outputs, a.Output) {
			missing = append(missing, fmt.Sprintf("output %q is not an output binding", a.Output))
		}
		if !slices.Contains(dv.Inputs, a.Input) {
			missing = append(missing, fmt.Sprintf("input %q is not an input binding", a.Input))
		}
		for _, m := range missing {
			out = append(out, fmt.Sprintf("%s: %s of the blob; TensorRTBackend init fails with InvalidProgram (aliased_io names not found)", entry, m))
		}
	}
	return out
}
