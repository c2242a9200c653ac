package testkit

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// PeakRSS measures the peak resident set size of the test process, in MiB.
// It counts the whole test binary (Go runtime, test framework, the data
// under test), not only what the code being measured holds; the page cache
// that file copies go through is not part of it.
type PeakRSS struct {
	// Max is the largest peak sampled so far, in MiB.
	Max float64
}

// Reset starts a new measurement window: writing 5 to
// /proc/self/clear_refs resets the kernel's high-water mark (VmHWM) of this
// process. Where that is not possible the window stays the process
// lifetime.
func (r *PeakRSS) Reset() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// Sample raises Max to the current VmHWM, or to the lifetime peak from
// getrusage(2) when /proc is unavailable.
func (r *PeakRSS) Sample() {
	mib := -1.0
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				mib = kb / 1024
			}
		}
	}
	if mib < 0 {
		var ru syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
			mib = float64(ru.Maxrss) / 1024 // KiB on Linux
		}
	}
	r.Max = max(r.Max, mib)
}

// CopyBaseline times an operation that writes a file (a program write, an
// export, a re-bake) against cp(1) of the same bytes in the same benchmark
// iteration, and samples the peak RSS of the operation.
//
// Fsync policy: both sides end with their output durable on disk (the
// operation is expected to fsync its output; cp is followed by an fsync of
// its copy, or one syncfs(2) for several copies, see [TimeCp]). Each side
// starts after sync(2), so neither pays for the other's (or the setup's)
// pending write-back, and the order alternates between iterations.
//
// The zero value is ready to use; use one CopyBaseline per benchmark run.
type CopyBaseline struct {
	cp     time.Duration
	ratios []float64 // ours / cp, per iteration
	rss    PeakRSS
}

// Iter runs iteration i: ours (which writes ourOut) on the benchmark
// timer; off it, cp of srcs to cpDst (a file, or a directory created for
// several sources) and the removal of both outputs. An error from ours
// fails the benchmark.
func (c *CopyBaseline) Iter(b *testing.B, i int, ours func() error, ourOut, cpDst string, srcs ...string) {
	b.Helper()
	b.StopTimer()
	var ours1, cp1 time.Duration
	runOurs := func() {
		syscall.Sync()
		c.rss.Reset()
		b.StartTimer()
		start := time.Now()
		err := ours()
		ours1 = time.Since(start)
		b.StopTimer()
		c.rss.Sample()
		if err != nil {
			b.Fatal(err)
		}
		os.Remove(ourOut)
	}
	runCp := func() {
		syscall.Sync()
		cp1 = TimeCp(b, cpDst, srcs...)
		os.RemoveAll(cpDst)
	}
	if i%2 == 0 {
		runOurs()
		runCp()
	} else {
		runCp()
		runOurs()
	}
	c.cp += cp1
	c.ratios = append(c.ratios, float64(ours1)/float64(cp1))
	b.StartTimer()
}

// Report adds three metrics to the benchmark: x-cp, the median over
// iterations of our time / cp's time (robust to one iteration hit by disk
// stalls; each ratio pairs runs that were next to each other in time);
// cp-s/op, cp's mean time per op; and peak-RSS-MiB. It reports nothing
// when no iteration ran.
func (c *CopyBaseline) Report(b *testing.B) {
	n := len(c.ratios)
	if n == 0 {
		return
	}
	slices.Sort(c.ratios)
	b.ReportMetric((c.ratios[(n-1)/2]+c.ratios[n/2])/2, "x-cp")
	b.ReportMetric(c.cp.Seconds()/float64(b.N), "cp-s/op")
	b.ReportMetric(c.rss.Max, "peak-RSS-MiB")
}

// TimeCp copies srcs to dst with one cp(1) (dst is created as a directory
// when there are several sources), makes the copies durable, and returns
// the time taken. One copy is fsynced; several are flushed by one
// syncfs(2) (sync -f), a single flush as for a single output file (an
// fsync per copy would cost one journal commit each and flatter the
// operation compared with cp).
func TimeCp(b *testing.B, dst string, srcs ...string) time.Duration {
	b.Helper()
	if len(srcs) == 0 {
		b.Fatal("testkit.TimeCp: no source")
	}
	if len(srcs) > 1 {
		if err := os.Mkdir(dst, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	if out, err := exec.Command("cp", append(slices.Clip(srcs), dst)...).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v: %s", err, bytes.TrimSpace(out))
	}
	if len(srcs) > 1 {
		if out, err := exec.Command("sync", "-f", dst).CombinedOutput(); err != nil {
			b.Fatalf("sync -f: %v: %s", err, bytes.TrimSpace(out))
		}
		return time.Since(start)
	}
	f, err := os.Open(dst)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}
