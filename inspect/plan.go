package inspect

import (
	"errors"
	"slices"
	"strings"

	"github.com/ptekit/ptekit/executor"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// PlanDocument is what `pteinspect --plan --json` prints (docs/json.md): the
// load plan of package executor, whose JSON form it is, or, when there is no
// program to plan, the failure with the plan's members empty.
type PlanDocument struct {
	// Error is set only when there is no plan; the plan members are then
	// empty.
	Error *Failure `json:"error,omitempty"`
	*executor.ProgramPlan
	// ExternalData is where the EXTERNAL tensors come from when the plan
	// was made with data files (PlanOptions.DataFiles); absent otherwise.
	ExternalData *ExternalData `json:"external_data,omitempty"`
}

// NewPlanFailure returns the plan document of a run that could not plan:
// err described, no methods, no facts, scratch_memory null.
func NewPlanFailure(err error) *PlanDocument {
	return &PlanDocument{Error: NewFailure(err),
		ProgramPlan: &executor.ProgramPlan{Methods: []executor.MethodPlan{}, Assumed: []string{}, Stated: []string{}}}
}

// NarrowPlan keeps only the method named method and, in every method, only
// the delegates of backend id backend; an empty string keeps all.
func NarrowPlan(plan *executor.ProgramPlan, method, backend string) {
	if method != "" {
		plan.Methods = slices.DeleteFunc(plan.Methods, func(m executor.MethodPlan) bool { return m.Name != method })
	}
	if backend != "" {
		for i := range plan.Methods {
			m := &plan.Methods[i]
			m.Delegates = slices.DeleteFunc(m.Delegates, func(d executor.DelegatePlan) bool { return d.Backend != backend })
		}
	}
}

// Failure says why a --json run has no result to print; it is the "error"
// member of the failure object (docs/json.md).
type Failure struct {
	// Kind is the ExecuTorch error class in snake case ("invalid_program",
	// "invalid_argument", "not_found", ...), or "access_failed" when the
	// file cannot be read.
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Offset is the file offset of the damage, nil when there is none.
	Offset *int64 `json:"offset"`
	// Path locates the damage in the program, in the names of the
	// problems' paths; "" when it is about the file as a whole.
	Path string `json:"path"`
}

// UsageError is a command line that asks for something impossible; its
// failure object has kind "usage".
type UsageError struct{ Msg string }

// Error returns the message as given.
func (e *UsageError) Error() string { return e.Msg }

// NewFailure describes err, a failure to read, open or narrow a program.
func NewFailure(err error) *Failure {
	out := &Failure{Message: strings.Join(strings.Fields(err.Error()), " ")}
	var fe *pte.FormatError
	var re *executor.Error
	var pe *ptd.FormatError
	code := pte.CodeAccessFailed
	switch {
	case errors.As(err, &fe):
		code, out.Path = fe.Code, fe.Path
		if fe.Off >= 0 {
			off := fe.Off
			out.Offset = &off
		}
	case errors.As(err, &pe):
		code, out.Path = pe.Code, pe.Path
		if pe.Off >= 0 {
			off := pe.Off
			out.Offset = &off
		}
	case errors.As(err, &re):
		code = re.Code
	case errors.Is(err, ErrNoMethod), errors.Is(err, ErrNoBackend):
		code = pte.CodeNotFound
	}
	out.Kind = executor.KindOf(code)
	var ue *UsageError
	if errors.As(err, &ue) {
		out.Kind = "usage"
	}
	return out
}
