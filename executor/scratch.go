package executor

import (
	"fmt"
	"github.com/ptekit/ptekit/compilespec"
	"sort"
	"sync"
)

// DeviceBuffer is device memory handed out by a ScratchAllocator.
type DeviceBuffer interface {
	// Size returns the buffer's size in bytes.
	Size() int64
}

// Event is an opaque device event: it completes when the work queued on a
// stream before it was recorded has finished.
type Event any

// ScratchAllocator is the device side of the shared activation scratch pool:
// memory and events. A CUDA binding implements it with cudaMalloc,
// cudaFreeAsync (or an event-gated free), cudaEventRecord and
// cudaStreamWaitEvent. Tests use fakes.
type ScratchAllocator interface {
	// Alloc allocates size bytes on the device.
	Alloc(device int, size int64) (DeviceBuffer, error)
	// Free releases buf once after has completed (after is nil when no work
	// used buf). It must not wait for unrelated device work.
	Free(device int, buf DeviceBuffer, after Event)
	// Record returns an event that completes when the work queued so far on
	// stream has finished.
	Record(device int, stream Stream) (Event, error)
	// Wait makes work queued later on stream wait for ev.
	Wait(device int, stream Stream, ev Event) error
	// Synchronize blocks until all work queued on stream has finished
	// (cudaStreamSynchronize). The pool uses it only when it cannot
	// record a handoff event.
	Synchronize(device int, stream Stream) error
}

// ScratchPool is the opt-in shared activation scratch pool: one grow-only
// buffer per device backs the execution context of every participating
// engine on that device. The buffer is sized to the largest requirement
// seen; when it grows, the new buffer is allocated before the old one is
// released (so both are resident for a moment), and the old one is freed
// behind the last enqueue that used it. Consecutive users are ordered with
// an event: each enqueue's stream waits for the event recorded after the
// previous enqueue, whatever stream that was on. The pool is never shrunk
// or freed while the backend lives.
//
// A ScratchPool is safe for concurrent use; Acquire blocks while another
// enqueue on the same device holds the buffer.
type ScratchPool struct {
	alloc ScratchAllocator

	mu      sync.Mutex
	devices map[int]*devicePool
}

type devicePool struct {
	mu    sync.Mutex // held from Acquire to Release
	buf   DeviceBuffer
	last  Event // recorded after the latest enqueue, nil before the first or after a synchronize
	grows int
	uses  int
	// broken is set when an enqueue's completion could be neither
	// recorded nor waited for: the buffer may still be in use by work
	// nothing can order after, so the device's pool refuses every later
	// Acquire.
	broken error
}

// NewScratchPool returns an empty pool over alloc.
func NewScratchPool(alloc ScratchAllocator) *ScratchPool {
	return &ScratchPool{alloc: alloc, devices: make(map[int]*devicePool)}
}

func (p *ScratchPool) device(d int) *devicePool {
	p.mu.Lock()
	defer p.mu.Unlock()
	dp, ok := p.devices[d]
	if !ok {
		dp = &devicePool{}
		p.devices[d] = dp
	}
	return dp
}

// ScratchLease is the device buffer lent to one enqueue.
type ScratchLease struct {
	pool   *ScratchPool
	dp     *devicePool
	device int
	done   bool
}

// Acquire lends the device's buffer, grown to at least size bytes, to one
// enqueue on stream, after making stream wait for the previous enqueue that
// used the buffer. The caller must call Release after queuing its work.
func (p *ScratchPool) Acquire(device int, size int64, stream Stream) (*ScratchLease, error) {
	if size <= 0 {
		return nil, fmt.Errorf("runtime: scratch pool: invalid size %d", size)
	}
	dp := p.device(device)
	dp.mu.Lock()
	if dp.broken != nil {
		dp.mu.Unlock()
		return nil, fmt.Errorf("runtime: scratch pool on device %d is unusable after a failed handoff: %w", device, dp.broken)
	}
	if dp.buf == nil || dp.buf.Size() < size {
		nb, err := p.alloc.Alloc(device, size)
		if err != nil {
			dp.mu.Unlock()
			return nil, fmt.Errorf("runtime: scratch pool: growing device %d to %d bytes: %w", device, size, err)
		}
		if dp.buf != nil {
			p.alloc.Free(device, dp.buf, dp.last)
		}
		dp.buf = nb
		dp.grows++
	}
	if dp.last != nil {
		if err := p.alloc.Wait(device, stream, dp.last); err != nil {
			dp.mu.Unlock()
			return nil, fmt.Errorf("runtime: scratch pool: ordering after the previous enqueue on device %d: %w", device, err)
		}
	}
	dp.uses++
	return &ScratchLease{pool: p, dp: dp, device: device}, nil
}

