package executor

import (
	"errors"
	"log/slog"
	"maps"

	"github.com/ptekit/ptekit/ptd"
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
	// Automatic is the stand-in engine's automatic budget (on a GPU,
	// TensorRT computes it from the free device memory); nil means not
	// stated, so a plan with the automatic budget leaves applied open.
	Automatic *int64
	// SharedScratch plans with the shared activation scratch pool on.
	SharedScratch bool
	// Registry may hold further backends. A TensorRT backend
	// over Factory is registered under TensorRTBackendID unless the
	// registry already has one. PlanProgram does not modify it.
	Registry *Registry
	// Logger receives the load records; nil discards them.
	Logger *slog.Logger
	// NoDeprecatedConstantBuffer plans for a runtime built with
	// ET_ENABLE_DEPRECATED_CONSTANT_BUFFER=0 (see
	// Config.NoDeprecatedConstantBuffer): a program that uses the
	// deprecated inline constant_buffer then fails to load.
	NoDeprecatedConstantBuffer bool
	// DataFiles are the external data files given with the program
	// (Config.DataFiles).
	DataFiles []ptd.Source
}

// ProgramPlan is the per-method, per-engine plan of a program. Its JSON
// form is the one `pteinspect --plan --json` prints (docs/json.md): slices
// from PlanProgram are never nil, so that they marshal as [].
type ProgramPlan struct {
	Methods []MethodPlan `json:"methods"`
	// Assumed lists the engine facts (FactStreamable, FactScratch,
	// FactAutomatic) that some engine's plan needed but nobody stated: the
	// figures that depend on them are null. Empty with a real engine
	// factory.
	Assumed []string `json:"assumed"`
	// Stated lists the engine facts the caller stated for the stand-in
	// engine (PlanOptions.Streamable, Scratch, Automatic): the figures
	// that depend on them are the caller's assumptions, not an engine's.
	// Empty with a real engine factory.
	Stated []string `json:"stated"`
	// ScratchMemory is the activation scratch of all loaded engines with
	// and without the shared pool; nil when some engine's scratch size is
	// unknown.
	ScratchMemory *ScratchMemory `json:"scratch_memory"`
	// Notes lists findings about the whole program, such as its use of
	// the deprecated inline constant_buffer, which whether it loads
	// depends on the runtime build. Not part of the documented JSON form.
	Notes []string `json:"-"`
	// DataError is set when data files were given and cannot be used (a
	// file failed to load or the files do not merge): ExecuTorch's
	// Module::load fails with it, and the methods are planned without a
	// data map, which is what they then do. Omitted when nil, so the form
	// without data files is unchanged.
	DataError *PlanError `json:"data_error,omitempty"`
	// Data is how the program's external tensors resolved against the data
	// files the methods were planned with (see Program.Data).
	Data *ptd.Resolution `json:"-"`
}

// MethodPlan is the outcome of loading one method.
type MethodPlan struct {
	Name string `json:"name"`
	// OK is true when the method loads. It is false when the method fails
	// to load and also, with Error.Unknown, when ptekit cannot tell.
	OK bool `json:"ok"`
	// Error is the load error, nil when OK.
	Error *PlanError `json:"error"`
	// Delegates lists the delegates the loader reached, in order: all of
	// them when OK, otherwise those before the failing one and the failing
	// one itself when its backend reported a plan.
	Delegates []DelegatePlan `json:"delegates"`
	// MissingOperators are the operators the method's kernel calls use
	// (Method.MissingOperators): ptekit has no kernels, so the runtime
	// must provide each; a missing one fails execution, not loading.
	MissingOperators []string `json:"missing_operators"`
	// NotModelled lists the backend ids of this method's delegates that
	// PlanProgram does not model (no backend registered for them): their
	// delegates are assumed to load, and only the loader's own checks
	// (payload reachable, compile specs present) apply to them.
	NotModelled []string `json:"not_modelled"`
}

// PlanError is a load error in JSON form.
type PlanError struct {
	// Kind is the ExecuTorch error class in snake case (see KindOf):
	// "invalid_program", "invalid_argument", "not_found", and, for the
	// rarer failures, "internal", "invalid_state", "not_supported",
	// "memory_allocation_failed", "invalid_external_data" or
	// "access_failed".
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Delegate is the index of the failing delegate, nil when the failure
	// is not about one.
	Delegate *int `json:"delegate"`
	// Unknown is true when the failure is ptekit's, not the program's:
	// ptekit did not read part of the program (ErrOutcomeUnknown; Kind is
	// then "not_supported"), so whether the deployed runtime loads the
	// method is unknown.
	Unknown bool `json:"unknown"`
}

