package testkit

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

func TestPeakRSS(t *testing.T) {
	var r PeakRSS
	r.Reset()
	hold := make([]byte, 32<<20)
	for i := range hold {
		hold[i] = byte(i)
	}
	r.Sample()
	if r.Max < 32 {
		t.Errorf("peak RSS %.1f MiB after touching 32 MiB", r.Max)
	}
	before := r.Max
	r.Sample()
	if r.Max < before {
		t.Errorf("Max went down from %.1f to %.1f", before, r.Max)
	}
	_ = hold[len(hold)-1]
}

// oneIteration makes testing.Benchmark call its function with b.N = 1
// for the rest of the test, instead of growing b.N to fill a second.
func oneIteration(t *testing.T) {
	old := flag.Lookup("test.benchtime").Value.String()
	if err := flag.Set("test.benchtime", "1x"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { flag.Set("test.benchtime", old) })
}

func TestTimeCp(t *testing.T) {
	oneIteration(t)
	dir := t.TempDir()
	var srcs []string
	for _, name := range []string{"a", "b"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(name+name), 0o644); err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, p)
	}
	res := testing.Benchmark(func(b *testing.B) {
		out := b.TempDir()
		one := filepath.Join(out, "one")
		if TimeCp(b, one, srcs[0]) <= 0 {
			b.Error("no time taken")
		}
		if got, err := os.ReadFile(one); err != nil || string(got) != "aa" {
			b.Errorf("one copy: %q, %v", got, err)
		}
		several := filepath.Join(out, "several")
		TimeCp(b, several, srcs...)
		for _, name := range []string{"a", "b"} {
			if got, err := os.ReadFile(filepath.Join(several, name)); err != nil || string(got) != name+name {
				b.Errorf("copy of %s: %q, %v", name, got, err)
			}
		}
	})
	if res.N == 0 {
		t.Fatal("the copies failed")
	}
}

func TestCopyBaseline(t *testing.T) {
	oneIteration(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	ours := filepath.Join(dir, "ours")
	cpDst := filepath.Join(dir, "cp")
	iters := 0
	res := testing.Benchmark(func(b *testing.B) {
		var c CopyBaseline
		for i := range b.N {
			c.Iter(b, i, func() error {
				iters++
				return os.WriteFile(ours, []byte("x"), 0o644)
			}, ours, cpDst, src)
		}
		c.Report(b)
	})
	if iters == 0 || res.Extra["x-cp"] <= 0 || res.Extra["cp-s/op"] <= 0 || res.Extra["peak-RSS-MiB"] <= 0 {
		t.Fatalf("%d iterations, metrics %v", iters, res.Extra)
	}
	for _, p := range []string{ours, cpDst} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left behind (%v)", p, err)
		}
	}
}
