package runtime

import (
	"errors"
	"log/slog"

	"github.com/ptekit/ptekit/pte"
)

// PlanOptions configures PlanProgram.
type PlanOptions struct {
	// LoadOptions are the load-time backend options, as a deployment would
	// pass them.
	LoadOptions *LoadOptions
	// Factory deserializes engines; nil uses StandIn{Streamable, Scratch}.
	Factory EngineFactory
	// Streamable and Scratch are the stand-in engine's facts when Factory
	// is nil; nil means not stated.
	Streamable, Scratch *int64
	// SharedScratch plans with the shared activation scratch pool on.
	SharedScratch bool
	// Registry may hold further backends and kernels. A TensorRT backend
	// over Factory is registered under TensorRTBackendID unless the
	// registry already has one. PlanProgram does not modify it.
	Registry *Registry
	// Logger receives the load records; nil discards them.
	Logger *slog.Logger
}

// ProgramPlan is the per-method, per-engine plan of a program, in a form
// meant for JSON output (pteinspect --plan --json).
type ProgramPlan struct {
	Methods []MethodPlan `json:"methods"`
	// Assumed lists which figures come from a stand-in rather than from a
	// real engine: "streamable", "scratch", "automatic". Empty with a real
	// engine factory.
	Assumed []string `json:"assumed"`
	// ScratchMemory is the activation scratch of all loaded engines with
	// and without the shared pool; nil when some engine's scratch size is
	// unknown.
	ScratchMemory *ScratchMemory `json:"scratch_memory"`
}

// MethodPlan is the outcome of loading one method.
type MethodPlan struct {
	Name string `json:"name"`
	// OK is true when the method loads.
	OK bool `json:"ok"`
	// Error is the load error, nil when OK.
	Error *PlanError `json:"error"`
	// Delegates lists the delegates the loader reached, in order: all of
	// them when OK, otherwise those before the failing one and the failing
	// one itself when its backend reported a plan.
	Delegates []DelegatePlan `json:"delegates"`
	// MissingOperators are operators without a registered kernel; they
	// fail execution, not loading.
	MissingOperators []string `json:"missing_operators,omitempty"`
}

// PlanError is a load error in JSON form.
type PlanError struct {
	// Kind is the ExecuTorch error class in snake case: "invalid_program",
	// "invalid_argument", "not_found", ...
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Delegate is the index of the failing delegate, nil when the failure
	// is not about one.
	Delegate *int `json:"delegate"`
}

// DelegatePlan is the plan of one delegate.
type DelegatePlan struct {
	Index   int    `json:"index"`
	Backend string `json:"backend"`
	// Device is the CUDA device of a TensorRT engine, nil for other
	// backends.
	Device *int `json:"device"`
	// Budget is the weight streaming decision, nil for other backends.
	Budget *BudgetPlan `json:"budget"`
	// Inputs and Outputs are the binding names as deployed reads them.
	Inputs  []string `json:"inputs"`
	Outputs []string `json:"outputs"`
	// Scratch is the activation scratch of the execution context, nil
	// when unknown or not a TensorRT engine.
	Scratch       *int64   `json:"scratch"`
	SharedScratch bool     `json:"shared_scratch"`
	Notes         []string `json:"notes,omitempty"`
}

// BudgetPlan is the weight streaming decision of one engine.
type BudgetPlan struct {
	// Source is "load_option", "compile_spec" or "automatic".
	Source BudgetSource `json:"source"`
	// Requested is the explicit budget in bytes, nil for automatic.
	Requested *int64 `json:"requested"`
	// Applied is the budget in force, nil when it depends on an engine
	// fact nobody stated or when the engine has nothing streamable (Reason
	// says which).
	Applied *int64 `json:"applied"`
	// Streamable is the engine's streamable weight size, nil when unknown.
	Streamable *int64 `json:"streamable"`
	Reason     string `json:"reason"`
}

// PlanProgram loads every method of f with the given options, without a
// GPU unless opts.Factory is a real engine binding, and reports for each
// method whether it loads (or the exact load error) and, per TensorRT
// engine, the device, the binding names and the budget decision. Methods
// are loaded one at a time and closed again. The error is non-nil only
// when planning itself is impossible (no program).
func PlanProgram(f *pte.File, opts PlanOptions) (*ProgramPlan, error) {
	factory := opts.Factory
	if factory == nil {
		factory = StandIn{Streamable: opts.Streamable, Scratch: opts.Scratch}
	}
	reg := &Registry{}
	if opts.Registry != nil {
		opts.Registry.mu.RLock()
		for id, b := range opts.Registry.backends {
			reg.RegisterBackend(id, b)
		}
		for name, k := range opts.Registry.kernels {
			reg.RegisterKernel(name, k)
		}
		opts.Registry.mu.RUnlock()
	}
	var trt *TensorRTBackend
	if _, ok := reg.Backend(TensorRTBackendID); !ok {
		trt = NewTensorRTBackend(factory, noScratch{})
		if opts.SharedScratch {
			trt.SetOptions(Option{Key: KeySharedScratch, Value: Bool(true)})
		}
		reg.RegisterBackend(TensorRTBackendID, trt)
	}
	prog, err := Load(f, Config{Registry: reg, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	out := &ProgramPlan{Methods: []MethodPlan{}, Assumed: []string{}}
	var scratch []EngineScratch
	scratchKnown := true
	for _, name := range prog.MethodNames() {
		m, err := prog.LoadMethod(name, opts.LoadOptions)
		mp := MethodPlan{Name: name, OK: err == nil, Delegates: []DelegatePlan{}}
		failing := -1
		if err != nil {
			pe := &PlanError{Kind: KindOf(CodeOf(err)), Message: err.Error()}
			var re *Error
			if errors.As(err, &re) && re.Delegate >= 0 {
				pe.Delegate = &re.Delegate
				failing = re.Delegate
			}
			mp.Error = pe
		}
		if m != nil {
			plans := map[int]*Plan{}
			for _, p := range m.Plans() {
				plans[p.Delegate] = p
			}
			for di, d := range m.plan.Delegates {
				p, hasPlan := plans[di]
				reached := di < len(m.delegates) || (di == failing && hasPlan)
				if !reached || d == nil {
					continue
				}
				dp := DelegatePlan{Index: di, Backend: d.ID}
				if hasPlan {
					dev := p.Device
					dp.Device = &dev
					dp.Budget = &BudgetPlan{Source: p.Source, Requested: p.Requested, Applied: p.Applied, Streamable: p.Streamable, Reason: p.Reason}
					dp.Inputs, dp.Outputs = p.Inputs, p.Outputs
					dp.Scratch, dp.SharedScratch, dp.Notes = p.Scratch, p.SharedScratch, p.Notes
					for _, a := range p.Assumed {
						out.Assumed = appendOnce(out.Assumed, a)
					}
					if di < len(m.delegates) {
						if p.Scratch == nil {
							scratchKnown = false
						} else {
							scratch = append(scratch, EngineScratch{Device: p.Device, Bytes: *p.Scratch, Shared: p.SharedScratch})
						}
					}
				}
				mp.Delegates = append(mp.Delegates, dp)
			}
			if err == nil {
				mp.MissingOperators = m.MissingOperators()
			}
			m.Close()
		}
		out.Methods = append(out.Methods, mp)
	}
	if scratchKnown {
		sm := ComputeScratchMemory(scratch)
		out.ScratchMemory = &sm
	}
	return out, nil
}
