package export

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestCollectBuildGarbage: before the write, a process holding more than
// collectAbove collects (the encoder's pages then come from the build's
// garbage, not from fresh memory); a small one does not.
func TestCollectBuildGarbage(t *testing.T) {
	numGC := func() uint32 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.NumGC
	}
	debug.FreeOSMemory() // a heap of nothing but the test's
	before := numGC()
	collectBuildGarbage()
	if n := numGC(); n != before {
		t.Errorf("a small heap was collected (%d collections)", n-before)
	}
	held := make([]byte, collectAbove+(16<<20))
	for i := range held {
		held[i] = byte(i)
	}
	before = numGC()
	collectBuildGarbage()
	if n := numGC(); n == before {
		t.Errorf("a heap past %d bytes was not collected", collectAbove)
	}
	runtime.KeepAlive(held)
}
