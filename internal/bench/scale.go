package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// scaleView is one pteinspect view timed on the scale programs: its name
// in the table and its arguments for the program p, its re-bake with a
// budget rb ("" when refused) and a second export of other engines p2.
type scaleView struct {
	name string
	args func(p, rb, p2 string) []string
}

var scaleViews = []scaleView{
	{"open (`--compile-specs`)", func(p, _, _ string) []string { return []string{"--compile-specs", p} }},
	{"one-screen view", func(p, _, _ string) []string { return []string{p} }},
	{"`-l`", func(p, _, _ string) []string { return []string{"-l", p} }},
	{"`--json`", func(p, _, _ string) []string { return []string{"--json", p} }},
	{"`--json --hash`", func(p, _, _ string) []string { return []string{"--json", "--hash", p} }},
	{"`--verify`", func(p, _, _ string) []string { return []string{"--verify", p} }},
	{"`--plan`", func(p, _, _ string) []string { return []string{"--plan", p} }},
	{"`diff` (re-baked with a budget)", func(p, rb, _ string) []string {
		if rb == "" {
			return nil
		}
		return []string{"diff", p, rb}
	}},
	{"`diff` (engines rebuilt)", func(p, _, p2 string) []string { return []string{"diff", p, p2} }},
}

// scaleRows exports N engines of 1 KiB for each N and shape, paired with
// cat of the engine files, and times every view of the result (against
// the reference pteinspect when there is one). The export table is
// printed as it goes, the view table after it.
func scaleRows(c *config, dir string, t tools) error {
	fmt.Fprint(c.out, "Scale: N engines of 1 KiB, in the shapes "+strings.Join(c.shapes, ", ")+" ("+shapeHelp+"). \"per engine\" is the median wall time / N, \"CPU / engine\" the median user + system time / N; the baseline is `cat` of the N engine files into one + fsync. \"RSS / engine\" is the largest peak RSS / N, and beside it, when the run has N = 1, the largest peak less the largest of the one-engine export of the shape, / N. \"program region\" is the flatbuffer (the extended header's program_size), what a view decodes.")
	if t.refExport != "" {
		fmt.Fprintf(c.out, " Each export is also run with the reference pteexport, %s, in the same rounds (the order rotating: ours, `cat`, reference, then starting one further): \"ref CPU / engine\" and \"ref RSS / engine\" are its median CPU and largest peak over N, \"CPU ours / ref\" the median of the per-round ratios of CPU time, and \"output\" says whether the two programs are byte-identical.", c.refName)
	}
	fmt.Fprint(c.out, "\n\n")
	cols := []string{"N", "shape", "export", "per engine", "CPU / engine (above 1 engine)", "`cat` + fsync", "ratio", "export peak RSS", "RSS / engine (above 1 engine)", "program", "program region"}
	if t.refExport != "" {
		cols = append(cols, "ref CPU / engine", "ref RSS / engine", "CPU ours / ref", "output")
	}
	tableHead(c.out, cols)
	var views strings.Builder
	for _, n := range c.scale {
		if err := scaleN(c, dir, t, n, &views); err != nil {
			return err
		}
	}
	if !c.views {
		return nil
	}
	fmt.Fprintln(c.out)
	fmt.Fprint(c.out, "Views of the scale programs. `diff` (re-baked) compares a program with its re-bake with a 1 GiB budget per engine: every delegate differs in one compile spec; where the re-bake is refused (65536 engines one per method: its program would pass the FlatBuffers verifier's 1,000,000-table limit, which ExecuTorch applies) the row says n/a. `diff` (engines rebuilt) compares two exports of the same manifest whose engines differ in every byte (what a user meets after rebuilding the engines): every delegate differs in its payload's SHA-256. \"above floor / region\" is the median run's peak RSS less the median peak RSS of the same view on the one-engine program of the shape (the process's cost whatever the program: the Go runtime and the binary, about 8 MiB), over the program region, and in parentheses the largest run's less the largest on the one-engine program; it needs N = 1 in the run. \"peak RSS\" is the largest run's.")
	if t.ref != "" {
		fmt.Fprintf(c.out, " The reference pteinspect is %s, run in pairs with ours (order alternating); ratio is the median of ours / reference per pair.", c.refName)
	}
	fmt.Fprint(c.out, "\n\n")
	cols = []string{"N", "shape", "view", "median", "per engine", "peak RSS", "RSS / program region", "above floor / region"}
	if t.ref != "" {
		cols = append(cols, "reference median", "reference peak RSS", "ratio")
	}
	tableHead(c.out, cols)
	io.WriteString(c.out, views.String())
	return nil
}

