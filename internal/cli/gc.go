package cli

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// batchGCHeadroom is how far a batch command's heap may grow past its live
// heap before the next collection while the live heap is small (up to
// batchGCLarge), once it is past 2.5 MiB: at BatchGCPercent the heap may
// reach five times the live heap, which at 65,536 engines was most of an
// export's peak memory, and every page the heap grows by is a page fault,
// which costs more than a collection of a small heap marks (16 MiB rather
// than 64 took 15-20 us of CPU and 1-1.5 KiB of peak memory less per
// engine at 16,384 engines). 10 MiB rather than 16 saved 3-7 MB of peak
// memory there, for 5-7% more CPU time with one method per engine and none
// past the noise in other shapes (paired runs of pteexport, round 11).
const batchGCHeadroom = 10 << 20

// batchGCLarge is the live heap past which the headroom also grows by half
// of the rest: a collection at most every half of the live heap past it
// allocated, so that a large heap is not marked again for each few MiB
// (45% of a live heap of 128 MiB, tending to 50%).
const batchGCLarge = 32 << 20

// batchGCPercent is the GOGC for a live heap of live bytes: what lets the
// heap grow by batchGCHeadroom and half of the live heap past
// batchGCLarge, and at most BatchGCPercent.
func batchGCPercent(live uint64) int {
	if live == 0 {
		return BatchGCPercent
	}
	room := uint64(batchGCHeadroom)
	if live > batchGCLarge {
		room += (live - batchGCLarge) / 2
	}
	return int(min(room*100/live, BatchGCPercent))
}

// batchGCOn says whether the collector's setting follows the live heap
// (TuneBatchGC starts it; tests stop it).
var batchGCOn atomic.Bool

// gcCycle is an object whose finalizer runs once per collection (the
// collection that finds it unreachable); it holds a pointer so that it
// is never a tiny allocation, whose finalizer could be delayed by its
// neighbours.
type gcCycle struct{ _ *byte }

// followLiveHeap sets GOGC from the live heap after each collection (see
// batchGCPercent) while batchGCOn holds.
func followLiveHeap() {
	runtime.SetFinalizer(&gcCycle{}, func(*gcCycle) {
		if !batchGCOn.Load() {
			return
		}
		debug.SetGCPercent(batchGCPercent(liveHeap()))
		followLiveHeap()
	})
}

// liveHeap is the heap the last collection marked live, in bytes (0 when
// the runtime does not say).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
