package inspect

import (
	"slices"

	"github.com/ptekit/ptekit/executor"
	"github.com/ptekit/ptekit/internal/jsonerr"
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
	return &PlanDocument{Error: jsonerr.New(err),
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

// Failure is the "error" member of the failure object (docs/json.md),
// kept in internal/jsonerr so that both commands print it alike.
type Failure = jsonerr.Object

// NewFailure describes err, a failure to read, open or narrow a program,
// as both commands do (jsonerr.New).
func NewFailure(err error) *Failure { return jsonerr.New(err) }
