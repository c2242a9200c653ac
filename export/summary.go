package export

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/internal/quote"
	"github.com/ptekit/ptekit/pte"
)

// summarize fills res.Methods, res.Delegates, res.Budget, res.MixedBudgets
// and res.TargetDevice from the program as written, and returns warnings
// for budget specs the TensorRT delegate would refuse. Keys are matched as
// the runtime matches them (as C strings).
func summarize(p *pte.Program, res *Result) []Warning {
	var ws []Warning
	res.Methods, res.Delegates = nil, 0
	// Sized once: appending to them at 65,536 engines left more garbage
	// than they hold.
	n, plans := 0, 0
	for _, ep := range p.Plans() {
		if ep != nil {
			n, plans = n+len(ep.Delegates), plans+1
		}
	}
	budgets, devices := make([]compilespec.Budget, 0, n), make([]string, 0, n)
	if plans > 0 {
		res.Methods = make([]MethodSummary, 0, plans) // nil when there are none, as before
	}
	// Every method's engines are cut from one slice, and a delegate
	// holding the same spec list as the last (planMethods shares them)
	// has the same summary: at 65,536 one-engine methods, four
	// allocations per engine.
	engines := make([]EngineSummary, 0, n)
	var last struct {
		specs []*pte.CompileSpec
		es    EngineSummary
		b     compilespec.Budget
		w     string
	}
	for _, ep := range p.Plans() {
		if ep == nil {
			continue
		}
		ms := MethodSummary{Name: ep.Name, PlannedBytes: plannedBytes(ep)}
		start := len(engines)
		for i, d := range ep.Delegates {
			if d == nil || !delegate.IsTensorRT(d.ID) {
				continue
			}
			es, b, w := last.es, last.b, last.w
			if len(d.CompileSpecs) == 0 || len(last.specs) != len(d.CompileSpecs) || &last.specs[0] != &d.CompileSpecs[0] {
				es, b, w = engineSummary(d.CompileSpecs)
				if k := len(devices); k > 0 && es.TargetDevice == devices[k-1] {
					es.TargetDevice = devices[k-1] // one string for a run of delegates on one device
				}
				last.specs, last.es, last.b, last.w = d.CompileSpecs, es, b, w
			} else if es.Budget != nil {
				es.Budget = b.Ptr() // each engine's own
			}
			if w != "" {
				ws = append(ws, Warning{Kind: WarnBadBudgetSpec, Method: ep.Name, Msg: fmt.Sprintf("delegates[%d]: %s", i, w)})
			}
			engines = append(engines, es)
			budgets = append(budgets, b)
			devices = append(devices, es.TargetDevice)
		}
		ms.Engines = engines[start:len(engines):len(engines)]
		ms.Delegates = len(ms.Engines)
		res.Delegates += ms.Delegates
		res.Methods = append(res.Methods, ms)
	}
	res.Budget, res.MixedBudgets, res.TargetDevice = nil, false, ""
	if len(budgets) > 0 {
		res.MixedBudgets = slices.ContainsFunc(budgets, func(b compilespec.Budget) bool { return b != budgets[0] })
		if !res.MixedBudgets {
			res.Budget = budgets[0].Ptr()
		}
	}
	if len(devices) > 0 && !slices.ContainsFunc(devices, func(d string) bool { return d != devices[0] }) {
		res.TargetDevice = devices[0]
	}
	return ws
}

// engineSummary reads the budget and target device of one delegate's
// compile specs, and explains a budget spec the TensorRT delegate would
// refuse (whose budget is then shown as none).
func engineSummary(specs []*pte.CompileSpec) (EngineSummary, compilespec.Budget, string) {
	var es EngineSummary
	if v, ok, _ := compilespec.Get(specs, compilespec.KeyTargetDevice); ok {
		es.TargetDevice = string(v)
	}
	b, err := compilespec.SpecBudget(specs)
	if dup, ok := errors.AsType[*compilespec.DuplicateKeyError](err); ok {
		return es, b, fmt.Sprintf("%s is given %d times; the TensorRT delegate refuses to load it", compilespec.KeyWeightStreamingBudget, len(dup.Indices))
	}
	if bad, ok := errors.AsType[*compilespec.BudgetError](err); ok {
		return es, b, fmt.Sprintf("the TensorRT delegate refuses its %s %s: %v", compilespec.KeyWeightStreamingBudget, quote.Bytes(bad.Value), err)
	}
	es.Budget = b.Ptr()
	return es, b, ""
}