// scaleN runs the scale rows of n engines: export rows go to c.out, view
// rows to views.
func scaleN(c *config, dir string, t tools, n int, views io.Writer) error {
	engDir, engDir2 := filepath.Join(dir, fmt.Sprintf("scale%d", n)), filepath.Join(dir, fmt.Sprintf("scale%d-rebuilt", n))
	defer os.RemoveAll(engDir)
	defer os.RemoveAll(engDir2)
	engines, err := writeEngines(engDir, n, 1024, 0)
	if err != nil {
		return err
	}
	var engines2 []string
	if c.views { // the rebuilt engines are for the views' diff only
		if engines2, err = writeEngines(engDir2, n, 1024, 1); err != nil {
			return err
		}
	}
	for _, shape := range c.shapes {
		if err := scaleShape(c, dir, t, n, shape, [2][]string{engines, engines2}, engDir, views); err != nil {
			return err
		}
	}
	return nil
}

// scaleShape exports the engines as shape, times the export against cat,
// builds the re-bake and the second export, and times every view.
func scaleShape(c *config, dir string, t tools, n int, shape string, engines [2][]string, engDir string, views io.Writer) error {
	m, m2 := filepath.Join(dir, "scale.json"), filepath.Join(dir, "scale-rebuilt.json")
	out, cpOut := filepath.Join(dir, "scale.pte"), filepath.Join(dir, "scale.cat")
	rebaked, out2 := filepath.Join(dir, "scale-rebaked.pte"), filepath.Join(dir, "scale-rebuilt.pte")
	refOut := filepath.Join(dir, "scale-ref.pte")
	defer func() {
		for _, p := range []string{m, m2, out, cpOut, rebaked, out2, refOut} {
			os.Remove(p)
		}
	}()
	if err := manifest(m, shape, engines[0]); err != nil {
		return err
	}
	if c.views {
		if err := manifest(m2, shape, engines[1]); err != nil {
			return err
		}
	}
	specs := []cmdSpec{
		{argv: []string{t.export, "--manifest", m, "-o", out}, output: out},
		{argv: []string{"sh", "-c", `find "$1" -name '*.engine' -print0 | xargs -0 cat > "$2" && sync "$2"`, "sh", engDir, cpOut}, output: cpOut},
	}
	if t.refExport != "" {
		specs = append(specs, cmdSpec{argv: []string{t.refExport, "--manifest", m, "-o", refOut}, output: refOut})
	}
	runs, err := rotate(c.pairs, specs...)
	if err != nil {
		// A program the writer refuses (e.g. past the verifier's table
		// limit) is a row of the table, not the end of the run.
		msg, _, _ := strings.Cut(err.Error(), "\n")
		fmt.Fprintf(c.out, "| %d | %s | failed: %s | | | | | | | | |%s\n", n, shape, strings.ReplaceAll(msg, "|", "/"), strings.Repeat(" |", 4*btoi(t.refExport != "")))
		fmt.Fprintf(os.Stderr, "bench: %d engines (%s): %v\n", n, shape, err)
		return nil
	}
	// Write the program again (the timed runs may have removed it) and
	// the rebuilt one, for the views, to measure it and view it.
	for _, argv := range [][]string{{t.export, "--manifest", m, "-o", out}, {t.export, "--manifest", m2, "-o", out2}} {
		if _, err := measure(cmdSpec{argv: argv, output: argv[len(argv)-1]}); err != nil {
			return err
		}
		if !c.views {
			break
		}
	}
	r := &pairResult{ours: runs[0], base: runs[1]}
	region := programRegion(out)
	ow := median(walls(r.ours))
	fmt.Fprintf(c.out, "| %d | %s | %s | %s | %s | %s | %.2fx | %s | %s | %s | %s |",
		n, shape, dur(ow), perEngine(ow, n), c.exportCPU(shape, n, median(cpus(r.ours))), dur(median(walls(r.base))), r.ratio(),
		size(peak(r.ours)), c.exportRSS(shape, n, peak(r.ours)), size(fileSize(out)), size(region))
	if t.refExport != "" {
		ref := runs[2]
		var ratios []float64
		for i := range ref {
			ratios = append(ratios, r.ours[i].cpu.Seconds()/ref[i].cpu.Seconds())
		}
		if _, err := measure(cmdSpec{argv: []string{t.refExport, "--manifest", m, "-o", refOut}, output: refOut}); err != nil {
			return err
		}
		fmt.Fprintf(c.out, " %s | %s | %.2fx | %s |", perEngine(median(cpus(ref)), n), size(peak(ref)/int64(n)), median(ratios), sameFiles(out, refOut))
	}
	fmt.Fprintln(c.out)
	if !c.views {
		return nil
	}
	// A re-bake the writer refuses (65536 delegates with a budget pass
	// the verifier's table limit) leaves its diff out.
	rb := rebaked
	if _, err := measure(cmdSpec{argv: []string{t.export, "--from", out, "-o", rebaked, "--weight-streaming-budget-per-engine", "1GiB"}}); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %d engines (%s): no re-baked diff: %v\n", n, shape, err)
		rb = ""
	}
	for _, v := range scaleViews {
		args := v.args(out, rb, out2)
		if args == nil {
			fmt.Fprintf(views, "| %d | %s | %s | n/a | | | | |%s\n", n, shape, v.name, strings.Repeat(" |", 3*btoi(t.ref != "")))
			continue
		}
		if err := viewRow(c, t, n, shape, v.name, args, region, views); err != nil {
			return err
		}
	}
	return nil
}