// DelegatePlan is the plan of one delegate.
type DelegatePlan struct {
	// Index is the delegate's index in the method's delegates.
	Index int `json:"index"`
	// Backend is the delegate's backend id.
	Backend string `json:"backend"`
	// Modelled is false for a delegate whose backend PlanProgram does not
	// model (see MethodPlan.NotModelled).
	Modelled bool `json:"modelled"`
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
	Scratch *int64 `json:"scratch"`
	// SharedScratch says whether the engine uses the shared scratch pool.
	SharedScratch bool `json:"shared_scratch"`
	// Notes lists other findings about the delegate, such as a load-time
	// option that was ignored or a backend that is not modelled.
	Notes []string `json:"notes"`
}

// BudgetPlan is the weight streaming decision of one engine.
type BudgetPlan struct {
	// Source is "load_option", "compile_spec" or "automatic".
	Source BudgetSource `json:"source"`
	// Requested is the explicit budget in bytes, nil for automatic.
	Requested *int64 `json:"requested"`
	// Applied is the budget in force. It is nil in exactly three cases:
	// the budget could not be resolved (the load fails; Reason says why),
	// Streaming is false (the engine has nothing streamable, so no budget
	// applies and every weight stays resident), or the figure depends on
	// an engine fact nobody stated (listed in ProgramPlan.Assumed).
	Applied *int64 `json:"applied"`
	// Streaming is true when the engine streams weights (its streamable
	// size is > 0), false when it has nothing streamable, nil when the
	// streamable size is not known.
	Streaming *bool `json:"streaming"`
	// Streamable is the engine's streamable weight size, nil when unknown.
	Streamable *int64 `json:"streamable"`
	// Reason explains the decision, or the failure, in one sentence.
	Reason string `json:"reason"`
}

// PlanProgram loads every method of f with the given options, without a
// GPU unless opts.Factory is a real engine binding, and reports for each
// method whether it loads (or the exact load error) and, per TensorRT
// engine, the device, the binding names and the budget decision. Methods
// are loaded one at a time and closed again.
//
// Backends other than TensorRT that opts.Registry does not provide are not
// modelled: their delegates get the loader's checks (payload reachable,
// compile specs present) and are otherwise assumed to load, so that the
// TensorRT delegates after them are planned too (MethodPlan.NotModelled).
// Program.LoadMethod, by contrast, fails such methods with NotFound.
//
// The error is non-nil only when planning itself is impossible (no
// program).
func PlanProgram(f *pte.File, opts PlanOptions) (*ProgramPlan, error) {
	if f == nil || f.Program == nil {
		return nil, errorf(CodeInvalidArgument, "no program")
	}
	out := &ProgramPlan{Methods: []MethodPlan{}, Assumed: []string{}, Stated: []string{}}
	factory := opts.Factory
	if factory == nil {
		factory = StandIn{Streamable: opts.Streamable, Scratch: opts.Scratch, Automatic: opts.Automatic}
		out.Stated = statedFacts(opts)
	}
	reg, stubbed := planRegistry(f, opts, factory)
	if UsesDeprecatedConstantBuffer(f.Program) {
		out.Notes = append(out.Notes, msgDeprecatedConstantBuffer+
			"; ExecuTorch's default build loads it (PlanOptions.NoDeprecatedConstantBuffer plans for the other)")
	}
	prog, err := loadForPlan(f, opts, reg, out)
	if err != nil {
		return nil, err
	}
	sc := &scratchTally{known: true}
	for _, name := range prog.MethodNames() {
		out.Methods = append(out.Methods, planMethod(prog, name, opts, stubbed, out, sc))
	}
	if sc.known {
		out.ScratchMemory = new(ComputeScratchMemory(sc.engines))
	}
	return out, nil
}

// statedFacts lists the facts the caller stated for the stand-in engines.
func statedFacts(opts PlanOptions) []string {
	stated := []string{}
	for _, s := range []struct {
		fact string
		v    *int64
	}{{FactStreamable, opts.Streamable}, {FactScratch, opts.Scratch}, {FactAutomatic, opts.Automatic}} {
		if s.v != nil {
			stated = append(stated, s.fact)
		}
	}
	return stated
}

// planRegistry copies opts.Registry, adds the TensorRT backend over factory
// unless one is registered, and stubs every other backend p uses (stubbed
// names them: they are not modelled and assumed to load).
func planRegistry(f *pte.File, opts PlanOptions, factory EngineFactory) (*Registry, map[string]bool) {
	reg := &Registry{}
	if opts.Registry != nil {
		opts.Registry.mu.RLock()
		reg.backends = maps.Clone(opts.Registry.backends)
		opts.Registry.mu.RUnlock()
	}
	if _, ok := reg.Backend(TensorRTBackendID); !ok {
		trt := NewTensorRTBackend(factory)
		if opts.SharedScratch {
			trt.SetOptions(Option{Key: KeySharedScratch, Value: Bool(true)})
		}
		reg.RegisterBackend(TensorRTBackendID, trt)
	}
	stubbed := map[string]bool{}
	for i := range f.Program.NumPlans() {
		for _, d := range f.Program.PlanDelegates(i) {
			if d == nil {
				continue
			}
			if _, ok := reg.Backend(d.ID); !ok {
				reg.RegisterBackend(d.ID, notModelled{})
				stubbed[d.ID] = true
			}
		}
	}
	return reg, stubbed
}

