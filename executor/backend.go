package executor

import (
	"log/slog"
	"strings"
	"sync"

	"github.com/ptekit/ptekit/pte"
)

// Handle is a backend's state for one initialized delegate.
type Handle any

// Backend is an ExecuTorch backend as the loader sees it: it turns a
// delegate's payload into a Handle at load time. Implementations must be
// safe for concurrent use: several methods may load at once.
type Backend interface {
	// IsAvailable reports whether the backend can run on this machine. A
	// program using an unavailable backend fails to load (NotFound).
	IsAvailable() bool
	// Init prepares one delegate. payload is read lazily (it may be a large
	// segment of the file); specs are the delegate's compile specs, in file
	// order. Returned errors should be *Error values (see Errorf) carrying
	// ExecuTorch's error class; other errors count as Internal.
	Init(ctx *InitContext, payload *pte.Payload, specs []*pte.CompileSpec) (Handle, error)
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
	return runtimeSpec(c, key, OptionValue.Str, "a string")
}

// RuntimeInt is RuntimeString for int options (get_runtime_spec<int>).
func (c *InitContext) RuntimeInt(key string) (int32, error) {
	return runtimeSpec(c, key, OptionValue.Int, "an int")
}

// runtimeSpec is get_runtime_spec<T>, T being what get reads (want names it).
func runtimeSpec[T any](c *InitContext, key string, get func(OptionValue) (T, bool), want string) (T, error) {
	var zero T
	v, ok := c.RuntimeSpec(key)
	if !ok {
		return zero, errorf(CodeNotFound, "no runtime option %q", key)
	}
	x, ok := get(v)
	if !ok {
		return zero, errorf(CodeInvalidArgument, "runtime option %q is a %s, not %s", key, v.Kind(), want)
	}
	return x, nil
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

// Registry maps backend ids to backends. The zero value is empty and ready
// to use; it is safe for concurrent use.
type Registry struct {
	mu       sync.RWMutex
	backends map[string]Backend
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

// Backend returns the backend registered under id.
//
// Like ExecuTorch, which compares backend ids as C strings, an id is matched
// up to its first NUL byte: a delegate whose id is "TensorRTBackend\x00x"
// reaches the backend registered as "TensorRTBackend".
func (r *Registry) Backend(id string) (Backend, bool) {
	id, _, _ = strings.Cut(id, "\x00")
	r.mu.RLock()
	defer r.mu.RUnlock()
	b, ok := r.backends[id]
	return b, ok
}

// OperatorName returns the name a runtime registers op's kernel under:
// Name, or Name + "." + Overload.
func OperatorName(op *pte.Operator) string {
	if op == nil {
		return ""
	}
	if op.Overload == "" {
		return op.Name
	}
	return op.Name + "." + op.Overload
}