// viewRow times one view (paired with the reference when there is one)
// and writes its row.
func viewRow(c *config, t tools, n int, shape, name string, args []string, region int64, views io.Writer) error {
	ours := cmdSpec{argv: append([]string{t.inspect}, args...), okCodes: []int{1}}
	specs := []cmdSpec{ours}
	if t.ref != "" {
		specs = append(specs, cmdSpec{argv: append([]string{t.ref}, args...), okCodes: []int{1}})
	}
	runs, err := rotate(c.pairs, specs...)
	if err != nil {
		return err
	}
	r := &pairResult{ours: runs[0]}
	if t.ref != "" {
		r.base = runs[1]
	}
	w := median(walls(r.ours))
	rss := peak(r.ours)
	line := fmt.Sprintf("| %d | %s | %s | %s | %s | %s | %.1fx | %s |", n, shape, name, dur(w), perEngine(w, n), size(rss), float64(rss)/float64(max(region, 1)), c.aboveFloor(shape, name, n, r.ours, region))
	if t.ref != "" {
		line += fmt.Sprintf(" %s | %s | %.2fx |", dur(median(walls(r.base))), size(peak(r.base)), r.ratio())
	}
	// The view table is printed after the export table; a long run shows
	// each row on standard error as it is measured.
	fmt.Fprintln(os.Stderr, "bench:", line)
	fmt.Fprintln(views, line)
	return nil
}