// loadForPlan loads the program. Data files that cannot be used become
// out.DataError and the methods are planned as without them, with the
// files' own outcomes kept in out.Data.
func loadForPlan(f *pte.File, opts PlanOptions, reg *Registry, out *ProgramPlan) (*Program, error) {
	cfg := Config{Registry: reg, Logger: opts.Logger, NoDeprecatedConstantBuffer: opts.NoDeprecatedConstantBuffer, DataFiles: opts.DataFiles}
	prog, err := Load(f, cfg)
	if re, ok := errors.AsType[*Error](err); ok && errors.Is(err, ErrDataFiles) {
		out.DataError = &PlanError{Kind: re.Kind(), Message: re.Error()}
		cfg.DataFiles = nil
		prog, err = Load(f, cfg)
	}
	if err != nil {
		return nil, err
	}
	out.Data = prog.Data()
	if out.DataError != nil {
		out.Data = ptd.Resolve(f.Program, opts.DataFiles)
	}
	return prog, nil
}

// scratchTally collects the scratch of loaded engines; known turns false
// when one engine's scratch is open.
type scratchTally struct {
	engines []EngineScratch
	known   bool
}

// planMethod loads one method and reports how each delegate fared, up to
// and including the one whose load failed.
func planMethod(prog *Program, name string, opts PlanOptions, stubbed map[string]bool, out *ProgramPlan, sc *scratchTally) MethodPlan {
	m, lerr := prog.loadMethod(name, opts.LoadOptions)
	mp := MethodPlan{Name: name, OK: lerr == nil, Delegates: []DelegatePlan{}}
	failing := -1
	if lerr != nil {
		mp.Error = &PlanError{Kind: lerr.Kind(), Message: lerr.Error(), Unknown: errors.Is(lerr, ErrOutcomeUnknown)}
		if lerr.Delegate >= 0 {
			mp.Error.Delegate = new(lerr.Delegate)
			failing = lerr.Delegate
		}
	}
	if m != nil {
		plans := map[int]*Plan{}
		for _, p := range m.Plans() {
			plans[p.Delegate] = p
		}
		for di, d := range m.plan.Delegates {
			p, hasPlan := plans[di]
			loaded := di < len(m.delegates)
			if d == nil || !(loaded || (di == failing && hasPlan)) {
				continue
			}
			if stubbed[d.ID] {
				mp.NotModelled = appendOnce(mp.NotModelled, d.ID)
			}
			mp.Delegates = append(mp.Delegates, delegatePlan(di, d.ID, !stubbed[d.ID], p, loaded, out, sc))
		}
		if lerr == nil {
			mp.MissingOperators = m.MissingOperators()
			m.Close()
		}
	}
	mp.MissingOperators, mp.NotModelled = nonNil(mp.MissingOperators), nonNil(mp.NotModelled)
	return mp
}

// delegatePlan is the plan of delegate di (p is nil when the backend made
// none); a loaded engine's scratch goes into sc, its assumptions into out.
func delegatePlan(di int, backend string, modelled bool, p *Plan, loaded bool, out *ProgramPlan, sc *scratchTally) DelegatePlan {
	dp := DelegatePlan{Index: di, Backend: backend, Modelled: modelled}
	if !modelled {
		dp.Notes = []string{"backend " + backend + " is not modelled here; its delegate is assumed to load"}
	}
	if p != nil {
		dp.Device = new(p.Device)
		dp.Budget = new(p.BudgetPlan)
		dp.Inputs, dp.Outputs = p.Inputs, p.Outputs
		dp.Scratch, dp.SharedScratch, dp.Notes = p.Scratch, p.SharedScratch, p.Notes
		for _, a := range p.Assumed {
			out.Assumed = appendOnce(out.Assumed, a)
		}
		if loaded {
			if p.Scratch == nil {
				sc.known = false
			} else {
				sc.engines = append(sc.engines, EngineScratch{Device: p.Device, Bytes: *p.Scratch, Shared: p.SharedScratch})
			}
		}
	}
	dp.Inputs, dp.Outputs, dp.Notes = nonNil(dp.Inputs), nonNil(dp.Outputs), nonNil(dp.Notes)
	return dp
}

// nonNil returns s, or an empty slice for nil, so that JSON has [] not null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// notModelled stands in for a backend PlanProgram does not model: it
// accepts every delegate.
type notModelled struct{}

func (notModelled) IsAvailable() bool { return true }
func (notModelled) Init(*InitContext, *pte.Payload, []*pte.CompileSpec) (Handle, error) {
	return nil, nil
}
func (notModelled) Destroy(Handle) {}
