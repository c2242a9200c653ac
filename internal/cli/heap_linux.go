package cli

import (
	"os"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ptekit/ptekit/internal/batch"
)

// hugePage is the size of an x86-64 or arm64 (4 KiB granule) transparent
// huge page, the alignment madvise's advice is rounded to.
const hugePage = 2 << 20

// ReadyHeap readies about n bytes of the heap of a batch command that is
// about to grow its heap by that much (an export sizes it from its
// manifest) to be backed by transparent huge pages: it allocates n bytes
// without touching them, advises the kernel (madvise MADV_HUGEPAGE) that
// their range may be backed by 2 MiB pages, and lets the collector free
// them, so that the heap grows into that range. Go's runtime gives its
// heap no such advice, and with the kernel's usual setting
// (/sys/kernel/mm/transparent_hugepage/enabled: madvise) each 4 KiB page
// the heap first touches is then a page fault of its own: 12.5 us each on
// the virtual machines the benchmarks run on (a quarter of an export's
// CPU time at 65,536 engines), against 0.3-0.6 us per 4 KiB when the
// kernel maps 2 MiB at once (BenchmarkPageTouch). The cost is memory touched in 2 MiB steps: peak
// RSS grew by 1-8% in the exports measured.
//
// ReadyHeap does nothing unless TuneBatchGC ran (it changes the whole
// process: main opts in, tests that call run do not), when n is under
// 8 MiB (2,048 faults), when the system does not overcommit memory
// (vm.overcommit_memory 2: the n bytes, allocated if not touched, would
// count against its limit), or when GODEBUG has disablethp=1 (the
// runtime's own switch against huge pages for the heap), or when the
// process's address space or data is limited (RLIMIT_AS, RLIMIT_DATA: the
// n bytes count against them untouched, and a runtime whose heap cannot
// grow dies). n is taken as at
// most 4 GiB and half the machine's memory (the kernel's default
// overcommit refuses a single allocation past its memory and swap, which
// the runtime cannot survive). It is best effort: a kernel without
// transparent huge pages, or set to never use them, ignores the advice.
func ReadyHeap(n int64) {
	if !batch.Enabled() || thpDisabled(os.Getenv("GODEBUG")) || strictOvercommit() || addressSpaceLimited() {
		return
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return
	}
	if n = min(n, 4<<30, int64(si.Totalram)*int64(si.Unit)/2); n < 8<<20 {
		return
	}
	b := make([]byte, n)
	// The whole huge pages within b.
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	beg := int64((p+hugePage-1)&^(hugePage-1) - p)
	if end := beg + (n-beg)&^(hugePage-1); beg < end {
		unix.Madvise(b[beg:end], unix.MADV_HUGEPAGE)
	}
	runtime.GC() // b is not used past here: it is freed
}

// strictOvercommit reports whether the system refuses to allocate memory
// it could not back (vm.overcommit_memory 2).
func strictOvercommit() bool {
	b, err := os.ReadFile("/proc/sys/vm/overcommit_memory")
	return err == nil && strings.TrimSpace(string(b)) == "2"
}

// addressSpaceLimited reports whether the process's address space or data
// segment has a limit (ulimit -v, ulimit -d), or whether it cannot be
// told.
func addressSpaceLimited() bool {
	for _, r := range []int{unix.RLIMIT_AS, unix.RLIMIT_DATA} {
		var l unix.Rlimit
		if unix.Getrlimit(r, &l) != nil || l.Cur != unix.RLIM_INFINITY {
			return true
		}
	}
	return false
}

// thpDisabled reports whether godebug (GODEBUG's value) sets
// disablethp=1; the last setting of a name wins, as in the runtime.
func thpDisabled(godebug string) bool {
	off := false
	for _, kv := range strings.Split(godebug, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(kv), "disablethp="); ok {
			off = v == "1"
		}
	}
	return off
}
