package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/export"
)

// TestManifestShapes: the generated manifests are what pteexport reads,
// with the engines where the shape puts them.
func TestManifestShapes(t *testing.T) {
	dir := t.TempDir()
	engines, err := writeEngines(dir, 3, 1024, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(engines[0])
	b, _ := os.ReadFile(engines[1])
	if len(a) != 1024 || string(a) == string(b) {
		t.Fatalf("engines are not distinct 1 KiB files")
	}
	for shape, methods := range map[string]int{"chain": 1, "methods": 3} {
		path := filepath.Join(dir, shape+".json")
		if err := manifest(path, shape, engines); err != nil {
			t.Fatal(err)
		}
		m, err := export.ReadManifest(path)
		if err != nil {
			t.Fatalf("%s: %v", shape, err)
		}
		calls := 0
		for _, me := range m.Program.Methods {
			calls += len(me.Calls)
		}
		if len(m.Program.Methods) != methods || calls != 3 {
			t.Errorf("%s: %d methods, %d calls", shape, len(m.Program.Methods), calls)
		}
	}
}

func TestMedianAndRatio(t *testing.T) {
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median = %v", m)
	}
	if m := median([]float64{4, 1, 2, 3}); m != 2.5 {
		t.Errorf("median = %v", m)
	}
	r := &pairResult{ours: []sample{{wall: 2}, {wall: 9}, {wall: 3}}, base: []sample{{wall: 1}, {wall: 3}, {wall: 3}}}
	if got := r.ratio(); got != 2 {
		t.Errorf("ratio = %v, want the median of 2, 3 and 1", got)
	}
}

// TestAboveFloor: the one-engine runs set the floor; a larger program's
// memory is reported over its region as median run less median floor,
// then largest less largest.
func TestAboveFloor(t *testing.T) {
	c := &config{}
	mib := func(ms ...int64) []sample {
		var ss []sample
		for _, m := range ms {
			ss = append(ss, sample{maxRSS: m << 20})
		}
		return ss
	}
	if got := c.aboveFloor("methods", "-l", 8192, mib(20), 1<<20); got != "n/a" {
		t.Errorf("before any floor: %q", got)
	}
	if got := c.aboveFloor("methods", "-l", 1, mib(8, 7, 9), 4096); got != "(floor)" {
		t.Errorf("floor row: %q", got)
	}
	if got := c.aboveFloor("methods", "-l", 8192, mib(14, 21, 16, 15, 13), 2<<20); got != "3.5x (6.0x)" {
		t.Errorf("above floor: %q, want (15-8)/2 and (21-9)/2", got)
	}
	if got := c.aboveFloor("chain", "-l", 8192, mib(20), 1<<20); got != "n/a" {
		t.Errorf("another shape's floor was used: %q", got)
	}
}
