package cli

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ptekit/ptekit/internal/batch"
)

// hugePageAdvised reports whether the byte at addr is in a mapping that
// carries the MADV_HUGEPAGE advice ("hg" in /proc/self/smaps' VmFlags).
func hugePageAdvised(t *testing.T, addr uintptr) bool {
	f, err := os.Open("/proc/self/smaps")
	require.NoError(t, err)
	defer f.Close()
	var lo, hi uint64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			a, b, _ := strings.Cut(fields[0], "-")
			var err1, err2 error
			lo, err1 = strconv.ParseUint(a, 16, 64)
			hi, err2 = strconv.ParseUint(b, 16, 64)
			require.NoError(t, err1)
			require.NoError(t, err2)
		case len(fields) > 0 && fields[0] == "VmFlags:":
			for _, fl := range fields[1:] {
				in = in || fl == "hg" && uint64(addr) >= lo && uint64(addr) < hi
			}
		}
	}
	require.NoError(t, sc.Err())
	return in
}

// TestReadyHeap: after ReadyHeap, the heap grows into memory advised to
// be backed by huge pages, but only in a process whose main opted in
// (TuneBatchGC) and not with GODEBUG=disablethp=1. Each case runs in a
// process of its own (this test binary again), whose heap is fresh.
func TestReadyHeap(t *testing.T) {
	if os.Getenv("PTEKIT_READYHEAP_CHILD") != "" {
		return
	}
	_, thpErr := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled")
	advises := thpErr == nil && !strictOvercommit()
	if !advises {
		// madvise refuses MADV_HUGEPAGE on a kernel without them:
		// ReadyHeap must then do no harm, which the cases still check.
		t.Logf("ReadyHeap gives no advice here (transparent huge pages: %v; strict overcommit: %t)", thpErr, strictOvercommit())
	}
	advises = advises && !addressSpaceLimited()
	for _, c := range []struct {
		optIn   bool
		godebug string
		limit   bool // the child limits its data segment (to far more than it uses)
		want    bool
	}{{false, "", false, false}, {true, "disablethp=1", false, false}, {true, "", false, advises}, {true, "disablethp=0", false, advises},
		{true, "", true, false}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReadyHeapChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "PTEKIT_READYHEAP_CHILD="+strconv.FormatBool(c.optIn), "GODEBUG="+c.godebug,
			"PTEKIT_READYHEAP_LIMIT="+strconv.FormatBool(c.limit))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		m := regexp.MustCompile(`advised=(true|false)`).FindSubmatch(out)
		require.NotNil(t, m, "%s", out)
		assert.Equal(t, strconv.FormatBool(c.want), string(m[1]), "opted in %t, GODEBUG=%q, data limited %t: is a fresh allocation after ReadyHeap advised huge pages?", c.optIn, c.godebug, c.limit)
	}
}

// TestReadyHeapChild is TestReadyHeap's process: ReadyHeap of 64 MiB (main
// opted in or not), then a 16 MiB allocation, and whether its middle is in
// memory advised huge pages.
func TestReadyHeapChild(t *testing.T) {
	opt := os.Getenv("PTEKIT_READYHEAP_CHILD")
	if opt == "" {
		return
	}
	batch.Set(opt == "true")
	if os.Getenv("PTEKIT_READYHEAP_LIMIT") == "true" {
		var l unix.Rlimit
		require.NoError(t, unix.Getrlimit(unix.RLIMIT_DATA, &l))
		l.Cur = min(l.Max, 1<<40)
		require.NoError(t, unix.Setrlimit(unix.RLIMIT_DATA, &l))
	}
	ReadyHeap(64 << 20)
	fresh := make([]byte, 16<<20)
	in := hugePageAdvised(t, uintptr(unsafe.Pointer(&fresh[len(fresh)/2])))
	runtime.KeepAlive(fresh)
	fmt.Printf("advised=%t\n", in)
}

// TestThpDisabled: GODEBUG's disablethp, the last setting winning.
func TestThpDisabled(t *testing.T) {
	for godebug, want := range map[string]bool{
		"": false, "disablethp=1": true, "disablethp=0": false, "gctrace=1,disablethp=1": true,
		"disablethp=1,disablethp=0": false, "disablethp=0, disablethp=1": true, "xdisablethp=1": false,
	} {
		assert.Equal(t, want, thpDisabled(godebug), "GODEBUG=%q", godebug)
	}
}

// BenchmarkPageTouch is what ReadyHeap is for: the cost of a first touch of
// fresh anonymous memory, per 4 KiB page, when each page faults on its own,
// when one mmap populates them all, and when the kernel backs them with
// huge pages (MADV_HUGEPAGE). Run: go test -run '^$' -bench PageTouch
// ./internal/cli (the figures in docs/performance.md).
func BenchmarkPageTouch(b *testing.B) {
	const size = 64 << 20
	const page = 4096
	for _, c := range []struct {
		name   string
		flags  int
		advise bool
	}{{"4KiB-faults", 0, false}, {"populated", unix.MAP_POPULATE, false}, {"huge-pages", 0, true}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				// Room to align the range to a huge page.
				m, err := unix.Mmap(-1, 0, size+hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE|c.flags)
				if err != nil {
					b.Fatal(err)
				}
				off := int((hugePage - uintptr(unsafe.Pointer(&m[0]))%hugePage) % hugePage)
				mem := m[off : off+size]
				if c.advise {
					if err := unix.Madvise(mem, unix.MADV_HUGEPAGE); err != nil {
						b.Fatal(err)
					}
				}
				for i := 0; i < size; i += page {
					mem[i] = 1
				}
				if err := unix.Munmap(m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(size/page), "ns/page")
		})
	}
}
