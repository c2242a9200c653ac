package executor

import (
	"io"
	"sync"
	"sync/atomic"

	"github.com/ptekit/ptekit/pte"
)

// fakeEngine is an Engine whose facts and failures are set per test. Its
// fields are deliberately unsynchronized so that the race detector reports
// any access the backend does not serialize.
type fakeEngine struct {
	device     int
	streamable int64
	automatic  int64
	scratch    int64
	refuse     func(budget int64) bool // nil accepts every budget
	ctxErr     error
	scratchOf  func(budget int64) int64 // nil: scratch does not depend on the budget

	budget     int64
	setCalls   []int64
	closed     bool
	contexts   []*fakeContext
	engineSize int64
}

func (e *fakeEngine) StreamableWeightsSize() int64 { e.check(); return e.streamable }
func (e *fakeEngine) AutomaticBudget() int64       { e.check(); return e.automatic }
func (e *fakeEngine) SetBudget(n int64) bool {
	e.check()
	e.setCalls = append(e.setCalls, n)
	if e.refuse != nil && e.refuse(n) {
		return false
	}
	e.budget = n
	return true
}
func (e *fakeEngine) Budget() int64 { e.check(); return e.budget }
func (e *fakeEngine) ScratchSize() int64 {
	if e.scratchOf != nil {
		return e.scratchOf(e.budget)
	}
	return e.scratch
}
func (e *fakeEngine) CreateContext(opts ContextOptions) (Context, error) {
	e.check()
	if e.ctxErr != nil {
		return nil, e.ctxErr
	}
	c := &fakeContext{engine: e, userManaged: opts.UserManagedScratch, budget: e.budget}
	e.contexts = append(e.contexts, c)
	return c, nil
}
func (e *fakeEngine) Close() error {
	if e.closed {
		panic("engine closed twice")
	}
	e.closed = true
	return nil
}
func (e *fakeEngine) check() {
	if e.closed {
		panic("engine used after Close")
	}
}

// fakeContext is a context of a fakeEngine.
type fakeContext struct {
	engine      *fakeEngine
	userManaged bool
	budget      int64 // engine budget when the context was created
	closed      bool
}

func (c *fakeContext) Close() error {
	if c.closed {
		panic("context closed twice")
	}
	c.closed = true
	return nil
}

// fakeFactory builds fakeEngines from a template.
type fakeFactory struct {
	mu       sync.Mutex
	template fakeEngine
	err      error
	engines  []*fakeEngine
	// scratch, when set, gives the n-th engine's scratch size.
	scratch []int64
}

func (f *fakeFactory) Deserialize(device int, engine *io.SectionReader) (Engine, error) {
	if f.err != nil {
		return nil, f.err
	}
	e := f.template // copy the facts
	e.device, e.engineSize = device, engine.Size()
	f.mu.Lock()
	if n := len(f.engines); n < len(f.scratch) {
		e.scratch = f.scratch[n]
	}
	f.engines = append(f.engines, &e)
	f.mu.Unlock()
	return &e, nil
}

// countingBackend wraps a Backend and counts Init and Destroy calls.
type countingBackend struct {
	Backend
	inits, destroys atomic.Int32
}

func (c *countingBackend) Init(ctx *InitContext, p *pte.Payload, specs []*pte.CompileSpec) (Handle, error) {
	h, err := c.Backend.Init(ctx, p, specs)
	if err == nil {
		c.inits.Add(1)
	}
	return h, err
}
func (c *countingBackend) Destroy(h Handle) { c.destroys.Add(1); c.Backend.Destroy(h) }
