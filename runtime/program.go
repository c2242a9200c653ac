package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/ptekit/ptekit/pte"
)

// Config configures a Program.
type Config struct {
	// Registry holds the backends and kernels; nil means an empty registry.
	Registry *Registry
	// Logger receives structured records from the loader and the backends;
	// nil discards them.
	Logger *slog.Logger
}

// Program is a loaded program, ready to load its methods. It is safe for
// concurrent use.
type Program struct {
	file *pte.File
	reg  *Registry
	log  *slog.Logger
}

// Load prepares f for loading methods. f must have been opened with
// pte.Open or pte.NewFile, which already apply ExecuTorch's Program::load
// checks; the File must stay open while the program and its methods are in
// use.
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
	return p, nil
}

// File returns the program's file.
func (p *Program) File() *pte.File { return p.file }

// MethodNames returns the names of the program's methods, in file order.
func (p *Program) MethodNames() []string {
	names := make([]string, 0, len(p.file.Program.ExecutionPlan))
	for _, ep := range p.file.Program.ExecutionPlan {
		if ep != nil {
			names = append(names, ep.Name)
		}
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

// LoadMethod loads the named method the way ExecuTorch's Method::init does:
// each delegate, in order, is handed to the backend registered under its id
// (an unregistered or unavailable backend is a NotFound error naming the
// backend and the method) with its payload, its compile specs and the
// load-time options addressed to that backend id. If any delegate fails,
// the handles created so far are destroyed and the error is returned. The
// instructions are then checked (indices in range, known instruction
// kinds). Operators are resolved when the method executes, not here, so
// that a method can be loaded (and planned) without kernels; see
// MissingOperators.
//
// The error is an *Error; with errors.As callers can read its Code, Method,
// Delegate and Backend. LoadMethod also returns the plans recorded so far
// in the error case through Plans of the returned (closed) method, which is
// non-nil whenever the method was found.
func (p *Program) LoadMethod(name string, opts *LoadOptions) (*Method, error) {
	idx := -1
	for i, ep := range p.file.Program.ExecutionPlan {
		if ep != nil && ep.Name == name {
			idx = i
			break
		}
	}
	if idx < 0 {
		return nil, &Error{Code: CodeInvalidArgument, Method: name, Delegate: -1, Instruction: -1,
			Msg: fmt.Sprintf("no such method (methods: %q)", p.MethodNames())}
	}
	ep := p.file.Program.ExecutionPlan[idx]
	m := &Method{prog: p, name: name, planIndex: idx, plan: ep,
		log: p.log.With(slog.String("method", name))}
	if err := m.initDelegates(opts); err != nil {
		m.Close()
		return m, err
	}
	if err := m.checkInstructions(); err != nil {
		m.Close()
		return m, err
	}
	return m, nil
}

func (m *Method) initDelegates(opts *LoadOptions) error {
	for di, d := range m.plan.Delegates {
		if d == nil {
			return &Error{Code: CodeInvalidProgram, Method: m.name, Delegate: di, Instruction: -1, Msg: "delegate entry is missing"}
		}
		at := func(code pte.Code, format string, args ...any) error {
			return &Error{Code: code, Method: m.name, Delegate: di, Backend: d.ID, Instruction: -1, Msg: fmt.Sprintf(format, args...)}
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

// checkInstructions verifies every index an instruction uses, so Execute
// cannot go out of range.
func (m *Method) checkInstructions() error {
	ep := m.plan
	nv := len(ep.Values)
	bad := func(ci, ii int, format string, args ...any) error {
		return &Error{Code: CodeInvalidProgram, Method: m.name, Delegate: -1, Instruction: ii,
			Msg: fmt.Sprintf("chains[%d].instructions[%d]: ", ci, ii) + fmt.Sprintf(format, args...)}
	}
	value := func(v int32) bool { return v >= 0 && int(v) < nv }
	for i, v := range ep.Inputs {
		if !value(v) {
			return &Error{Code: CodeInvalidProgram, Method: m.name, Delegate: -1, Instruction: -1,
				Msg: fmt.Sprintf("inputs[%d] = %d is not a value index (%d values)", i, v, nv)}
		}
	}
	for i, v := range ep.Outputs {
		if !value(v) {
			return &Error{Code: CodeInvalidProgram, Method: m.name, Delegate: -1, Instruction: -1,
				Msg: fmt.Sprintf("outputs[%d] = %d is not a value index (%d values)", i, v, nv)}
		}
	}
	for ci, ch := range ep.Chains {
		if ch == nil {
			return bad(ci, -1, "chain is missing")
		}
		for ii, ins := range ch.Instructions {
			if ins == nil {
				return bad(ci, ii, "instruction is missing")
			}
			var idx []int32
			switch a := ins.Args.(type) {
			case *pte.KernelCall:
				if a.OpIndex < 0 || int(a.OpIndex) >= len(ep.Operators) || ep.Operators[a.OpIndex] == nil {
					return bad(ci, ii, "operator index %d out of range (%d operators)", a.OpIndex, len(ep.Operators))
				}
				idx = a.Args
			case *pte.DelegateCall:
				if a.DelegateIndex < 0 || int(a.DelegateIndex) >= len(m.delegates) {
					return bad(ci, ii, "delegate index %d out of range (%d delegates)", a.DelegateIndex, len(m.delegates))
				}
				idx = a.Args
			case *pte.MoveCall:
				idx = []int32{a.MoveFrom, a.MoveTo}
			case *pte.JumpFalseCall:
				if a.DestinationInstruction < 0 || int(a.DestinationInstruction) >= len(ch.Instructions) {
					return bad(ci, ii, "jump destination %d out of range (%d instructions)", a.DestinationInstruction, len(ch.Instructions))
				}
				idx = []int32{a.CondValueIndex}
			case *pte.FreeCall:
				idx = []int32{a.ValueIndex}
			case nil:
				return bad(ci, ii, "instruction has no arguments (union tag NONE)")
			default:
				return bad(ci, ii, "unknown instruction type %d", a.InstructionType())
			}
			for _, v := range idx {
				if !value(v) {
					return bad(ci, ii, "value index %d out of range (%d values)", v, nv)
				}
			}
		}
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
			if !ok || kc.OpIndex < 0 || int(kc.OpIndex) >= len(m.plan.Operators) {
				continue // out-of-range indices fail LoadMethod
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

// Execute runs the method's chains with the given inputs (one per method
// input, stored in the input value slots) and returns the values of the
// method outputs. Each call has its own value slots, so calls may run
// concurrently; backends serialize work on one handle as they need to. A
// caller stream set with WithStream is handed to the backends.
//
// DelegateCall hands the backend the delegate's inputs then outputs, as
// listed in the instruction; KernelCall runs the registered kernel (an
// unregistered operator is an OperatorMissing error naming it); MoveCall,
// JumpFalseCall and FreeCall act on the slots.
func (m *Method) Execute(ctx context.Context, inputs []any) ([]any, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, &Error{Code: CodeInvalidState, Method: m.name, Delegate: -1, Instruction: -1, Msg: "method is closed"}
	}
	ep := m.plan
	if len(inputs) != len(ep.Inputs) {
		return nil, &Error{Code: CodeInvalidArgument, Method: m.name, Delegate: -1, Instruction: -1,
			Msg: fmt.Sprintf("got %d inputs, the method takes %d", len(inputs), len(ep.Inputs))}
	}
	slots := make([]any, len(ep.Values))
	for i, v := range ep.Values {
		slots[i] = constantValue(v)
	}
	for i, vi := range ep.Inputs {
		slots[vi] = inputs[i]
	}
	stream, _ := ctx.Value(streamKey{}).(Stream)
	args := func(idx []int32) []Arg {
		out := make([]Arg, len(idx))
		for i, v := range idx {
			out[i] = Arg{Index: v, Decl: ep.Values[v], Slot: &slots[v]}
		}
		return out
	}
	for _, ch := range ep.Chains {
		for pc := 0; pc < len(ch.Instructions); {
			if err := ctx.Err(); err != nil {
				return nil, &Error{Code: CodeInvalidState, Method: m.name, Delegate: -1, Instruction: pc, Msg: "cancelled", Err: err}
			}
			ectx := &ExecuteContext{Context: ctx, Method: m.name, DelegateIndex: -1, Instruction: pc, Stream: stream, Logger: m.log}
			next := pc + 1
			switch a := ch.Instructions[pc].Args.(type) {
			case *pte.KernelCall:
				name := OperatorName(ep.Operators[a.OpIndex])
				k, ok := m.prog.reg.Kernel(name)
				if !ok {
					return nil, &Error{Code: CodeOperatorMissing, Method: m.name, Delegate: -1, Instruction: pc,
						Msg: fmt.Sprintf("operator %s is not registered", name)}
				}
				if err := k(ectx, args(a.Args)); err != nil {
					e := locate(err, m.name, -1, "")
					e.Instruction = pc
					return nil, e
				}
			case *pte.DelegateCall:
				d := m.delegates[a.DelegateIndex]
				ectx.DelegateIndex = int(a.DelegateIndex)
				if err := d.backend.Execute(ectx, d.handle, args(a.Args)); err != nil {
					e := locate(err, m.name, int(a.DelegateIndex), d.id)
					e.Instruction = pc
					return nil, e
				}
			case *pte.MoveCall:
				slots[a.MoveTo] = slots[a.MoveFrom]
			case *pte.JumpFalseCall:
				cond, ok := slots[a.CondValueIndex].(bool)
				if !ok {
					return nil, &Error{Code: CodeInvalidProgram, Method: m.name, Delegate: -1, Instruction: pc,
						Msg: fmt.Sprintf("jump condition value %d is %T, not a bool", a.CondValueIndex, slots[a.CondValueIndex])}
				}
				if !cond {
					next = int(a.DestinationInstruction)
				}
			case *pte.FreeCall:
				slots[a.ValueIndex] = nil
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
