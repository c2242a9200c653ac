package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// writeEngines writes n engine files of size bytes of pseudo-random data
// (distinct per file, so that nothing deduplicates) into dir.
func writeEngines(dir string, n int, size int64) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	buf := make([]byte, min(size, 1<<20))
	var paths []string
	for i := range n {
		rng := rand.New(rand.NewPCG(uint64(i), 0x5eed))
		p := filepath.Join(dir, fmt.Sprintf("e%06d.engine", i))
		f, err := os.Create(p)
		if err != nil {
			return nil, err
		}
		w := bufio.NewWriterSize(f, len(buf))
		for left := size; left > 0; left -= int64(len(buf)) {
			for k := 0; k+8 <= len(buf); k += 8 {
				v := rng.Uint64()
				for j := range 8 {
					buf[k+j] = byte(v >> (8 * j))
				}
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

// manifest writes a pteexport manifest for the engines: shape "chain" is
// one method calling them in turn, "methods" one method per engine.
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
	switch shape {
	case "chain":
		m := method{Name: "forward", Inputs: []tensor{{"t0", "float16", shp}}}
		for i, e := range engines {
			m.Engines = append(m.Engines, call(e, fmt.Sprintf("t%d", i), fmt.Sprintf("t%d", i+1)))
		}
		m.Outputs = []string{fmt.Sprintf("t%d", len(engines))}
		ms = append(ms, m)
	case "methods":
		for i, e := range engines {
			ms = append(ms, method{Name: fmt.Sprintf("m%d", i), Inputs: []tensor{{"x", "float16", shp}},
				Outputs: []string{"y"}, Engines: []engine{call(e, "x", "y")}})
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

func runAll(c *config, dir string) error {
	pteexport, pteinspect := filepath.Join(c.bin, "pteexport"), filepath.Join(c.bin, "pteinspect")
	fmt.Fprintf(c.out, "Pairs per row: %d (median reported; order alternates). Engines: %d x %d MiB.\n\n", c.pairs, c.engines, c.engineMiB)

	big := c.rows["export"] || c.rows["rebake"] || c.rows["rebake-in-place"] || c.rows["diff"] || c.rows["diff-same"] || c.rows["json-hash"]
	if big {
		fmt.Fprintln(c.out, "| work | ours (median) | baseline | baseline (median) | ratio (median) | ratio range | peak RSS ours / base | read ours / base |")
		fmt.Fprintln(c.out, "|---|---|---|---|---|---|---|---|")
		engDir := filepath.Join(dir, "engines")
		engines, err := writeEngines(engDir, c.engines, c.engineMiB<<20)
		if err != nil {
			return err
		}
		m := filepath.Join(dir, "big.json")
		if err := manifest(m, "chain", engines); err != nil {
			return err
		}
		in, rebaked := filepath.Join(dir, "in.pte"), filepath.Join(dir, "rebaked.pte")
		out, cpOut := filepath.Join(dir, "out.pte"), filepath.Join(dir, "cp.out")
		if c.rows["export"] {
			r, err := pairs(c.pairs,
				cmdSpec{argv: []string{pteexport, "--manifest", m, "-o", out}, cleanup: []string{out}},
				cmdSpec{argv: append([]string{"sh", "-c", `out=$1; shift; cat "$@" > "$out" && sync "$out"`, "sh", cpOut}, engines...), cleanup: []string{cpOut}})
			if err != nil {
				return err
			}
			row(c, fmt.Sprintf("export %d x %d MiB engines", c.engines, c.engineMiB), "`cat` + fsync", r)
		}
		if c.rows["rebake"] || c.rows["rebake-in-place"] || c.rows["diff"] || c.rows["diff-same"] || c.rows["json-hash"] {
			if _, err := measure(cmdSpec{argv: []string{pteexport, "--manifest", m, "-o", in}}); err != nil {
				return err
			}
			if _, err := measure(cmdSpec{argv: []string{pteexport, "--from", in, "-o", rebaked, "--weight-streaming-budget-per-engine", "1GiB"}}); err != nil {
				return err
			}
		}
		if c.rows["rebake"] {
			r, err := pairs(c.pairs,
				cmdSpec{argv: []string{pteexport, "--from", in, "-o", out, "--weight-streaming-budget-per-engine", "4GiB"}, cleanup: []string{out}},
				cmdSpec{argv: []string{"sh", "-c", `cp "$1" "$2" && sync "$2"`, "sh", in, cpOut}, cleanup: []string{cpOut}})
			if err != nil {
				return err
			}
			row(c, fmt.Sprintf("re-bake %s program, budget added", size(fileSize(in))), "`cp` + fsync", r)
			// Replacing an existing output (a copy of the input, made
			// and synced off the clock): the old file's blocks are freed
			// when the new one is renamed over it, or truncated by cp.
			r, err = pairs(c.pairs,
				cmdSpec{argv: []string{pteexport, "--from", in, "-o", out, "--weight-streaming-budget-per-engine", "4GiB", "--force"},
					setup: [][]string{{"cp", in, out}}, cleanup: []string{out}},
				cmdSpec{argv: []string{"sh", "-c", `cp "$1" "$2" && sync "$2"`, "sh", in, cpOut},
					setup: [][]string{{"cp", in, cpOut}}, cleanup: []string{cpOut}})
			if err != nil {
				return err
			}
			row(c, "the same over an existing copy of the input", "`cp` over it + fsync", r)
		}
		if c.rows["rebake-in-place"] {
			// The program re-baked with a 1 GiB budget gets 4 GiB where it
			// is: a value of the same length, so the head always fits.
			// Each run edits a fresh copy (made off the clock).
			ip := filepath.Join(dir, "inplace.pte")
			r, err := pairs(c.pairs,
				cmdSpec{argv: []string{pteexport, "--from", ip, "--in-place", "--weight-streaming-budget-per-engine", "4GiB"},
					setup: [][]string{{"cp", rebaked, ip}}, cleanup: []string{ip}},
				cmdSpec{argv: []string{"sh", "-c", `cp "$1" "$2" && sync "$2"`, "sh", rebaked, cpOut}, cleanup: []string{cpOut}})
			if err != nil {
				return err
			}
			row(c, fmt.Sprintf("re-bake %s program `--in-place`, budget changed (head only)", size(fileSize(rebaked))), "`cp` + fsync", r)
		}
		if c.rows["diff-same"] {
			same := filepath.Join(dir, "same.pte")
			if _, err := measure(cmdSpec{argv: []string{"cp", in, same}}); err != nil {
				return err
			}
			r, err := pairs(c.pairs,
				cmdSpec{argv: []string{pteinspect, "diff", in, same}},
				cmdSpec{argv: []string{"sha256sum", in, same}})
			if err != nil {
				return err
			}
			row(c, fmt.Sprintf("`diff` of two identical %s programs (one lockstep pass)", size(fileSize(in))), "`sha256sum` of both", r)
			os.Remove(same)
		}
		if c.rows["diff"] {
			r, err := pairs(c.pairs,
				cmdSpec{argv: []string{pteinspect, "diff", in, rebaked}, okCodes: []int{1}},
				cmdSpec{argv: []string{"sha256sum", in, rebaked}})
			if err != nil {
				return err
			}
			row(c, fmt.Sprintf("`diff` of two %s programs", size(fileSize(in))), "`sha256sum` of both", r)
		}
		if c.rows["json-hash"] {
			r, err := pairs(c.pairs,
				cmdSpec{argv: []string{pteinspect, "--json", "--hash", in}, okCodes: []int{1}},
				cmdSpec{argv: []string{"sha256sum", in}})
			if err != nil {
				return err
			}
			row(c, fmt.Sprintf("`--json --hash` of a %s program", size(fileSize(in))), "`sha256sum`", r)
		}
		os.RemoveAll(engDir)
		for _, p := range []string{in, rebaked, out, cpOut} {
			os.Remove(p)
		}
		fmt.Fprintln(c.out)
	}
	if c.rows["scale"] {
		return scaleRows(c, dir, pteexport, pteinspect)
	}
	return nil
}

// scaleRows exports N engines of 1 KiB for each N and shape, paired with
// cat of the engine files, and times open (--compile-specs), the human
// view, --json and diff against its re-bake of the result.
func scaleRows(c *config, dir, pteexport, pteinspect string) error {
	fmt.Fprintln(c.out, "Scale: N engines of 1 KiB. Per-engine cost is the median wall time / N; the baseline is `cat` of the N engine files into one + fsync.")
	fmt.Fprintln(c.out)
	fmt.Fprintln(c.out, "| N | shape | export | per engine | `cat` + fsync | ratio | export peak RSS | program | open (`--compile-specs`) | human view | per engine | `--json` | per engine | peak RSS (json) | `diff` (re-baked) | per engine |")
	fmt.Fprintln(c.out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, n := range c.scale {
		engDir := filepath.Join(dir, fmt.Sprintf("scale%d", n))
		engines, err := writeEngines(engDir, n, 1024)
		if err != nil {
			return err
		}
		for _, shape := range c.shapes {
			m := filepath.Join(dir, "scale.json")
			if err := manifest(m, shape, engines); err != nil {
				return err
			}
			out, cpOut := filepath.Join(dir, "scale.pte"), filepath.Join(dir, "scale.cat")
			r, err := pairs(c.pairs,
				cmdSpec{argv: []string{pteexport, "--manifest", m, "-o", out}, cleanup: []string{out}},
				cmdSpec{argv: []string{"sh", "-c", `find "$1" -name '*.engine' -print0 | xargs -0 cat > "$2" && sync "$2"`, "sh", engDir, cpOut}, cleanup: []string{cpOut}})
			if err != nil {
				return err
			}
			if _, err := measure(cmdSpec{argv: []string{pteexport, "--manifest", m, "-o", out}}); err != nil {
				return err
			}
			views := map[string][]sample{}
			for _, v := range [][]string{{"open", "--compile-specs"}, {"human"}, {"json", "--json"}} {
				ss, err := repeat(c.pairs, cmdSpec{argv: append(append([]string{pteinspect}, v[1:]...), out), okCodes: []int{1}})
				if err != nil {
					return err
				}
				views[v[0]] = ss
			}
			// diff against the program re-baked with a budget: every
			// delegate differs in one compile spec.
			// A re-bake the writer refuses (65536 delegates with a budget
			// pass the verifier's table limit) leaves the cell empty.
			rebaked := filepath.Join(dir, "scale-rebaked.pte")
			diffCell, diffPer := "n/a", "re-bake refused"
			if _, err := measure(cmdSpec{argv: []string{pteexport, "--from", out, "-o", rebaked, "--weight-streaming-budget-per-engine", "1GiB"}}); err != nil {
				fmt.Fprintf(os.Stderr, "bench: %d engines (%s): no diff: %v\n", n, shape, err)
			} else {
				ds, err := repeat(c.pairs, cmdSpec{argv: []string{pteinspect, "diff", out, rebaked}, okCodes: []int{1}})
				if err != nil {
					return err
				}
				diffCell, diffPer = dur(median(walls(ds))), perEngine(median(walls(ds)), n)
			}
			os.Remove(rebaked)
			ow := median(walls(r.ours))
			fmt.Fprintf(c.out, "| %d | %s | %s | %s | %s | %.2fx | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				n, shape, dur(ow), perEngine(ow, n), dur(median(walls(r.base))), r.ratio(), size(peak(r.ours)), size(fileSize(out)),
				dur(median(walls(views["open"]))),
				dur(median(walls(views["human"]))), perEngine(median(walls(views["human"])), n),
				dur(median(walls(views["json"]))), perEngine(median(walls(views["json"])), n), size(peak(views["json"])),
				diffCell, diffPer)
			os.Remove(out)
			os.Remove(m)
		}
		os.RemoveAll(engDir)
	}
	return nil
}

func row(c *config, work, baseline string, r *pairResult) {
	fmt.Fprintf(c.out, "| %s | %s | %s | %s | **%.2fx** | %s | %s / %s | %s / %s |\n", work,
		dur(median(walls(r.ours))), baseline, dur(median(walls(r.base))), r.ratio(), r.spread(),
		size(peak(r.ours)), size(peak(r.base)), size(reads(r.ours)), size(reads(r.base)))
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
