package cli

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// batchGCHeadroom is how far a batch command's heap may grow past its live
// heap before the next collection, once the live heap is past 4 MiB: at
// BatchGCPercent the heap may reach five times the live heap, which at
// 65,536 engines was most of an export's peak memory. It was 64 MiB,
// which at 16,384 engines of 1 KiB was 4 KiB of peak memory per engine
// by itself; and every page the heap grows by is a page fault, which
// costs more than a collection of a small heap marks: at 16,384 engines,
// 16 MiB instead of 64 took 15-20 us of CPU per engine less and 1-1.5
// KiB less peak memory per engine (one method per engine, and a chain),
// and at 65,536, where the heap's half is more, changed nothing.
const batchGCHeadroom = 16 << 20

// minBatchGCPercent is the least GOGC batchGCPercent sets: a collection at
// least every half of the live heap allocated, so that a large heap is
// not marked again for each few MiB.
const minBatchGCPercent = 50

// batchGCPercent is the GOGC for a live heap of live bytes: BatchGCPercent
// while the heap is small (up to 4 MiB), then what lets the heap grow by
// batchGCHeadroom, and no less than minBatchGCPercent.
func batchGCPercent(live uint64) int {
	if live == 0 {
		return BatchGCPercent
	}
	p := batchGCHeadroom * 100 / live
	return int(max(minBatchGCPercent, min(p, BatchGCPercent)))
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
