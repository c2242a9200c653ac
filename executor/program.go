package executor

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// Config configures a Program.
type Config struct {
	// Registry holds the backends and kernels; nil means an empty registry.
	Registry *Registry
	// Logger receives structured records from the loader and the backends;
	// nil discards them.
	Logger *slog.Logger
	// NoDeprecatedConstantBuffer models an ExecuTorch runtime built with
	// ET_ENABLE_DEPRECATED_CONSTANT_BUFFER=0: Load then refuses, with
	// InvalidProgram, a program that keeps its constants in the deprecated
	// inline constant_buffer (see UsesDeprecatedConstantBuffer). The zero
	// value is upstream's default build, which loads such a program and
	// logs that the path is deprecated.
	NoDeprecatedConstantBuffer bool
	// DataFiles are the external data files (.ptd) given with the program,
	// in order, as ExecuTorch's Module(program, data_files) takes them:
	// open them with ptd.Load (a file that failed to open is kept as a
	// Source with Err set). Load resolves the program against them once
	// (ptd.Resolve); LoadMethod then finds each EXTERNAL tensor in them.
	// The Files must stay open while the program is in use.
	DataFiles []ptd.Source
}

// ErrDataFiles is wrapped by the error Load returns when a data file fails
// to load or the data files cannot be merged (errors.Is): ExecuTorch's
// Module::load stops there. Program.Data of a program loaded without the
// files then says what the methods do without a data map.
var ErrDataFiles = errors.New("the external data files cannot be used")

// UsesDeprecatedConstantBuffer reports whether p keeps its constant tensor
// data in the deprecated inline Program.constant_buffer: the constant
// segment is absent or has no offsets, and constant_buffer has entries.
// Programs written by ExecuTorch since September 2024 never do.
func UsesDeprecatedConstantBuffer(p *pte.Program) bool {
	if p == nil || len(p.ConstantBuffer) == 0 {
		return false
	}
	return p.ConstantSegment == nil || len(p.ConstantSegment.Offsets) == 0
}

// msgDeprecatedConstantBuffer says why a program with inline constants is
// refused or warned about.
const msgDeprecatedConstantBuffer = "the program keeps its constants in the deprecated inline constant_buffer, " +
	"which runtimes built with ET_ENABLE_DEPRECATED_CONSTANT_BUFFER=0 refuse"

// Program is a loaded program, ready to load its methods. It is safe for
// concurrent use.
type Program struct {
	file *pte.File
	reg  *Registry
	log  *slog.Logger
	data *ptd.Resolution
}

// Load prepares f for loading methods. f must have been opened with
// pte.Open or pte.NewFile, which already apply ExecuTorch's Program::load
// checks; the File must stay open while the program and its methods are in
// use.
//
// With Config.DataFiles, Load also does what Module::load does with data
// files: each file must have loaded and their keys must merge (no key in
// two files, at least one file with keys). Otherwise Load fails with the
// first failure's code (AccessFailed, InvalidArgument,
// InvalidExternalData; Error.Err wraps ErrDataFiles and the ptd error).
// As in Module::load, the data files are checked before the program
// itself (Config.NoDeprecatedConstantBuffer's InvalidProgram).
func Load(f *pte.File, cfg Config) (*Program, error) {
	if f == nil || f.Program == nil {
		return nil, errorf(CodeInvalidArgument, "no program")
	}
	p := &Program{file: f, reg: cmp.Or(cfg.Registry, &Registry{}),
		log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))}
	// Module::load loads every data file and merges them before
	// Program::load looks at the program: a data file that fails answers
	// first, even for a program the runtime would refuse.
	p.data = ptd.Resolve(f.Program, cfg.DataFiles)
	if len(cfg.DataFiles) > 0 && !p.data.Module.OK() {
		return nil, dataError(p.data)
	}
	if UsesDeprecatedConstantBuffer(f.Program) {
		if cfg.NoDeprecatedConstantBuffer {
			p.log.Error("Program::load: " + msgDeprecatedConstantBuffer)
			return nil, errorf(CodeInvalidProgram, "%s (this runtime is such a build)", msgDeprecatedConstantBuffer)
		}
		p.log.Warn("Program::load: " + msgDeprecatedConstantBuffer)
	}
	return p, nil
}

