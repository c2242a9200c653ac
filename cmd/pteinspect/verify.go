package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/pte"
	"github.com/ptekit/ptekit/pte/ptejson"
)

// finding is one --verify result in the form printed by --verify --json.
type finding struct {
	Severity string `json:"severity"` // "error" or "warning"
	Method   string `json:"method,omitempty"`
	Path     string `json:"path"`
	Offset   *int64 `json:"offset"` // absolute byte offset; null when none
	Code     string `json:"code"`   // ExecuTorch error class, e.g. "InvalidProgram"
	Message  string `json:"message"`
}

func (fd finding) String() string {
	s := fd.Severity + ": "
	if fd.Method != "" {
		s += "[" + fd.Method + "] "
	}
	if fd.Path != "" {
		s += fd.Path + ": "
	}
	s += fd.Message
	if fd.Offset != nil {
		s += fmt.Sprintf(" (at byte %d)", *fd.Offset)
	}
	if fd.Code != "" {
		s += " [" + fd.Code + "]"
	}
	return s
}

func fromFormatError(sev pte.Severity, method string, fe *pte.FormatError) finding {
	fd := finding{Severity: sev.String(), Method: method, Path: fe.Path, Code: fe.Code.String(), Message: fe.Msg}
	if fe.Off >= 0 {
		off := fe.Off
		fd.Offset = &off
	}
	return fd
}

// runVerify runs every check: the reader's (verifier, container invariants,
// what each method needs to load) and, for TensorRT delegates, the blob
// readings of both upstream readers and their hazards.
func runVerify(name string, stdin io.Reader, stdout, stderr io.Writer, o *options) int {
	var fds []finding
	f, err := openInput(name, stdin)
	if err != nil {
		var fe *pte.FormatError
		if !errors.As(err, &fe) {
			return failErr(stderr, name, err)
		}
		fds = append(fds, fromFormatError(pte.Error, "", fe))
	} else {
		defer f.Close()
		for _, x := range f.Verify() {
			if x.Err != nil {
				fds = append(fds, fromFormatError(x.Severity, x.Method, x.Err))
			}
		}
		more, err := tensorRTFindings(f)
		if err != nil {
			return failErr(stderr, name, err)
		}
		fds = append(fds, more...)
	}
	errs := 0
	for _, fd := range fds {
		if fd.Severity == pte.Error.String() {
			errs++
		}
	}
	if o.json {
		err = ptejson.Encode(stdout, struct {
			File     string    `json:"file"`
			OK       bool      `json:"ok"`
			Errors   int       `json:"errors"`
			Warnings int       `json:"warnings"`
			Findings []finding `json:"findings"`
		}{name, errs == 0, errs, len(fds) - errs, nonNilFindings(fds)})
		if err != nil {
			return failErr(stderr, name, err)
		}
	} else {
		for _, fd := range fds {
			fmt.Fprintln(stdout, fd)
		}
		fmt.Fprintf(stdout, "%s: %d error(s), %d warning(s)\n", name, errs, len(fds)-errs)
	}
	if errs > 0 {
		return exitFail
	}
	return exitOK
}

func nonNilFindings(f []finding) []finding {
	if f == nil {
		return []finding{}
	}
	return f
}

// tensorRTFindings reads every reachable TensorRT payload both ways. A blob
// the deployed reader rejects, or one whose reading it changes, is an error;
// properties both readers share are warnings unless the runtime fails on
// them.
func tensorRTFindings(f *pte.File) ([]finding, error) {
	var fds []finding
	for pi, ep := range f.Program.ExecutionPlan {
		if ep == nil {
			continue
		}
		for di, d := range ep.Delegates {
			if d == nil || d.ID != delegate.BackendID {
				continue
			}
			if fd, bad := budgetFinding(ep.Name, pi, di, d); bad {
				fds = append(fds, fd)
			}
			pl, err := f.DelegateData(pi, di)
			if err != nil {
				continue // unreachable payloads are the reader's findings
			}
			path := fmt.Sprintf("execution_plan[%d].delegates[%d] (TensorRT blob)", pi, di)
			rep, err := delegate.Check(pl, pl.Size())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			at := func(off int64) *int64 {
				if pl.FileOffset < 0 {
					return nil
				}
				v := pl.FileOffset + off
				return &v
			}
			if rep.Err != nil && !rep.Deployed.OK {
				fd := finding{Severity: "error", Method: ep.Name, Path: path, Code: pte.CodeInvalidProgram.String(),
					Message: rep.Err.Error() + "; TensorRTBackend init fails"}
				var be *delegate.BlobError
				if errors.As(rep.Err, &be) && be.Off >= 0 {
					fd.Offset = at(be.Off)
				}
				fds = append(fds, fd)
			}
			for _, h := range rep.Hazards {
				sev, code := "warning", ""
				switch h.Kind {
				case delegate.HazardDeployedRejects, delegate.HazardNegativeDeviceID:
					sev, code = "error", pte.CodeInvalidProgram.String()
				default:
					if h.Kind.Disagreement() {
						sev = "error"
					}
				}
				fds = append(fds, finding{Severity: sev, Method: ep.Name, Path: path, Offset: at(0), Code: code,
					Message: h.Kind.String() + ": " + h.Msg})
			}
		}
	}
	return fds, nil
}

// budgetFinding reports a weight_streaming_budget compile spec that the
// TensorRT delegate refuses at init: duplicated or malformed. (A valid
// load-time option would hide it; the file alone cannot know.)
func budgetFinding(method string, pi, di int, d *pte.BackendDelegate) (finding, bool) {
	v, ok, err := compilespec.Get(d.CompileSpecs, compilespec.KeyWeightStreamingBudget)
	fd := finding{Severity: "error", Method: method, Code: pte.CodeInvalidProgram.String(),
		Path: fmt.Sprintf("execution_plan[%d].delegates[%d].compile_specs", pi, di)}
	switch {
	case err != nil:
		fd.Message = err.Error() + "; TensorRTBackend init fails unless a load-time budget option is given"
		return fd, true
	case !ok:
		return fd, false
	}
	if _, err := compilespec.ParseBudget(v); err != nil {
		fd.Message = err.Error() + "; TensorRTBackend init fails unless a load-time budget option is given"
		return fd, true
	}
	return fd, false
}
