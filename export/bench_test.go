//go:build linux

package export

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Benchmark sizes: the targets are stated for 64 engines of 32 MiB and a
// 2 GiB program. PTEKIT_BENCH_MIB overrides the engine size (MiB) for a
// quicker run. Disk use peaks at about twice the engine bytes.
func benchEngineMiB(b *testing.B) int64 {
	if s := os.Getenv("PTEKIT_BENCH_MIB"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("PTEKIT_BENCH_MIB=%q", s)
		}
		return n
	}
	return 32
}

// writeEngines writes n engine files of size bytes of pseudo-random data.
func writeEngines(b *testing.B, dir string, n int, size int64) []string {
	b.Helper()
	buf := make([]byte, 1<<20)
	var paths []string
	for i := range n {
		rng := rand.New(rand.NewPCG(uint64(i), 42))
		p := filepath.Join(dir, fmt.Sprintf("e%02d.engine", i))
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriter(f)
		for left := size; left > 0; left -= int64(len(buf)) {
			for k := 0; k < len(buf); k += 8 {
				v := rng.Uint64()
				for j := 0; j < 8; j++ {
					buf[k+j] = byte(v >> (8 * j))
				}
			}
			w.Write(buf[:min(left, int64(len(buf)))])
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		paths = append(paths, p)
	}
	return paths
}

// manyEngines is one method calling n engines in a chain.
func manyEngines(paths []string) *Program {
	m := &Method{Name: "forward", Inputs: []*Tensor{{Name: "t0", DType: Float16, Shape: []int64{1, 4096}}}}
	for i, p := range paths {
		out := fmt.Sprintf("t%d", i+1)
		m.Calls = append(m.Calls, &EngineCall{Engine: EngineFile(p),
			Inputs:  []*Binding{{Name: "x", Tensor: fmt.Sprintf("t%d", i)}},
			Outputs: []*Binding{{Name: "y", Tensor: out, DType: Float16, Shape: []int64{1, 4096}}}})
	}
	m.Outputs = []*Tensor{{Name: fmt.Sprintf("t%d", len(paths))}}
	return &Program{Methods: []*Method{m}}
}

// peakRSS measures the peak resident set size of the benchmark process.
// It counts the whole test binary (Go runtime, test framework, the
// program description), not only what the exporter holds; the page cache
// that file copies go through is not part of it.
type peakRSS struct{ max float64 }

// reset starts a new measurement window: writing 5 to clear_refs resets
// the kernel's high-water mark (VmHWM) of this process.
func (r *peakRSS) reset() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// sample records VmHWM, or the lifetime peak from getrusage when /proc is
// unavailable.
func (r *peakRSS) sample() {
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
	r.max = max(r.max, mib)
}

// cpRatio times an export or re-bake against cp of the same bytes in the
// same benchmark iteration. Fsync policy: both sides end with their output
// durable on disk (the exporter fsyncs its temporary file before the
// rename; cp is followed by an fsync of its copy, or one syncfs for
// several copies, see timeCp). Each side starts after sync(2), so neither pays
// for the other's (or the setup's) pending write-back, and the order
// alternates between iterations.
type cpRatio struct {
	cp     time.Duration
	ratios []float64 // per iteration
	rss    peakRSS
}

// iter runs one iteration: ours (writing ourOut) on the benchmark timer;
// off it, cp of srcs to cpDst (a file, or a directory for several
// sources) and the removal of both outputs.
func (c *cpRatio) iter(b *testing.B, i int, ours func() error, ourOut, cpDst string, srcs ...string) {
	b.StopTimer()
	var ours1, cp1 time.Duration
	runOurs := func() {
		syscall.Sync()
		c.rss.reset()
		b.StartTimer()
		start := time.Now()
		err := ours()
		ours1 = time.Since(start)
		b.StopTimer()
		c.rss.sample()
		if err != nil {
			b.Fatal(err)
		}
		os.Remove(ourOut)
	}
	runCp := func() {
		syscall.Sync()
		cp1 = timeCp(b, cpDst, srcs...)
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

// report adds x-cp, the median over iterations of our time / cp's time
// (robust to one iteration hit by disk stalls; each ratio pairs runs that
// were next to each other in time), cp's mean time per op, and the peak RSS.
func (c *cpRatio) report(b *testing.B) {
	slices.Sort(c.ratios)
	n := len(c.ratios)
	b.ReportMetric((c.ratios[(n-1)/2]+c.ratios[n/2])/2, "x-cp")
	b.ReportMetric(c.cp.Seconds()/float64(b.N), "cp-s/op")
	b.ReportMetric(c.rss.max, "peak-RSS-MiB")
}

// timeCp copies srcs to dst with one cp (dst is a directory when there are
// several sources), makes the copies durable, and returns the time taken.
// One copy is fsynced; several are flushed by one syncfs(2) (sync -f), a single
// flush as for the exporter's single output file (an fsync per copy would
// cost one journal commit each and flatter the exporter).
func timeCp(b *testing.B, dst string, srcs ...string) time.Duration {
	b.Helper()
	if len(srcs) > 1 {
		if err := os.Mkdir(dst, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	if out, err := exec.Command("cp", append(srcs, dst)...).CombinedOutput(); err != nil {
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

// BenchmarkExport64Engines exports 64 engine files (32 MiB each by
// default) into one program, each engine becoming a TensorRT blob segment
// (in-memory header + engine file range), and reports the ratio to cp of
// the engine files (x-cp, fsync policy in cpRatio) and the peak RSS.
// Targets: x-cp <= 1.3, peak RSS < 64 MiB whatever the engine size.
func BenchmarkExport64Engines(b *testing.B) {
	dir := b.TempDir()
	size := benchEngineMiB(b) << 20
	paths := writeEngines(b, dir, 64, size)
	p := manyEngines(paths)
	out := filepath.Join(dir, "out.pte")
	var c cpRatio
	b.SetBytes(64 * size)
	b.ResetTimer()
	for i := range b.N {
		c.iter(b, i, func() error {
			_, err := WriteFile(out, p, nil)
			return err
		}, out, filepath.Join(dir, "cp"), paths...)
	}
	c.report(b)
}

// BenchmarkRebake2GiB re-bakes a 2 GiB program (64 segments; smaller with
// PTEKIT_BENCH_MIB), setting a budget, and reports the ratio to cp of the
// same file (x-cp, fsync policy in cpRatio) and the peak RSS. Targets:
// x-cp <= 1.3, peak RSS < 64 MiB whatever the program size.
func BenchmarkRebake2GiB(b *testing.B) {
	dir := b.TempDir()
	size := benchEngineMiB(b) << 20
	paths := writeEngines(b, dir, 64, size)
	in := filepath.Join(dir, "in.pte")
	if _, err := WriteFile(in, manyEngines(paths), nil); err != nil {
		b.Fatal(err)
	}
	for _, p := range paths {
		os.Remove(p)
	}
	st, err := os.Stat(in)
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(dir, "out.pte")
	budget := int64(4 << 30)
	var c cpRatio
	b.SetBytes(st.Size())
	b.ResetTimer()
	for i := range b.N {
		c.iter(b, i, func() error {
			_, err := Rebake(in, out, &RebakeOptions{WeightStreamingBudget: &budget})
			return err
		}, out, filepath.Join(dir, "cp.pte"), in)
	}
	c.report(b)
}
