package export

import (
	"errors"
	"fmt"
	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/internal/quote"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/pte"
)

// summarize fills res.Methods, res.Delegates, res.Budget, res.MixedBudgets
// and res.TargetDevice from the program as written, and returns warnings
// for budget specs the TensorRT delegate would refuse. Keys are matched as
// the runtime matches them (as C strings).
func summarize(p *pte.Program, res *Result) []Warning {
	var ws []Warning
	res.Methods, res.Delegates = nil, 0
	var budgets []*int64
	var devices []string
	for _, ep := range p.ExecutionPlan {
		if ep == nil {
			continue
		}
		ms := MethodSummary{Name: ep.Name, PlannedBytes: plannedBytes(ep), Engines: []EngineSummary{}}
		for i, d := range ep.Delegates {
			if d == nil || !delegate.IsTensorRT(d.ID) {
				continue
			}
			es, w := engineSummary(d.CompileSpecs)
			if w != "" {
				ws = append(ws, Warning{Kind: WarnBadBudgetSpec, Method: ep.Name, Msg: fmt.Sprintf("delegates[%d]: %s", i, w)})
			}
			ms.Engines = append(ms.Engines, es)
			budgets = append(budgets, es.Budget)
			devices = append(devices, es.TargetDevice)
		}
		ms.Delegates = len(ms.Engines)
		res.Delegates += ms.Delegates
		res.Methods = append(res.Methods, ms)
	}
	res.Budget, res.MixedBudgets, res.TargetDevice = nil, false, ""
	for i, b := range budgets {
		if i == 0 {
			res.Budget = b
			continue
		}
		if (b == nil) != (res.Budget == nil) || (b != nil && *b != *res.Budget) {
			res.Budget, res.MixedBudgets = nil, true
			break
		}
	}
	for i, d := range devices {
		if i == 0 {
			res.TargetDevice = d
		} else if d != res.TargetDevice {
			res.TargetDevice = ""
			break
		}
	}
	return ws
}

// engineSummary reads the budget and target device of one delegate's
// compile specs, and explains a budget spec the TensorRT delegate would
// refuse.
func engineSummary(specs []*pte.CompileSpec) (EngineSummary, string) {
	var es EngineSummary
	if v, ok, _ := compilespec.Get(specs, compilespec.KeyTargetDevice); ok {
		es.TargetDevice = string(v)
	}
	n, ok, err := compilespec.Budget(specs)
	var dup *compilespec.DuplicateKeyError
	switch {
	case !ok:
		return es, ""
	case errors.As(err, &dup):
		return es, fmt.Sprintf("%s is given %d times; the TensorRT delegate refuses to load it", compilespec.KeyWeightStreamingBudget, len(dup.Indices))
	case err != nil:
		v, _, _ := compilespec.Get(specs, compilespec.KeyWeightStreamingBudget)
		return es, fmt.Sprintf("the TensorRT delegate refuses its %s %s: %v", compilespec.KeyWeightStreamingBudget, quote.Bytes(v), err)
	}
	es.Budget = &n
	return es, ""
}
