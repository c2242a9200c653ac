package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/export"
)

// TestManifestShapes: the generated manifests are what pteexport reads,
// with the engines where the shape puts them.
func TestManifestShapes(t *testing.T) {
	dir := t.TempDir()
	engines, err := writeEngines(dir, 4, 1024, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(engines[0])
	b, _ := os.ReadFile(engines[1])
	if len(a) != 1024 || string(a) == string(b) {
		t.Fatalf("engines are not distinct 1 KiB files")
	}
	type want struct{ methods, calls, outputs int }
	wants := map[string]want{"chain": {1, 4, 1}, "methods": {4, 4, 4}, "fanout": {1, 4, 1}, "outputs": {1, 4, 4}, "shared": {2, 4, 2}}
	if len(wants) != len(scaleShapes) {
		t.Fatalf("scaleShapes %v, tested %d", scaleShapes, len(wants))
	}
	for shape, w := range wants {
		path := filepath.Join(dir, shape+".json")
		if err := manifest(path, shape, engines); err != nil {
			t.Fatal(err)
		}
		m, err := export.ReadManifest(path)
		if err != nil {
			t.Fatalf("%s: %v", shape, err)
		}
		calls, outputs, engines := 0, 0, map[string]int{}
		for _, me := range m.Program.Methods {
			calls += len(me.Calls)
			outputs += len(me.Outputs)
			for _, c := range me.Calls {
				engines[c.Engine.Path]++
			}
		}
		if got := (want{len(m.Program.Methods), calls, outputs}); got != w {
			t.Errorf("%s: %d methods, %d calls, %d outputs; want %+v", shape, got.methods, got.calls, got.outputs, w)
		}
		distinct := 4
		if shape == "shared" {
			distinct = 2 // m0 calls engines 0 and 1, m1 engines 1 and 0
		}
		if len(engines) != distinct {
			t.Errorf("%s: calls %d engine files, want %d: %v", shape, len(engines), distinct, engines)
		}
	}
	if err := manifest(filepath.Join(dir, "x.json"), "nosuch", engines); err == nil {
		t.Errorf("an unknown shape gave no error")
	}
}

// TestExportRSS: the one-engine export sets the shape's floor; larger
// exports report peak per engine, and above the floor per engine.
func TestExportRSS(t *testing.T) {
	c := &config{}
	if got := c.exportRSS("outputs", 1024, 8<<20); got != "8.0 KiB" {
		t.Errorf("before any floor: %q", got)
	}
	if got := c.exportRSS("outputs", 1, 8<<20); got != "8.0 MiB (floor)" {
		t.Errorf("floor row: %q", got)
	}
	if got := c.exportRSS("outputs", 1024, 12<<20); got != "12.0 KiB (4.0 KiB)" {
		t.Errorf("above floor: %q", got)
	}
	if got := c.exportRSS("chain", 1024, 12<<20); got != "12.0 KiB" {
		t.Errorf("another shape's floor was used: %q", got)
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

// TestWrapRemove checks that a measured command removes its old output
// itself, inside the timed process, and then runs with its own arguments.
func TestWrapRemove(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := wrapRemove(out, []string{"sh", "-c", `test ! -e "$1" && echo "$2"`, "sh", out, "ran"})
	got, err := exec.Command(argv[0], argv[1:]...).Output()
	if err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	if string(got) != "ran\n" {
		t.Fatalf("output %q, want the command's own", got)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("old output still there: %v", err)
	}
}