// Buffer returns the lent buffer.
func (l *ScratchLease) Buffer() DeviceBuffer { return l.dp.buf }

// Release records the handoff event on stream (the stream the enqueue used)
// and returns the buffer to the pool; the next Acquire orders its stream
// after that event. When the event cannot be recorded, Release waits for
// stream instead, so that the buffer is idle when the next user gets it;
// when that fails too, the device's pool is unusable from then on (later
// Acquire calls fail) and Release returns the error. Calling it again does
// nothing.
func (l *ScratchLease) Release(stream Stream) error {
	if l.done {
		return nil
	}
	l.done = true
	defer l.dp.mu.Unlock()
	ev, err := l.pool.alloc.Record(l.device, stream)
	if err == nil {
		l.dp.last = ev
		return nil
	}
	if serr := l.pool.alloc.Synchronize(l.device, stream); serr != nil {
		l.dp.broken = fmt.Errorf("recording the handoff event: %w; synchronizing the stream: %w", err, serr)
		return fmt.Errorf("runtime: scratch pool on device %d: %w", l.device, l.dp.broken)
	}
	// Every use of the buffer has finished: no event is needed.
	l.dp.last = nil
	return nil
}

// PoolStats describes one device's pool.
type PoolStats struct {
	// Device is the CUDA device the pool's buffer lives on.
	Device int
	Size   int64 // current buffer size, 0 before the first use
	Grows  int   // how many times the buffer was (re)allocated
	Uses   int   // how many enqueues used it
}

// Stats returns the state of every device's pool, by device.
func (p *ScratchPool) Stats() []PoolStats {
	p.mu.Lock()
	ids := make([]int, 0, len(p.devices))
	for d := range p.devices {
		ids = append(ids, d)
	}
	p.mu.Unlock()
	sort.Ints(ids)
	out := make([]PoolStats, 0, len(ids))
	for _, d := range ids {
		dp := p.device(d)
		dp.mu.Lock()
		s := PoolStats{Device: d, Grows: dp.grows, Uses: dp.uses}
		if dp.buf != nil {
			s.Size = dp.buf.Size()
		}
		dp.mu.Unlock()
		out = append(out, s)
	}
	return out
}

// EngineScratch is one engine's activation scratch requirement.
type EngineScratch struct {
	// Device is the CUDA device the engine runs on.
	Device int
	// Bytes is the activation scratch the engine's context needs.
	Bytes  int64
	Shared bool // the engine uses the shared pool
}

// ScratchMemory is the device memory taken by activation scratch.
type ScratchMemory struct {
	// WithoutPool is the total when every context owns its scratch.
	WithoutPool int64 `json:"without_pool"`
	// WithPool is the total when every engine with a non-zero requirement
	// uses the shared pool: per device, the largest requirement.
	WithPool int64 `json:"with_pool"`
	// Current is the total with each engine's actual setting: pooled
	// engines share one buffer per device, the others own theirs.
	Current int64 `json:"current"`
	// PoolPerDevice is the pool size per device under the actual settings.
	// Never nil from ComputeScratchMemory; JSON keys are the device numbers.
	PoolPerDevice map[int]int64 `json:"pool_per_device"`
}

// ComputeScratchMemory adds up scratch requirements with and without the
// shared pool. Engines needing no scratch stay outside the pool.
func ComputeScratchMemory(engines []EngineScratch) ScratchMemory {
	m := ScratchMemory{PoolPerDevice: map[int]int64{}}
	all := map[int]int64{}
	for _, e := range engines {
		if e.Bytes <= 0 {
			continue
		}
		m.WithoutPool = compilespec.AddSizes(m.WithoutPool, e.Bytes)
		all[e.Device] = max(all[e.Device], e.Bytes)
		if e.Shared {
			m.PoolPerDevice[e.Device] = max(m.PoolPerDevice[e.Device], e.Bytes)
		} else {
			m.Current = compilespec.AddSizes(m.Current, e.Bytes)
		}
	}
	for _, b := range all {
		m.WithPool = compilespec.AddSizes(m.WithPool, b)
	}
	for _, b := range m.PoolPerDevice {
		m.Current = compilespec.AddSizes(m.Current, b)
	}
	return m
}
