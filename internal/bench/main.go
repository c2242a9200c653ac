// Command bench measures ptekit's commands as whole processes against the
// tools that set their floor (cat, cp, sha256sum of the same bytes), in the
// same run, and prints the results as Markdown. scripts/bench builds the
// commands and runs it; docs/performance.md is one of its outputs.
//
// Each row runs our command and its baseline as pairs, alternating which
// goes first, each side removing its previous output inside the timed
// command with nothing synced off the clock (-off-clock: removed and
// synced before the clock starts), and reports the median
// of the per-pair ratios, each side's median wall time, its peak RSS (the
// ru_maxrss wait4 reports, children included; at least that of the small
// launcher process, reported with the results) and the bytes it read
// (/proc/PID/io rchar: bytes passed through read(2) and friends, and
// through copy_file_range too, so it counts what the kernel copied
// without user space seeing it). The scale rows export N engines of
// 1 KiB and time the views of the result.
//
// Inputs are built in a temporary directory (-tmp, default $TMPDIR) and
// removed at the end.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

type config struct {
	bin       string
	refBin    string
	refName   string
	tmp       string
	rows      map[string]bool
	engineMiB int64
	engines   int
	scale     []int
	shapes    []string
	pairs     int
	// views times the views of the scale programs; without it the scale
	// rows are the export rows alone.
	views bool
	out   io.Writer
	// floors holds the median and the largest peak RSS of each view (by
	// shape and view name), and the export's CPU time in microseconds, on
	// the one-engine program, when the scale rows include N = 1: what the
	// process costs whatever the program, to report what an engine adds.
	floors map[string][2]int64
}

const allRows = "export,rebake,rebake-in-place,diff,diff-same,json-hash,scale"

func main() {
	if len(os.Args) > 2 && os.Args[1] == "-launch" {
		launch(os.Args[2:])
		return
	}
	c := &config{out: os.Stdout}
	var rows, scale, shapes string
	var quick bool
	flag.StringVar(&c.bin, "bin", "", "directory holding the built pteexport and pteinspect")
	flag.StringVar(&c.refBin, "ref-bin", "", "directory holding a reference pteinspect (e.g. built from main) to time against ours in the scale rows")
	flag.StringVar(&c.refName, "ref-name", "", "how the report names the reference (default: -ref-bin)")
	flag.StringVar(&c.tmp, "tmp", os.TempDir(), "directory for the inputs (removed afterwards)")
	flag.StringVar(&rows, "rows", allRows, "rows to run, comma-separated: "+allRows)
	flag.Int64Var(&c.engineMiB, "engine-mib", 32, "engine size in MiB for the export, re-bake, diff and hash rows")
	flag.IntVar(&c.engines, "engines", 64, "number of engines for the export, re-bake, diff and hash rows")
	flag.StringVar(&scale, "scale", "1,1024,16384,65536", "engine counts of the scale rows (1 KiB engines)")
	flag.StringVar(&shapes, "shapes", "all", "scale row program shapes, comma-separated, or all: "+shapeHelp)
	flag.IntVar(&c.pairs, "pairs", 5, "runs of each side per row (the median is reported)")
	flag.BoolVar(&offClock, "off-clock", false, "remove each old output and sync(2) before the clock starts (the earlier tables' way); by default each command removes its old output inside the timed run and nothing is synced off the clock")
	flag.BoolVar(&c.views, "views", true, "time the views of the scale programs (-views=false: the scale rows' exports alone)")
	flag.BoolVar(&quick, "quick", false, "a run under a minute: 1 MiB engines, scale 1,64,1024, shapes methods,chain, 3 pairs (flags given after it still apply)")
	flag.Parse()
	if quick {
		// Defaults for a quick run, unless the flag was set explicitly.
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range map[string]string{"engine-mib": "1", "scale": "1,64,1024", "shapes": "methods,chain", "pairs": "3"} {
			if !set[name] {
				flag.Set(name, v)
			}
		}
	}
	c.rows = map[string]bool{}
	for _, r := range strings.Split(rows, ",") {
		if r = strings.TrimSpace(r); r != "" {
			if !strings.Contains(","+allRows+",", ","+r+",") {
				fatalf("unknown row %q (rows: %s)", r, allRows)
			}
			c.rows[r] = true
		}
	}
	for _, s := range strings.Split(scale, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fatalf("bad -scale entry %q", s)
		}
		c.scale = append(c.scale, n)
	}
	for _, s := range strings.Split(shapes, ",") {
		if s = strings.TrimSpace(s); s == "all" {
			c.shapes = append(c.shapes, scaleShapes...)
		} else if slices.Contains(scaleShapes, s) {
			c.shapes = append(c.shapes, s)
		} else {
			fatalf("unknown shape %q (shapes: %s)", s, shapeHelp)
		}
	}
	c.refName = cmp.Or(c.refName, c.refBin)
	if c.bin == "" || c.pairs < 1 || c.engineMiB < 1 || c.engines < 1 {
		fatalf("need -bin, and positive -pairs, -engine-mib, -engines")
	}
	for _, b := range []string{"pteexport", "pteinspect"} {
		if _, err := os.Stat(filepath.Join(c.bin, b)); err != nil {
			fatalf("%v", err)
		}
	}
	dir, err := os.MkdirTemp(c.tmp, "ptekit-bench-")
	if err != nil {
		fatalf("%v", err)
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	fmt.Fprintln(c.out, machine(c.tmp))
	if floor, err := measure(cmdSpec{argv: []string{"true"}}); err == nil {
		fmt.Fprintf(c.out, "Peak RSS floor (the launcher, measured with `true`): %s.\n\n", size(floor.maxRSS))
	}
	if err := runAll(c, dir); err != nil {
		os.RemoveAll(dir)
		fatalf("%v", err)
	}
	fmt.Fprintf(c.out, "\nWhole run: %s.\n", time.Since(start).Round(time.Second))
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(2)
}
