//go:build !linux

package cli

// ReadyHeap does nothing outside Linux (see heap_linux.go).
func ReadyHeap(n int64) {}
