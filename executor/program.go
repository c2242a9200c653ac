package executor

import (
	"context"
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
	p := &Program{file: f, reg: cfg.Registry, log: cfg.Logger}
	if p.reg == nil {
		p.reg = &Registry{}
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	// Module::load loads every data file and merges them before
	// Program::load looks at the program: a data file that fails answers
	// first, even for a program the runtime would refuse.
	p.data = ptd.ResolveFile(f, cfg.DataFiles)
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
	return &Error{Code: st.Code, Delegate: -1, Instruction: -1, Msg: what,
		Err: fmt.Errorf("%w: %w", ErrDataFiles, st.Err)}
}

// Data returns how the program's EXTERNAL tensors and named data resolve
// against the data files given to Load (none: every method is resolved
// without a data map). The caller must not modify it.
func (p *Program) Data() *ptd.Resolution { return p.data }

// File returns the program's file.
func (p *Program) File() *pte.File { return p.file }

// MethodNames returns the names of the program's methods, in file order.
func (p *Program) MethodNames() []string {
	names := make([]string, p.file.NumPlans())
	for i := range names {
		names[i] = p.file.PlanName(i)
	}
	return names
}

// delegateState is one initialized delegate of a method.
type delegateState struct {
	id      string
	backend Backend
	handle  Handle
}

// Method is a loaded method. Execute may be called concurrently; Close
// waits for running executions and then destroys every backend handle.
type Method struct {
	prog      *Program
	name      string
	planIndex int
	plan      *pte.ExecutionPlan
	log       *slog.Logger

	mu        sync.RWMutex // held shared by Execute, exclusively by Close
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
// output indices are not checked at load: Execute reports them (Internal
// and InvalidProgram). Operators are resolved when the method executes, not
// here, so that a method can be loaded (and planned) without kernels; see
// MissingOperators.
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
		return nil, &Error{Code: CodeInvalidArgument, Method: name, Delegate: -1, Instruction: -1,
			Msg: fmt.Sprintf("no such method (methods: %q)", p.MethodNames())}
	}
	ep := p.file.Plan(idx)
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
		return m, err
	}
	return m, nil
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
		at := func(code pte.Code, format string, args ...any) *Error {
			return &Error{Code: code, Method: m.name, Delegate: di, Backend: d.ID, Instruction: -1, Msg: fmt.Sprintf(format, args...)}
		}
		if d == nil {
			e := checkDelegateEntry(m.name, di, d)
			e.Delegate = di
			return e
		}
		b, ok := m.prog.reg.Backend(d.ID)
		if !ok {
			m.log.Error("backend is not registered", slog.Int("delegate", di), slog.String("backend", d.ID))
			return at(CodeNotFound, "backend %s is not registered", d.ID)
		}
		if !b.IsAvailable() {
			m.log.Error("backend is not available", slog.Int("delegate", di), slog.String("backend", d.ID))
			return at(CodeNotFound, "backend %s is not available", d.ID)
		}
		payload, err := m.prog.file.DelegateData(m.planIndex, di)
		if err != nil {
			e := locate(err, m.name, di, d.ID)
			e.Msg = "cannot read the delegate payload"
			m.log.Error("failed to load data for backend", slog.Int("delegate", di), slog.String("backend", d.ID),
				slog.String("code", e.Code.String()), slog.Any("error", err))
			return e
		}
		if e := checkDelegateEntry(m.name, di, d); e != nil {
			e.Delegate, e.Backend = di, d.ID
			return e
		}
		ictx := &InitContext{
			Method: m.name, DelegateIndex: di, BackendID: d.ID,
			RuntimeSpecs: opts.Options(d.ID),
			Logger:       m.log.With(slog.Int("delegate", di), slog.String("backend", d.ID)),
			plans:        &m.plans,
		}
		m.planMu.Lock() // ReportPlan appends to m.plans
		h, err := b.Init(ictx, payload, d.CompileSpecs)
		m.planMu.Unlock()
		if err != nil {
			e := locate(err, m.name, di, d.ID)
			m.log.Error("backend init failed", slog.Int("delegate", di), slog.String("backend", d.ID),
				slog.String("code", e.Code.String()), slog.String("error", e.Error()))
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
		c := *p
		out[i] = &c
	}
	return out
}

// Handle returns the backend handle of delegate i, or nil.
func (m *Method) Handle(i int) Handle {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if i < 0 || i >= len(m.delegates) {
		return nil
	}
	return m.delegates[i].handle
}

// MissingOperators returns the operators used by the method's kernel calls
// that have no registered kernel, in first-use order. Executing the method
// fails (OperatorMissing) on the first of them that is reached.
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
			if _, ok := m.prog.reg.Kernel(name); !ok && !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	return out
}

// Close destroys every backend handle of the method, once, after running
// executions have finished. It is safe to call more than once.
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

// MaxInstructions is how many instructions one Execute call runs before it
// gives up with InvalidProgram, as ExecuTorch's ET_MAX_INSTRUCTIONS guards
// against programs that loop forever (a JumpFalseCall to itself).
const MaxInstructions = 10_000_000

// maxInstructions is MaxInstructions; tests lower it.
var maxInstructions = MaxInstructions