// Summary is the JSON document of a Result, as pteexport --json prints it
// (docs/json.md, "pteexport --json"): every value describes the file as
// written.
type Summary struct {
	Output    string          `json:"output"`
	Size      int64           `json:"size"`
	Methods   []SummaryMethod `json:"methods"`
	Delegates int             `json:"delegates"`
	Blobs     int             `json:"blobs"`
	// Budget is the weight_streaming_budget every delegate holds: null
	// when none holds one or when they differ (BudgetsDiffer).
	Budget        *int64 `json:"weight_streaming_budget"`
	BudgetsDiffer bool   `json:"weight_streaming_budgets_differ"`
	// TargetDevice is the target_device every delegate holds, null when
	// they differ.
	TargetDevice *string          `json:"target_device"`
	Warnings     []SummaryWarning `json:"warnings"`
	// InPlace and Rewritten say that an in-place re-bake rewrote
	// Rewritten bytes of the file where it is; absent otherwise.
	InPlace   bool   `json:"in_place,omitempty"`
	Rewritten *int64 `json:"rewritten,omitempty"`
	// Uploaded and CopiedInStore say, for an output in an object store,
	// how many bytes were sent to it and how many it copied from the
	// input on its side; absent for a file.
	Uploaded      *int64 `json:"uploaded,omitempty"`
	CopiedInStore *int64 `json:"copied_in_store,omitempty"`
}

// SummaryMethod is one method of a Summary.
type SummaryMethod struct {
	Name         string          `json:"name"`
	Delegates    int             `json:"delegates"`
	PlannedBytes int64           `json:"planned_bytes"`
	Engines      []SummaryEngine `json:"engines"`
}

// SummaryEngine is one TensorRTBackend delegate's specs as written: its
// budget (null: none, TensorRT chooses) and target_device.
type SummaryEngine struct {
	Budget       *int64  `json:"weight_streaming_budget"`
	TargetDevice *string `json:"target_device"`
}

// SummaryWarning is one Warning of a Summary.
type SummaryWarning struct {
	Kind    string `json:"kind"`
	Method  string `json:"method,omitempty"`
	Message string `json:"message"`
}

// Summary returns the JSON document of r.
func (r *Result) Summary() *Summary {
	s := &Summary{Output: r.Path, Size: r.Size, Delegates: r.Delegates, Blobs: r.Blobs,
		Budget: r.Budget, BudgetsDiffer: r.MixedBudgets, TargetDevice: optString(r.TargetDevice),
		Methods: []SummaryMethod{}, Warnings: []SummaryWarning{}}
	if r.InPlace {
		n := r.Rewritten
		s.InPlace, s.Rewritten = true, &n
	}
	if r.Object {
		up, cp := r.Uploaded, r.Copied
		s.Uploaded, s.CopiedInStore = &up, &cp
	}
	for _, m := range r.Methods {
		ms := SummaryMethod{Name: m.Name, Delegates: m.Delegates, PlannedBytes: m.PlannedBytes, Engines: []SummaryEngine{}}
		for _, e := range m.Engines {
			ms.Engines = append(ms.Engines, SummaryEngine{Budget: e.Budget, TargetDevice: optString(e.TargetDevice)})
		}
		s.Methods = append(s.Methods, ms)
	}
	for _, x := range r.Warnings {
		s.Warnings = append(s.Warnings, SummaryWarning{Kind: string(x.Kind), Method: x.Method, Message: x.Msg})
	}
	return s
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
