package export

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

// resetPeakRSS resets the kernel's peak RSS record (VmHWM) of this process.
func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSSMiB returns VmHWM in MiB, or -1 when unavailable.
func peakRSSMiB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return -1
}

// timeCp copies srcs to dst (a file, or a directory for several sources)
// with cp and returns how long cp took, and how long cp plus an fsync of
// every copy took. The exporter fsyncs its output before renaming it into
// place, so cp+fsync is the like-for-like baseline; plain cp leaves the
// bytes in the page cache.
func timeCp(b *testing.B, dst string, srcs ...string) (plain, synced time.Duration) {
	b.Helper()
	start := time.Now()
	out, err := exec.Command("cp", append(srcs, dst)...).CombinedOutput()
	if err != nil {
		b.Fatalf("cp: %v: %s", err, bytes.TrimSpace(out))
	}
	plain = time.Since(start)
	copies := []string{dst}
	if len(srcs) > 1 {
		copies = copies[:0]
		for _, s := range srcs {
			copies = append(copies, filepath.Join(dst, filepath.Base(s)))
		}
	}
	for _, c := range copies {
		f, err := os.Open(c)
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	return plain, time.Since(start)
}

// BenchmarkExport64Engines exports 64 engines (32 MiB each by default) into
// one program and reports the time as a ratio to cp of the engine bytes
// (with and without fsync, see timeCp), and the peak RSS. Targets: <= 1.3x
// cp, < 64 MiB.
func BenchmarkExport64Engines(b *testing.B) {
	dir := b.TempDir()
	size := benchEngineMiB(b) << 20
	paths := writeEngines(b, dir, 64, size)
	p := manyEngines(paths)
	out := filepath.Join(dir, "out.pte")
	cpDir := filepath.Join(dir, "cp")
	var exportTime, cpTime, cpSyncTime time.Duration
	var peak float64
	b.SetBytes(64 * size)
	b.ResetTimer()
	for range b.N {
		resetPeakRSS()
		start := time.Now()
		if _, err := WriteFile(out, p, nil); err != nil {
			b.Fatal(err)
		}
		exportTime += time.Since(start)
		peak = max(peak, peakRSSMiB())
		os.Remove(out)
		b.StopTimer()
		os.Mkdir(cpDir, 0o755)
		plain, synced := timeCp(b, cpDir, paths...)
		cpTime += plain
		cpSyncTime += synced
		os.RemoveAll(cpDir)
		b.StartTimer()
	}
	b.ReportMetric(float64(exportTime)/float64(cpSyncTime), "x-cp+fsync")
	b.ReportMetric(float64(exportTime)/float64(cpTime), "x-cp")
	b.ReportMetric(peak, "peak-RSS-MiB")
}

// BenchmarkRebake2GiB re-bakes a 2 GiB program (64 segments; smaller with
// PTEKIT_BENCH_MIB) and reports the time as a ratio to cp of the same file
// (with and without fsync, see timeCp), and the peak RSS. Targets: <= 1.3x
// cp, < 64 MiB.
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
	cpOut := filepath.Join(dir, "cp.pte")
	var rebakeTime, cpTime, cpSyncTime time.Duration
	var peak float64
	budget := int64(4 << 30)
	b.SetBytes(st.Size())
	b.ResetTimer()
	for range b.N {
		resetPeakRSS()
		start := time.Now()
		if _, err := Rebake(in, out, &RebakeOptions{WeightStreamingBudget: &budget}); err != nil {
			b.Fatal(err)
		}
		rebakeTime += time.Since(start)
		peak = max(peak, peakRSSMiB())
		os.Remove(out)
		b.StopTimer()
		plain, synced := timeCp(b, cpOut, in)
		cpTime += plain
		cpSyncTime += synced
		os.Remove(cpOut)
		b.StartTimer()
	}
	b.ReportMetric(float64(rebakeTime)/float64(cpSyncTime), "x-cp+fsync")
	b.ReportMetric(float64(rebakeTime)/float64(cpTime), "x-cp")
	b.ReportMetric(peak, "peak-RSS-MiB")
}
