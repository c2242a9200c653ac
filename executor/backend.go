package executor

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/ptekit/ptekit/pte"
)

// Handle is a backend's state for one initialized delegate.
type Handle any

// Backend is an ExecuTorch backend: it turns a delegate's payload into a
// Handle at load time and runs it when the method executes. Implementations
// must be safe for concurrent use: several methods, and several Execute
// calls on one method, may run at once.
type Backend interface {
	// IsAvailable reports whether the backend can run on this machine. A
	// program using an unavailable backend fails to load (NotFound).
	IsAvailable() bool
	// Init prepares one delegate. payload is read lazily (it may be a large
	// segment of the file); specs are the delegate's compile specs, in file
	// order. Returned errors should be *Error values (see Errorf) carrying
	// ExecuTorch's error class; other errors count as Internal.
	Init(ctx *InitContext, payload *pte.Payload, specs []*pte.CompileSpec) (Handle, error)
	// Execute runs the delegate. args are the DelegateCall's arguments: the
	// delegate's inputs in order, then its outputs in order.
	Execute(ctx *ExecuteContext, h Handle, args []Arg) error
	// Destroy releases h. It is called exactly once for every handle Init
	// returned, also when a later delegate of the method fails to load.
	Destroy(h Handle)
}

// InitContext is what a backend's Init learns about the delegate it is
// initializing.
type InitContext struct {
	Method        string // method name
	DelegateIndex int    // index in the method's delegates
	BackendID     string // the delegate's backend id
	// RuntimeSpecs are the load-time options addressed to BackendID, the
	// same list for every delegate of that backend.
	RuntimeSpecs []Option
	// Logger receives the backend's log records; never nil.
	Logger *slog.Logger

	plans *[]*Plan
}

// RuntimeSpec returns the first load-time option with the given key.
func (c *InitContext) RuntimeSpec(key string) (OptionValue, bool) {
	return LookupOption(c.RuntimeSpecs, key)
}

// RuntimeString behaves like ExecuTorch's get_runtime_spec<const char*>: it
// returns the first option with the key when it is a string, an *Error with
// code NotFound when there is none, and one with code InvalidArgument when
// the first match holds another type.
func (c *InitContext) RuntimeString(key string) (string, error) {
	v, ok := c.RuntimeSpec(key)
	if !ok {
		return "", errorf(CodeNotFound, "no runtime option %q", key)
	}
	s, ok := v.Str()
	if !ok {
		return "", errorf(CodeInvalidArgument, "runtime option %q is a %s, not a string", key, v.Kind())
	}
	return s, nil
}

// RuntimeInt is RuntimeString for int options (get_runtime_spec<int>).
func (c *InitContext) RuntimeInt(key string) (int32, error) {
	v, ok := c.RuntimeSpec(key)
	if !ok {
		return 0, errorf(CodeNotFound, "no runtime option %q", key)
	}
	n, ok := v.Int()
	if !ok {
		return 0, errorf(CodeInvalidArgument, "runtime option %q is a %s, not an int", key, v.Kind())
	}
	return n, nil
}

// ReportPlan records the plan of the delegate being initialized, so that it
// is visible to the caller (Method.Plans, PlanProgram) even when Init then
// fails. A later report for the same delegate replaces an earlier one.
func (c *InitContext) ReportPlan(p *Plan) {
	if c.plans == nil || p == nil {
		return
	}
	p.Method, p.Delegate, p.Backend = c.Method, c.DelegateIndex, c.BackendID
	// A method's delegates are initialized in order, each reporting only
	// for itself, so an earlier report of this delegate can only be the
	// last one: looking further (every plan of the method, for each
	// report) made loading a method of 65536 engines quadratic.
	plans := *c.plans
	if n := len(plans); n > 0 && plans[n-1].Method == p.Method && plans[n-1].Delegate == p.Delegate {
		plans[n-1] = p
		return
	}
	*c.plans = append(plans, p)
}

// ExecuteContext is what a backend's Execute or a kernel learns about the
// call.
type ExecuteContext struct {
	context.Context
	// Method is the name of the method being executed.
	Method        string
	DelegateIndex int // -1 for a kernel
	Instruction   int // index of the instruction in its chain
	// Stream is the caller's stream (see WithStream), nil for the default.
	Stream Stream
	// Logger receives the backend's or kernel's records; never nil.
	Logger *slog.Logger
}

// Stream is an opaque device stream handle supplied by the caller and passed
// through to engines and scratch allocators.
type Stream any

type streamKey struct{}

// WithStream returns a context that makes Method.Execute hand stream to the
// backends, like ExecuTorch's CallerStreamGuard.
func WithStream(ctx context.Context, stream Stream) context.Context {
	return context.WithValue(ctx, streamKey{}, stream)
}

// Arg is one argument of a DelegateCall or KernelCall.
type Arg struct {
	// Index is the value index in the method's value table.
	Index int32
	// Decl is the value's declaration in the program (type, shape, ...).
	Decl *pte.EValue
	// Slot holds the value for this execution: inputs as the caller passed
	// them, constants from the program, outputs as earlier instructions (or
	// this one) stored them. Backends and kernels write outputs here.
	Slot *any
}

// Kernel is an operator implementation run by a KernelCall.
type Kernel func(ctx *ExecuteContext, args []Arg) error

// Registry maps backend ids to backends and operator names to kernels. The
// zero value is empty and ready to use; it is safe for concurrent use.
type Registry struct {
	mu       sync.RWMutex
	backends map[string]Backend
	kernels  map[string]Kernel
}

// RegisterBackend registers b under id. Registering an id twice is an
// error (InvalidArgument), as in ExecuTorch.
func (r *Registry) RegisterBackend(id string, b Backend) error {
	if id == "" || b == nil {
		return errorf(CodeInvalidArgument, "backend id and backend must be set")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.backends[id]; dup {
		return errorf(CodeInvalidArgument, "backend %s is already registered", id)
	}
	if r.backends == nil {
		r.backends = make(map[string]Backend)
	}
	r.backends[id] = b
	return nil
}

// RegisterKernel registers k for the operator name (Operator.Name, plus "."
// and Operator.Overload when the overload is not empty).
func (r *Registry) RegisterKernel(name string, k Kernel) error {
	if name == "" || k == nil {
		return errorf(CodeInvalidArgument, "operator name and kernel must be set")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.kernels[name]; dup {
		return errorf(CodeInvalidArgument, "kernel %s is already registered", name)
	}
	if r.kernels == nil {
		r.kernels = make(map[string]Kernel)
	}
	r.kernels[name] = k
	return nil
}

// Backend returns the backend registered under id.
//
// Like ExecuTorch, which compares backend ids as C strings, an id is matched
// up to its first NUL byte: a delegate whose id is "TensorRTBackend\x00x"
// reaches the backend registered as "TensorRTBackend".
func (r *Registry) Backend(id string) (Backend, bool) {
	if i := strings.IndexByte(id, 0); i >= 0 {
		id = id[:i]
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	b, ok := r.backends[id]
	return b, ok
}

// Kernel returns the kernel registered for the operator name.
func (r *Registry) Kernel(name string) (Kernel, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.kernels[name]
	return k, ok
}

// OperatorName returns the registry name of op: Name, or Name + "." +
// Overload.
func OperatorName(op *pte.Operator) string {
	if op == nil {
		return ""
	}
	if op.Overload == "" {
		return op.Name
	}
	return op.Name + "." + op.Overload
}
