package testkit

import "runtime"

// Allocated returns the bytes f allocates (runtime.MemStats.TotalAlloc
// before and after it): a deterministic measure of a function's memory
// for tests that bound it, where timings are not.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