// dataError describes why the data files of r cannot be used.
func dataError(r *ptd.Resolution) *Error {
	st, what := r.Module, "merging the data files failed"
	for _, fr := range r.Files {
		if !fr.Load.OK() {
			st, what = fr.Load, fmt.Sprintf("data file %s failed to load", fr.Name)
			break
		}
	}
	if st.Undefined {
		what += " (ExecuTorch's loader has no check for this and crashes)"
	}
	return wrapError(st.Code, what, fmt.Errorf("%w: %w", ErrDataFiles, st.Err))
}

// Data returns how the program's EXTERNAL tensors and named data resolve
// against the data files given to Load (none: every method is resolved
// without a data map). The caller must not modify it.
func (p *Program) Data() *ptd.Resolution { return p.data }

// MethodNames returns the names of the program's methods, in file order.
func (p *Program) MethodNames() []string {
	names := make([]string, p.file.Program.NumPlans())
	for i := range names {
		names[i] = p.file.Program.PlanName(i)
	}
	return names
}

// delegateState is one initialized delegate of a method.
type delegateState struct {
	id      string
	backend Backend
	handle  Handle
}

// Method is a loaded method: its delegates initialized, their plans kept.
// Close destroys every backend handle.
type Method struct {
	prog      *Program
	name      string
	planIndex int
	plan      *pte.ExecutionPlan
	log       *slog.Logger

	mu        sync.Mutex // guards closed
	closed    bool
	delegates []delegateState

	planMu sync.Mutex
	plans  []*Plan
}

// LoadMethod loads the named method the way ExecuTorch does (the checks of
// Program::method_meta, then Method::init), in upstream order:
//
//  1. non_const_buffer_sizes, inputs and outputs must be present;
//  2. every value must be well formed: a known union tag with its table,
//     list items that refer to existing values, tensors with sizes and a
//     matching dim_order;
//  3. each delegate, in order, is handed to the backend registered under
//     its id (an unregistered or unavailable backend is a NotFound error
//     naming the backend and the method) with its payload, its compile
//     specs and the load-time options addressed to that backend id;
//  4. the chains must exist and every instruction must have a known type,
//     its table, and in-range value and operator indices.
//
// As upstream, a DelegateCall's delegate index and the method's input and
// output indices are not checked at load (ExecuTorch checks them when the
// method executes, which is not modelled). Operators are resolved at
// execution too, so a method loads without kernels; see MissingOperators.
//
// When any step fails, the handles created so far are destroyed and
// LoadMethod returns a nil *Method and an *Error (use errors.As) carrying
// the Code, Method, Delegate and Backend, and in Plans the plans the
// backends reported before the failure.
func (p *Program) LoadMethod(name string, opts *LoadOptions) (*Method, error) {
	m, err := p.loadMethod(name, opts)
	if err != nil {
		if m != nil {
			err.Plans = m.Plans()
		}
		return nil, err
	}
	return m, nil
}

// loadMethod is LoadMethod; on failure it also returns the closed method
// (nil when the method does not exist), whose delegates and plans say how
// far loading got.
func (p *Program) loadMethod(name string, opts *LoadOptions) (*Method, *Error) {
	idx := p.file.PlanIndex(name)
	if idx < 0 {
		return nil, methodError(name, CodeInvalidArgument, "", "no such method (methods: %q)", p.MethodNames())
	}
	ep := p.file.Program.Plan(idx)
	m := &Method{prog: p, name: name, planIndex: idx, plan: ep,
		log: p.log.With(slog.String("method", name))}
	data := &p.data.Methods[idx]
	err := checkMeta(name, ep)
	if err == nil {
		err = checkValues(name, ep, data)
	}
	if err == nil {
		err = m.initDelegates(opts, data)
	}
	if err == nil {
		err = checkChains(name, ep)
	}
	if err != nil {
		if err.Delegate < 0 {
			m.log.Error("method failed to load", slog.String("code", err.Code.String()), slog.String("error", err.Error()))
		}
		m.Close()
	}
	return m, err
}