// Execute runs the method's chains with the given inputs (one per method
// input, stored in the input value slots) and returns the values of the
// method outputs. Each call has its own value slots, so calls may run
// concurrently; backends serialize work on one handle as they need to. A
// caller stream set with WithStream is handed to the backends.
//
// DelegateCall hands the backend the delegate's inputs then outputs, as
// listed in the instruction (a delegate index out of range is Internal, as
// upstream checks it only here); KernelCall runs the registered kernel (an
// unregistered operator is an OperatorMissing error naming it); MoveCall,
// JumpFalseCall and FreeCall act on the slots. A jump outside the chain
// ends the chain, as upstream. An input or output index outside the value
// table is InvalidProgram (ExecuTorch aborts the process there).
func (m *Method) Execute(ctx context.Context, inputs []any) ([]any, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, &Error{Code: CodeInvalidState, Method: m.name, Delegate: -1, Instruction: -1, Msg: "method is closed"}
	}
	ep := m.plan
	fail := func(code pte.Code, pc int, format string, args ...any) error {
		return &Error{Code: code, Method: m.name, Delegate: -1, Instruction: pc, Msg: fmt.Sprintf(format, args...)}
	}
	if len(inputs) != len(ep.Inputs) {
		return nil, fail(CodeInvalidArgument, -1, "got %d inputs, the method takes %d", len(inputs), len(ep.Inputs))
	}
	nv := len(ep.Values)
	for _, l := range []struct {
		name string
		idx  []int32
	}{{"inputs", ep.Inputs}, {"outputs", ep.Outputs}} {
		for i, v := range l.idx {
			if v < 0 || int(v) >= nv {
				return nil, fail(CodeInvalidProgram, -1, "%s[%d] = %d is not a value index (%d values)", l.name, i, v, nv)
			}
		}
	}
	slots := make([]any, nv)
	for i, v := range ep.Values {
		slots[i] = constantValue(v)
	}
	for i, vi := range ep.Inputs {
		slots[vi] = inputs[i]
	}
	run := &interp{m: m, ep: ep, slots: slots}
	stream, _ := ctx.Value(streamKey{}).(Stream)
	count := 0
	for _, ch := range ep.Chains {
		for pc := 0; pc >= 0 && pc < len(ch.Instructions); {
			if err := ctx.Err(); err != nil {
				return nil, &Error{Code: CodeInvalidState, Method: m.name, Delegate: -1, Instruction: pc, Msg: "cancelled", Err: err}
			}
			if count >= maxInstructions {
				return nil, fail(CodeInvalidProgram, pc, "instruction limit %d reached: the program loops", maxInstructions)
			}
			count++
			ectx := &ExecuteContext{Context: ctx, Method: m.name, DelegateIndex: -1, Instruction: pc, Stream: stream, Logger: m.log}
			next, err := run.step(ectx, pc, ch.Instructions[pc])
			if err != nil {
				return nil, err
			}
			pc = next
		}
	}
	out := make([]any, len(ep.Outputs))
	for i, vi := range ep.Outputs {
		out[i] = slots[vi]
	}
	return out, nil
}

// interp is one run of a method's instructions over its value slots.
type interp struct {
	m     *Method
	ep    *pte.ExecutionPlan
	slots []any
}

// args returns the arguments an instruction passes, by value index.
func (r *interp) args(idx []int32) []Arg {
	out := make([]Arg, len(idx))
	for i, v := range idx {
		out[i] = Arg{Index: v, Decl: r.ep.Values[v], Slot: &r.slots[v]}
	}
	return out
}

// step executes instruction pc and returns the next pc.
func (r *interp) step(ectx *ExecuteContext, pc int, ins *pte.Instruction) (int, error) {
	m, ep, slots := r.m, r.ep, r.slots
	fail := func(code pte.Code, format string, args ...any) error {
		return &Error{Code: code, Method: m.name, Delegate: -1, Instruction: pc, Msg: fmt.Sprintf(format, args...)}
	}
	switch a := ins.Args.(type) {
	case *pte.KernelCall:
		name := OperatorName(ep.Operators[a.OpIndex])
		k, ok := m.prog.reg.Kernel(name)
		if !ok {
			return 0, fail(CodeOperatorMissing, "operator %s is not registered", name)
		}
		if err := k(ectx, r.args(a.Args)); err != nil {
			e := locate(err, m.name, -1, "")
			e.Instruction = pc
			return 0, e
		}
	case *pte.DelegateCall:
		if a.DelegateIndex < 0 || int(a.DelegateIndex) >= len(m.delegates) {
			return 0, fail(CodeInternal, "DelegateCall index %d >= number of delegates %d", a.DelegateIndex, len(m.delegates))
		}
		d := m.delegates[a.DelegateIndex]
		ectx.DelegateIndex = int(a.DelegateIndex)
		if err := d.backend.Execute(ectx, d.handle, r.args(a.Args)); err != nil {
			e := locate(err, m.name, int(a.DelegateIndex), d.id)
			e.Instruction = pc
			return 0, e
		}
	case *pte.MoveCall:
		slots[a.MoveTo] = slots[a.MoveFrom]
	case *pte.JumpFalseCall:
		cond, ok := slots[a.CondValueIndex].(bool)
		if !ok {
			return 0, fail(CodeInvalidProgram, "jump condition value %d is %T, not a bool", a.CondValueIndex, slots[a.CondValueIndex])
		}
		if !cond {
			return int(a.DestinationInstruction), nil
		}
	case *pte.FreeCall:
		if t, ok := ep.Values[a.ValueIndex].Val.(*pte.Tensor); !ok || t == nil {
			return 0, fail(CodeInvalidProgram, "FreeCall target value %d is not a Tensor", a.ValueIndex)
		}
		slots[a.ValueIndex] = nil
	}
	return pc + 1, nil
}

// constantValue returns the initial slot content for a declared value:
// scalars and lists as Go values, nil for tensors and None.
func constantValue(v *pte.EValue) any {
	if v == nil {
		return nil
	}
	switch x := v.Val.(type) {
	case *pte.Int:
		return x.IntVal
	case *pte.Bool:
		return x.BoolVal
	case *pte.Double:
		return x.DoubleVal
	case *pte.String:
		return x.StringVal
	case *pte.DoubleList:
		return x.Items
	case *pte.BoolList:
		return x.Items
	}
	return nil
}
