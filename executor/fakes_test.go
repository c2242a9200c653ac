package executor

import (
	"errors"
	"fmt"
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

// fakeContext records enqueues.
type fakeContext struct {
	engine      *fakeEngine
	userManaged bool
	budget      int64 // engine budget when the context was created
	closed      bool
	enqueues    int
	pending     int // enqueued, not yet synchronized
	scratchUsed []DeviceBuffer
	lastArgs    []Arg
	enqueueErr  error
	onEnqueue   func(c *fakeContext, stream Stream)
}

func (c *fakeContext) ScratchSize([]Arg) (int64, error) { return c.engine.scratch, nil }
func (c *fakeContext) Enqueue(stream Stream, args []Arg, scratch DeviceBuffer) error {
	if c.closed {
		panic("enqueue on a closed context")
	}
	if c.budget != c.engine.budget {
		panic("context used after the budget changed without recreating it")
	}
	if c.enqueueErr != nil {
		return c.enqueueErr
	}
	c.enqueues++
	c.pending++
	c.lastArgs = args
	c.scratchUsed = append(c.scratchUsed, scratch)
	if c.onEnqueue != nil {
		c.onEnqueue(c, stream)
	}
	return nil
}
func (c *fakeContext) Synchronize() error { c.pending = 0; return nil }
func (c *fakeContext) Close() error {
	if c.closed {
		panic("context closed twice")
	}
	if c.pending != 0 {
		panic("context closed with work in flight")
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

// fakeBuffer is device memory from fakeAllocator.
type fakeBuffer struct {
	id, device int
	size       int64
}

func (b *fakeBuffer) Size() int64 { return b.size }

// fakeEvent is an event from fakeAllocator: seq orders recordings.
type fakeEvent struct {
	seq    int
	stream Stream
}

// fakeAllocator records every device call in order.
type fakeAllocator struct {
	mu       sync.Mutex
	nextID   int
	seq      int
	log      []string
	live     map[int]*fakeBuffer
	peak     int64
	failAt   int64 // Alloc of this size fails
	resident int64
	// recordErr and syncErr, when set, fail Record and Synchronize.
	recordErr, syncErr error
}

func newFakeAllocator() *fakeAllocator { return &fakeAllocator{live: map[int]*fakeBuffer{}} }

func (a *fakeAllocator) Alloc(device int, size int64) (DeviceBuffer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failAt != 0 && size == a.failAt {
		a.log = append(a.log, fmt.Sprintf("alloc-fail d%d %d", device, size))
		return nil, errors.New("out of memory")
	}
	a.nextID++
	b := &fakeBuffer{id: a.nextID, device: device, size: size}
	a.live[b.id] = b
	a.resident += size
	a.peak = max(a.peak, a.resident)
	a.log = append(a.log, fmt.Sprintf("alloc d%d #%d %d", device, b.id, size))
	return b, nil
}

func (a *fakeAllocator) Free(device int, buf DeviceBuffer, after Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := buf.(*fakeBuffer)
	delete(a.live, b.id)
	a.resident -= b.size
	afterName := "none"
	if ev, ok := after.(*fakeEvent); ok {
		afterName = fmt.Sprintf("e%d", ev.seq)
	}
	a.log = append(a.log, fmt.Sprintf("free d%d #%d after %s", device, b.id, afterName))
}

func (a *fakeAllocator) Record(device int, stream Stream) (Event, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.recordErr != nil {
		a.log = append(a.log, fmt.Sprintf("record-fail d%d on %v", device, stream))
		return nil, a.recordErr
	}
	a.seq++
	a.log = append(a.log, fmt.Sprintf("record d%d e%d on %v", device, a.seq, stream))
	return &fakeEvent{seq: a.seq, stream: stream}, nil
}

func (a *fakeAllocator) Wait(device int, stream Stream, ev Event) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.log = append(a.log, fmt.Sprintf("wait d%d %v on e%d", device, stream, ev.(*fakeEvent).seq))
	return nil
}

func (a *fakeAllocator) Synchronize(device int, stream Stream) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.syncErr != nil {
		a.log = append(a.log, fmt.Sprintf("sync-fail d%d %v", device, stream))
		return a.syncErr
	}
	a.log = append(a.log, fmt.Sprintf("sync d%d %v", device, stream))
	return nil
}

func (a *fakeAllocator) entries() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.log...)
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
