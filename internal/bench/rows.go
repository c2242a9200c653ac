package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// writeEngines writes n engine files of size bytes of pseudo-random data
// (distinct per file, so that nothing deduplicates) into dir. Sets written
// with different seeds differ in every file.
func writeEngines(dir string, n int, size int64, seed uint64) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	buf := make([]byte, min(size, 1<<20))
	var paths []string
	for i := range n {
		rng := rand.New(rand.NewPCG(uint64(i), 0x5eed^seed))
		p := filepath.Join(dir, fmt.Sprintf("e%06d.engine", i))
		f, err := os.Create(p)
		if err != nil {
			return nil, err
		}
		w := bufio.NewWriterSize(f, len(buf))
		for left := size; left > 0; left -= int64(len(buf)) {
			for k := 0; k+8 <= len(buf); k += 8 {
				binary.LittleEndian.PutUint64(buf[k:], rng.Uint64())
			}
			w.Write(buf[:min(left, int64(len(buf)))])
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// manifest writes a pteexport manifest for the engines in one of
// scaleShapes.
func manifest(path, shape string, engines []string) error {
	type binding struct {
		Binding string  `json:"binding"`
		Tensor  string  `json:"tensor"`
		DType   string  `json:"dtype,omitempty"`
		Shape   []int64 `json:"shape,omitempty"`
	}
	type engine struct {
		Engine  string    `json:"engine"`
		Inputs  []binding `json:"inputs"`
		Outputs []binding `json:"outputs"`
	}
	type tensor struct {
		Name  string  `json:"name"`
		DType string  `json:"dtype"`
		Shape []int64 `json:"shape"`
	}
	type method struct {
		Name    string   `json:"name"`
		Inputs  []tensor `json:"inputs"`
		Outputs []string `json:"outputs"`
		Engines []engine `json:"engines"`
	}
	shp := []int64{1, 4096}
	call := func(e, in, out string) engine {
		return engine{Engine: e, Inputs: []binding{{Binding: "x", Tensor: in}},
			Outputs: []binding{{Binding: "y", Tensor: out, DType: "float16", Shape: shp}}}
	}
	var ms []method
	switch {
	case shape == "methods" || shape == "shared" && len(engines) == 1:
		for i, e := range engines {
			ms = append(ms, method{Name: fmt.Sprintf("m%d", i), Inputs: []tensor{{"x", "float16", shp}},
				Outputs: []string{"y"}, Engines: []engine{call(e, "x", "y")}})
		}
	case shape == "chain":
		m := method{Name: "forward", Inputs: []tensor{{"t0", "float16", shp}}}
		for i, e := range engines {
			m.Engines = append(m.Engines, call(e, fmt.Sprintf("t%d", i), fmt.Sprintf("t%d", i+1)))
		}
		m.Outputs = []string{fmt.Sprintf("t%d", len(engines))}
		ms = append(ms, m)
	case shape == "fanout":
		m := method{Name: "forward", Inputs: []tensor{{"x", "float16", shp}}}
		for i, e := range engines {
			m.Engines = append(m.Engines, call(e, "x", fmt.Sprintf("h%d", i)))
		}
		m.Outputs = []string{fmt.Sprintf("h%d", len(engines)-1)}
		ms = append(ms, m)
	case shape == "outputs":
		m := method{Name: "forward", Inputs: []tensor{{"x", "float16", shp}}}
		for i, e := range engines {
			m.Engines = append(m.Engines, call(e, "x", fmt.Sprintf("y%d", i)))
			m.Outputs = append(m.Outputs, fmt.Sprintf("y%d", i))
		}
		ms = append(ms, m)
	case shape == "shared":
		k := len(engines) / 2
		for i := range k {
			ms = append(ms, method{Name: fmt.Sprintf("m%d", i), Inputs: []tensor{{"x", "float16", shp}}, Outputs: []string{"y"},
				Engines: []engine{call(engines[i], "x", "h"), call(engines[(i+1)%k], "h", "y")}})
		}
	default:
		return fmt.Errorf("unknown shape %q", shape)
	}
	data, err := json.Marshal(map[string]any{"methods": ms})
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// runAll runs the rows c asks for: the large-engine rows, then the scale
// rows.
func runAll(c *config, dir string) error {
	tools := tools{export: filepath.Join(c.bin, "pteexport"), inspect: filepath.Join(c.bin, "pteinspect")}
	if c.refBin != "" {
		tools.ref = filepath.Join(c.refBin, "pteinspect")
		if _, err := os.Stat(filepath.Join(c.refBin, "pteexport")); err == nil {
			tools.refExport = filepath.Join(c.refBin, "pteexport")
		}
	}
	fmt.Fprintf(c.out, "Pairs per row: %d (median reported; order alternates). Engines: %d x %d MiB.\n\n", c.pairs, c.engines, c.engineMiB)
	if offClock {
		fmt.Fprintln(c.out, "Measured off the clock (`-off-clock`): before each run the old output was removed and sync(2) called, untimed. This is not what a user meets; the default measurement is.")
	} else {
		fmt.Fprintln(c.out, "Measured the outside way: each timed command removes its previous output itself (`rm -f OUT && ...`), and nothing is removed or synced off the clock between runs (only a row's setup, which makes a fresh input, is followed by sync(2)).")
	}
	fmt.Fprintln(c.out)
	if c.any("export", "rebake", "rebake-in-place", "diff", "diff-same", "json-hash") {
		if err := bigRows(c, dir, tools); err != nil {
			return err
		}
	}
	if c.rows["scale"] {
		return scaleRows(c, dir, tools)
	}
	return nil
}

// tools are the commands measured: ref, when set, is a second pteinspect
// (another revision) timed against ours in the scale rows.
type tools struct {
	export, inspect, ref string
	// refExport is the reference's pteexport, when there is one: the
	// scale rows' exports are timed against it too.
	refExport string
}

// any reports whether c asks for any of rows.
func (c *config) any(rows ...string) bool {
	return slices.ContainsFunc(rows, func(r string) bool { return c.rows[r] })
}

// bigInputs are the large-engine rows' files: the engines, the manifest,
// the exported program, its re-bake with a budget, and the outputs.
type bigInputs struct {
	engDir, manifest, in, rebaked, out, cpOut string
	engines                                   []string
}

// bigRows exports c.engines engines of c.engineMiB and times the export,
// re-bake, diff and hash rows against cat, cp and sha256sum.
func bigRows(c *config, dir string, t tools) error {
	tableHead(c.out, []string{"work", "ours (median)", "baseline", "baseline (median)", "ratio (median)", "ratio range", "peak RSS ours / base", "read ours / base"})
	in := &bigInputs{engDir: filepath.Join(dir, "engines"), manifest: filepath.Join(dir, "big.json"),
		in: filepath.Join(dir, "in.pte"), rebaked: filepath.Join(dir, "rebaked.pte"),
		out: filepath.Join(dir, "out.pte"), cpOut: filepath.Join(dir, "cp.out")}
	defer func() {
		os.RemoveAll(in.engDir)
		for _, p := range []string{in.in, in.rebaked, in.out, in.cpOut} {
			os.Remove(p)
		}
		fmt.Fprintln(c.out)
	}()
	var err error
	if in.engines, err = writeEngines(in.engDir, c.engines, c.engineMiB<<20, 0); err != nil {
		return err
	}
	if err := manifest(in.manifest, "chain", in.engines); err != nil {
		return err
	}
	if c.rows["export"] {
		if err := exportRow(c, t, in); err != nil {
			return err
		}
	}
	if !c.any("rebake", "rebake-in-place", "diff", "diff-same", "json-hash") {
		return nil
	}
	if _, err := measure(cmdSpec{argv: []string{t.export, "--manifest", in.manifest, "-o", in.in}}); err != nil {
		return err
	}
	if _, err := measure(cmdSpec{argv: []string{t.export, "--from", in.in, "-o", in.rebaked, "--weight-streaming-budget-per-engine", "1GiB"}}); err != nil {
		return err
	}
	for _, r := range []struct {
		name string
		run  func(*config, tools, *bigInputs, string) error
	}{{"rebake", rebakeRows}, {"rebake-in-place", inPlaceRow}, {"diff-same", diffSameRow}, {"diff", diffRow}, {"json-hash", hashRow}} {
		if c.rows[r.name] {
			if err := r.run(c, t, in, dir); err != nil {
				return err
			}
		}
	}
	return nil
}

func exportRow(c *config, t tools, in *bigInputs) error {
	return pairRow(c, fmt.Sprintf("export %d x %d MiB engines", c.engines, c.engineMiB), "`cat` + fsync",
		cmdSpec{argv: []string{t.export, "--manifest", in.manifest, "-o", in.out}, output: in.out},
		cmdSpec{argv: append([]string{"sh", "-c", `out=$1; shift; cat "$@" > "$out" && sync "$out"`, "sh", in.cpOut}, in.engines...), output: in.cpOut})
}

func rebakeRows(c *config, t tools, in *bigInputs, _ string) error {
	err := pairRow(c, fmt.Sprintf("re-bake %s program, budget added", size(fileSize(in.in))), "`cp` + fsync",
		cmdSpec{argv: []string{t.export, "--from", in.in, "-o", in.out, "--weight-streaming-budget-per-engine", "4GiB"}, output: in.out},
		cmdSpec{argv: []string{"sh", "-c", `cp "$1" "$2" && sync "$2"`, "sh", in.in, in.cpOut}, output: in.cpOut})
	if err != nil || !offClock {
		// Measured the outside way, each run above already deleted the
		// previous run's output on the clock.
		return err
	}
	// Replacing an existing output (a copy of the input, made and synced
	// off the clock): the old file's blocks are freed when the new one is
	// renamed over it, or truncated by cp.
	return pairRow(c, "the same over an existing copy of the input", "`cp` over it + fsync",
		cmdSpec{argv: []string{t.export, "--from", in.in, "-o", in.out, "--weight-streaming-budget-per-engine", "4GiB", "--force"},
			setup: [][]string{{"cp", in.in, in.out}}, output: in.out},
		cmdSpec{argv: []string{"sh", "-c", `cp "$1" "$2" && sync "$2"`, "sh", in.in, in.cpOut},
			setup: [][]string{{"cp", in.in, in.cpOut}}, output: in.cpOut})
}

// inPlaceRow: the program re-baked with a 1 GiB budget gets 4 GiB where it
// is, a value of the same length, so the head always fits. Each run edits
// a fresh copy (made off the clock).
func inPlaceRow(c *config, t tools, in *bigInputs, dir string) error {
	ip := filepath.Join(dir, "inplace.pte")
	return pairRow(c, fmt.Sprintf("re-bake %s program `--in-place`, budget changed (head only)", size(fileSize(in.rebaked))), "`cp` + fsync",
		cmdSpec{argv: []string{t.export, "--from", ip, "--in-place", "--weight-streaming-budget-per-engine", "4GiB"},
			setup: [][]string{{"cp", in.rebaked, ip}}, cleanup: []string{ip}},
		cmdSpec{argv: []string{"sh", "-c", `cp "$1" "$2" && sync "$2"`, "sh", in.rebaked, in.cpOut}, output: in.cpOut})
}

func diffSameRow(c *config, t tools, in *bigInputs, dir string) error {
	same := filepath.Join(dir, "same.pte")
	defer os.Remove(same)
	if _, err := measure(cmdSpec{argv: []string{"cp", in.in, same}}); err != nil {
		return err
	}
	return pairRow(c, fmt.Sprintf("`diff` of two identical %s programs (one lockstep pass)", size(fileSize(in.in))), "`sha256sum` of both",
		cmdSpec{argv: []string{t.inspect, "diff", in.in, same}},
		cmdSpec{argv: []string{"sha256sum", in.in, same}})
}

func diffRow(c *config, t tools, in *bigInputs, _ string) error {
	return pairRow(c, fmt.Sprintf("`diff` of two %s programs", size(fileSize(in.in))), "`sha256sum` of both",
		cmdSpec{argv: []string{t.inspect, "diff", in.in, in.rebaked}, okCodes: []int{1}},
		cmdSpec{argv: []string{"sha256sum", in.in, in.rebaked}})
}

func hashRow(c *config, t tools, in *bigInputs, _ string) error {
	return pairRow(c, fmt.Sprintf("`--json --hash` of a %s program", size(fileSize(in.in))), "`sha256sum`",
		cmdSpec{argv: []string{t.inspect, "--json", "--hash", in.in}, okCodes: []int{1}},
		cmdSpec{argv: []string{"sha256sum", in.in}})
}

// pairRow runs ours and base in pairs, alternating which goes first
// (rotate), and writes the row of work against baseline.
func pairRow(c *config, work, baseline string, ours, base cmdSpec) error {
	runs, err := rotate(c.pairs, ours, base)
	if err != nil {
		return err
	}
	r := &pairResult{ours: runs[0], base: runs[1]}
	fmt.Fprintf(c.out, "| %s | %s | %s | %s | **%.2fx** | %s | %s / %s | %s / %s |\n", work,
		dur(median(walls(r.ours))), baseline, dur(median(walls(r.base))), r.ratio(), r.spread(),
		size(peak(r.ours)), size(peak(r.base)), size(reads(r.ours)), size(reads(r.base)))
	return nil
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return st.Size()
}

func dur(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", sec)
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1f ms", sec*1e3)
	default:
		return fmt.Sprintf("%.0f us", sec*1e6)
	}
}

func perEngine(sec float64, n int) string {
	return fmt.Sprintf("%.1f us", sec*1e6/float64(n))
}

func size(n int64) string {
	switch {
	case n < 0:
		return "?"
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d B", n)
	}
}
