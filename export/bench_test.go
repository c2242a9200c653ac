//go:build linux

package export

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
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

// BenchmarkExport64Engines exports 64 engine files (32 MiB each by
// default) into one program, each engine becoming a TensorRT blob segment
// (in-memory header + engine file range), and reports the ratio to cp of
// the engine files (x-cp, fsync policy in testkit.CopyBaseline) and the peak RSS.
// Targets: x-cp <= 1.3, peak RSS < 64 MiB whatever the engine size.
func BenchmarkExport64Engines(b *testing.B) {
	dir := b.TempDir()
	size := benchEngineMiB(b) << 20
	paths := writeEngines(b, dir, 64, size)
	p := manyEngines(paths)
	out := filepath.Join(dir, "out.pte")
	var c testkit.CopyBaseline
	b.SetBytes(64 * size)
	b.ResetTimer()
	for i := range b.N {
		c.Iter(b, i, func() error {
			_, err := WriteFile(out, p, nil)
			return err
		}, out, filepath.Join(dir, "cp"), paths...)
	}
	c.Report(b)
}

// BenchmarkRebake2GiB re-bakes a 2 GiB program (64 segments; smaller with
// PTEKIT_BENCH_MIB), setting a budget, and reports the ratio to cp of the
// same file (x-cp, fsync policy in testkit.CopyBaseline) and the peak RSS. Targets:
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
	var c testkit.CopyBaseline
	b.SetBytes(st.Size())
	b.ResetTimer()
	for i := range b.N {
		c.Iter(b, i, func() error {
			_, err := Rebake(in, out, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)})
			return err
		}, out, filepath.Join(dir, "cp.pte"), in)
	}
	c.Report(b)
}
