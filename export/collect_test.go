package export

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/ptekit/ptekit/internal/batch"
)

// TestHoldBuildMemory: before the write, a process holding more than
// collectAbove collects and limits its memory to what it holds (the
// encoder's pages then come from the build's garbage, not from fresh
// memory) until done; a small one does neither, one with inline data is
// only collected, and a lower limit set by the caller is kept. Without
// batch tuning asked for by a main, the limit is never set.
func TestHoldBuildMemory(t *testing.T) {
	numGC := func() uint32 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.NumGC
	}
	limit := func() int64 { return debug.SetMemoryLimit(-1) }
	defer debug.SetMemoryLimit(limit())
	debug.SetMemoryLimit(math.MaxInt64)
	debug.FreeOSMemory() // a heap of nothing but the test's
	before := numGC()
	holdBuildMemory(false)()
	if n := numGC(); n != before {
		t.Errorf("a small heap was collected (%d collections)", n-before)
	}
	if l := limit(); l != math.MaxInt64 {
		t.Errorf("a small heap was limited to %d bytes", l)
	}
	held := make([]byte, collectAbove+(16<<20))
	for i := range held {
		held[i] = byte(i)
	}
	defer batch.Set(batch.Set(false))
	before = numGC()
	done := holdBuildMemory(false)
	if n := numGC(); n == before {
		t.Errorf("a heap past %d bytes was not collected outside a batch command", collectAbove)
	}
	if l := limit(); l != math.MaxInt64 {
		t.Errorf("a library caller's process was limited to %d bytes", l)
	}
	done()
	batch.Set(true)
	before = numGC()
	done = holdBuildMemory(false)
	if n := numGC(); n == before {
		t.Errorf("a heap past %d bytes was not collected", collectAbove)
	}
	if l := limit(); l < int64(len(held)) || l == math.MaxInt64 {
		t.Errorf("memory limit %d while %d bytes are held", l, len(held))
	}
	holdBuildMemory(false)() // another export meanwhile leaves it alone
	if l := limit(); l == math.MaxInt64 {
		t.Error("a second export lifted the first one's limit")
	}
	done()
	if l := limit(); l != math.MaxInt64 {
		t.Errorf("limit %d left after the write", l)
	}
	before = numGC()
	holdBuildMemory(true)()
	if n := numGC(); n == before {
		t.Error("a heap with inline data was not collected")
	}
	if l := limit(); l != math.MaxInt64 {
		t.Errorf("a heap with inline data was limited to %d bytes", l)
	}
	debug.SetMemoryLimit(32 << 20)
	holdBuildMemory(false)()
	if l := limit(); l != 32<<20 {
		t.Errorf("the caller's lower limit became %d", l)
	}
	runtime.KeepAlive(held)
}