func (m *Method) initDelegates(opts *LoadOptions, data *ptd.MethodResult) *Error {
	if m.plan.Delegates == nil {
		return methodError(m.name, CodeInvalidProgram, "delegates", "field is missing")
	}
	// Method::init merges the program's named_data with the external data
	// map for the delegates before initializing the first one.
	if st := data.NamedDataMerge; !st.OK() {
		return dataMethodError(m.name, "", st)
	}
	for di, d := range m.plan.Delegates {
		if d == nil {
			e := checkDelegateEntry(m.name, di, d)
			e.Delegate = di
			return e
		}
		log := m.log.With(slog.Int("delegate", di), slog.String("backend", d.ID))
		b, ok := m.prog.reg.Backend(d.ID)
		if !ok || !b.IsAvailable() {
			why := "is not registered"
			if ok {
				why = "is not available"
			}
			log.Error("backend " + why)
			return &Error{Code: CodeNotFound, Method: m.name, Delegate: di, Backend: d.ID, Instruction: -1, Msg: "backend " + d.ID + " " + why}
		}
		payload, err := m.prog.file.DelegateData(m.planIndex, di)
		if err != nil {
			e := locate(err, m.name, di, d.ID)
			e.Msg = "cannot read the delegate payload"
			log.Error("failed to load data for backend", slog.String("code", e.Code.String()), slog.Any("error", err))
			return e
		}
		if e := checkDelegateEntry(m.name, di, d); e != nil {
			e.Delegate, e.Backend = di, d.ID
			return e
		}
		ictx := &InitContext{
			Method: m.name, DelegateIndex: di, BackendID: d.ID,
			RuntimeSpecs: opts.Options(d.ID),
			Logger:       log,
			plans:        &m.plans,
		}
		m.planMu.Lock() // ReportPlan appends to m.plans
		h, err := b.Init(ictx, payload, d.CompileSpecs)
		m.planMu.Unlock()
		if err != nil {
			e := locate(err, m.name, di, d.ID)
			log.Error("backend init failed", slog.String("code", e.Code.String()), slog.String("error", e.Error()))
			return e
		}
		m.delegates = append(m.delegates, delegateState{id: d.ID, backend: b, handle: h})
	}
	return nil
}

// Name returns the method's name.
func (m *Method) Name() string { return m.name }

// Plans returns the plans the backends reported for this method's
// delegates, in delegate order (only delegates whose backend reports plans,
// such as TensorRTBackend).
func (m *Method) Plans() []*Plan {
	m.planMu.Lock()
	defer m.planMu.Unlock()
	out := make([]*Plan, len(m.plans))
	for i, p := range m.plans {
		out[i] = new(*p)
	}
	return out
}

// MissingOperators returns the operators the method's kernel calls use,
// by OperatorName, in first-use order: ptekit has no kernels, so a runtime
// must provide each of them or fail (OperatorMissing) when executing the
// method reaches it.
func (m *Method) MissingOperators() []string {
	var out []string
	seen := map[string]bool{}
	for _, ch := range m.plan.Chains {
		if ch == nil {
			continue
		}
		for _, ins := range ch.Instructions {
			if ins == nil {
				continue
			}
			kc, ok := ins.Args.(*pte.KernelCall)
			if !ok || kc == nil || kc.OpIndex < 0 || int(kc.OpIndex) >= len(m.plan.Operators) {
				continue // such instructions fail LoadMethod
			}
			name := OperatorName(m.plan.Operators[kc.OpIndex])
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	return out
}

// Close destroys every backend handle of the method, once. It is safe to
// call more than once.
func (m *Method) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	for _, d := range m.delegates {
		d.backend.Destroy(d.handle)
	}
	return nil
}
