package executor

import "github.com/ptekit/ptekit/compilespec"

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
