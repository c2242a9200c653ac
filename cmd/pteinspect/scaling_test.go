package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/export"
	"github.com/ptekit/ptekit/internal/testprog"
)

// scalingProgram writes a TensorRT program of n engines, in methods of
// up to scalingChain engines called in a chain (a method per engine would
// pass the verifier's limit of a million tables well before 65536), every
// engine of a different size, so that no two blobs are compared for
// deduplication, and returns its path.
func scalingProgram(tb testing.TB, dir string, n int) string {
	tb.Helper()
	p := &export.Program{}
	for i := 0; i < n; i += scalingChain {
		m := &export.Method{
			Name:    "m" + strconv.Itoa(i/scalingChain),
			Inputs:  []*export.Tensor{{Name: "x", DType: export.Float32, Shape: []int64{2}}},
			Outputs: []*export.Tensor{{Name: "y"}},
		}
		k := min(scalingChain, n-i)
		prev := "x"
		for j := range k {
			// 16 to 271 bytes, unique: a group of one size holds n/256
			// engines, whatever n.
			e := strings.Repeat("e", 16+(i+j)%256) + strconv.Itoa(i+j)
			out := "t" + strconv.Itoa(j)
			if j == k-1 {
				out = "y"
			}
			m.Calls = append(m.Calls, &export.EngineCall{
				Engine:  export.EngineReader(strings.NewReader(e), int64(len(e))),
				Inputs:  []*export.Binding{{Name: "in", Tensor: prev}},
				Outputs: []*export.Binding{{Name: "out", Tensor: out, DType: export.Float32, Shape: []int64{2}}},
			})
			prev = out
		}
		p.Methods = append(p.Methods, m)
	}
	path := filepath.Join(dir, fmt.Sprintf("n%d.pte", n))
	budget := int64(1 << 20)
	_, err := export.WriteFile(path, p, &export.Options{WeightStreamingBudget: testprog.Budget(budget)})
	require.NoError(tb, err)
	return path
}

// scalingChain is the number of engines per method of scalingProgram.
const scalingChain = 8

// scalingViews are the pteinspect runs whose cost per engine must not grow
// with the engine count.
var scalingViews = []struct {
	name string
	args func(a, b string) []string
}{
	{"summary", func(a, _ string) []string { return []string{a} }},
	{"json", func(a, _ string) []string { return []string{"--json", a} }},
	{"json-hash", func(a, _ string) []string { return []string{"--json", "--hash", a} }},
	{"compile-specs", func(a, _ string) []string { return []string{"--compile-specs", a} }},
	{"verify", func(a, _ string) []string { return []string{"--verify", a} }},
	{"plan", func(a, _ string) []string { return []string{"--plan", a} }},
	{"diff", func(a, b string) []string { return []string{"diff", a, b} }},
}

// BenchmarkScaling runs each view on programs of 1 to 8192 engines (or
// PTEKIT_SCALING_COUNTS, e.g. "1,64,1024,8192,65536") and reports
// ns/engine.
func BenchmarkScaling(b *testing.B) {
	dir := b.TempDir()
	for _, n := range scalingCounts() {
		a := scalingProgram(b, dir, n)
		other := filepath.Join(dir, fmt.Sprintf("n%d-b.pte", n))
		require.NoError(b, os.Link(a, other))
		for _, v := range scalingViews {
			b.Run(fmt.Sprintf("%s/engines=%d", v.name, n), func(b *testing.B) {
				args := v.args(a, other)
				for b.Loop() {
					run(args, nil, io.Discard, io.Discard)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/engine")
			})
		}
	}
}

// scalingCounts are the engine counts: PTEKIT_SCALING_COUNTS (comma
// separated) or 1, 64, 1024 and 8192.
func scalingCounts() []int {
	env := os.Getenv("PTEKIT_SCALING_COUNTS")
	if env == "" {
		return []int{1, 64, 1024, 8192}
	}
	var counts []int
	for _, f := range strings.Split(env, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			counts = append(counts, n)
		}
	}
	return counts
}

// TestScalingReport prints the cost per engine of each view (one run each)
// when PTEKIT_SCALING is set; it is a tool for finding where the cost
// grows, not a test.
func TestScalingReport(t *testing.T) {
	if os.Getenv("PTEKIT_SCALING") == "" {
		t.Skip("set PTEKIT_SCALING=1")
	}
	dir := os.Getenv("PTEKIT_SCALING_DIR") // kept between runs when set
	if dir == "" {
		dir = t.TempDir()
	}
	only := os.Getenv("PTEKIT_SCALING_VIEWS")
	var out bytes.Buffer
	for _, n := range scalingCounts() {
		t0 := time.Now()
		a := filepath.Join(dir, fmt.Sprintf("n%d.pte", n))
		if _, err := os.Stat(a); err != nil {
			a = scalingProgram(t, dir, n)
		}
		gen := time.Since(t0)
		other := filepath.Join(dir, fmt.Sprintf("n%d-b.pte", n))
		if _, err := os.Stat(other); err != nil {
			require.NoError(t, os.Link(a, other))
		}
		st, _ := os.Stat(a)
		fmt.Fprintf(&out, "engines=%d size=%d export=%v (%.1f us/engine)\n", n, st.Size(), gen.Round(time.Millisecond), float64(gen.Microseconds())/float64(n))
		for _, v := range scalingViews {
			if only != "" && !strings.Contains(","+only+",", ","+v.name+",") {
				continue
			}
			t0 := time.Now()
			run(v.args(a, other), nil, io.Discard, io.Discard)
			d := time.Since(t0)
			fmt.Fprintf(&out, "  %-14s %10v %8.1f us/engine\n", v.name, d.Round(time.Microsecond), float64(d.Microseconds())/float64(n))
		}
	}
	t.Log("\n" + out.String())
}