// aboveFloor returns the peak RSS above the view's floor (its peak on the
// one-engine program of the shape, recorded here when n is 1) over the
// program region, as text: the median run less the floor's median run,
// and in parentheses the largest less the floor's largest; "n/a" when the
// run has no N = 1.
func (c *config) aboveFloor(shape, view string, n int, runs []sample, region int64) string {
	key := shape + "\x00" + view
	med, top := medianRSS(runs), peak(runs)
	if n == 1 {
		c.setFloor(key, med, top)
		return "(floor)"
	}
	floor, ok := c.floors[key]
	if !ok {
		return "n/a"
	}
	over := func(rss, floor int64) float64 { return float64(max(rss-floor, 0)) / float64(max(region, 1)) }
	return fmt.Sprintf("%.1fx (%.1fx)", over(med, floor[0]), over(top, floor[1]))
}

// exportCPU returns an export's median CPU time per engine, and in
// parentheses its CPU less the one-engine export's of the shape (recorded
// here when n is 1) per engine, when the run has N = 1.
func (c *config) exportCPU(shape string, n int, sec float64) string {
	key := shape + "\x00exportcpu"
	us := int64(sec * 1e6)
	if n == 1 {
		c.setFloor(key, us, us)
		return perEngine(sec, n) + " (floor)"
	}
	per := perEngine(sec, n)
	if floor, ok := c.floors[key]; ok {
		per += " (" + perEngine(float64(max(us-floor[0], 0))/1e6, n) + ")"
	}
	return per
}

// setFloor records the median and the largest of a one-engine run under key.
func (c *config) setFloor(key string, med, top int64) {
	if c.floors == nil {
		c.floors = map[string][2]int64{}
	}
	c.floors[key] = [2]int64{med, top}
}

// exportRSS returns an export's peak RSS per engine, and in parentheses
// its peak less the one-engine export's of the shape (recorded here when
// n is 1) per engine, when the run has N = 1.
func (c *config) exportRSS(shape string, n int, rss int64) string {
	key := shape + "\x00export"
	if n == 1 {
		c.setFloor(key, rss, rss)
		return size(rss) + " (floor)"
	}
	per := size(rss / int64(n))
	if floor, ok := c.floors[key]; ok {
		per += " (" + size(max(rss-floor[1], 0)/int64(n)) + ")"
	}
	return per
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// programRegion returns the program_size of the extended header of the
// program at path (the flatbuffer's size), or its file size when it has
// no extended header.
func programRegion(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return -1
	}
	defer f.Close()
	var h [24]byte
	if _, err := io.ReadFull(f, h[:]); err != nil || string(h[8:12]) != "eh00" {
		return fileSize(path)
	}
	return int64(binary.LittleEndian.Uint64(h[16:24]))
}

// scaleShapes are the program shapes of the scale rows (-shapes; "all"
// is every one): how N engines are laid out in methods.
var scaleShapes = []string{"methods", "chain", "fanout", "outputs", "shared"}

const shapeHelp = "methods (one method per engine), chain (one method calling every engine in turn), " +
	"fanout (one method whose engines all read its input; the last one's output is the method's), " +
	"outputs (one method whose engines all read its input and each produce a method output), " +
	"shared (N/2 methods calling two engines each, method i engines i and i+1 of N/2: every engine serves two methods; N delegates, N/2 distinct blobs)"

// sameFiles says whether the files at a and b hold the same bytes:
// "identical", "DIFFERENT", or why they could not be compared.
func sameFiles(a, b string) string {
	fa, err := os.Open(a)
	if err != nil {
		return "not compared: " + err.Error()
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return "not compared: " + err.Error()
	}
	defer fb.Close()
	ba, bb := make([]byte, 1<<20), make([]byte, 1<<20)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return "DIFFERENT"
		}
		if ea != nil || eb != nil {
			if (ea == io.EOF || ea == io.ErrUnexpectedEOF) && (eb == io.EOF || eb == io.ErrUnexpectedEOF) {
				return "identical"
			}
			return "not compared: " + errors.Join(ea, eb).Error()
		}
	}
}

// tableHead writes the head of a Markdown table of the columns cols.
func tableHead(w io.Writer, cols []string) {
	fmt.Fprintln(w, "| "+strings.Join(cols, " | ")+" |")
	fmt.Fprintln(w, strings.Repeat("|---", len(cols))+"|")
}
