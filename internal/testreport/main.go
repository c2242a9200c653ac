// Command testreport reads `go test -json` on standard input and prints what
// a person needs from it: one line per package, the whole output of every
// failing test and package, build errors, and at the end every skipped test
// with its reason, so that no test skips unseen (scripts/test pipes the suite
// through it). It exits 1 when anything failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string // build-output and build-fail
	FailedBuild string
}

// skip is a skipped test and the lines it logged (its reason).
type skip struct {
	pkg, test string
	reason    []string
}

// report accumulates the stream: output is buffered per test and per
// package and printed only when it matters.
type report struct {
	w      io.Writer
	tests  map[[2]string][]string // (package, test) -> output lines
	pkgs   map[string][]string    // package -> package-level output lines
	skips  []skip
	failed bool
}

func newReport(w io.Writer) *report {
	return &report{w: w, tests: map[[2]string][]string{}, pkgs: map[string][]string{}}
}

func (r *report) event(e event) {
	switch {
	case e.Action == "build-output":
		fmt.Fprint(r.w, e.Output)
	case e.Action == "build-fail":
		r.failed = true
	case e.Test != "":
		r.testEvent(e)
	default:
		r.packageEvent(e)
	}
}

func (r *report) testEvent(e event) {
	k := [2]string{e.Package, e.Test}
	switch e.Action {
	case "output":
		// -json implies -v; the framework's progress lines are noise in a report.
		if !strings.HasPrefix(e.Output, "=== ") {
			r.tests[k] = append(r.tests[k], e.Output)
		}
	case "fail":
		r.failed = true
		for _, l := range r.tests[k] {
			fmt.Fprint(r.w, l)
		}
		delete(r.tests, k)
	case "skip":
		r.skips = append(r.skips, skip{e.Package, e.Test, reason(r.tests[k])})
		delete(r.tests, k)
	case "pass":
		delete(r.tests, k)
	}
}

// reason keeps what a skipped test logged, without the framework's lines.
func reason(lines []string) []string {
	var out []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		out = append(out, t)
	}
	return out
}

func (r *report) packageEvent(e event) {
	switch e.Action {
	case "output":
		r.pkgs[e.Package] = append(r.pkgs[e.Package], e.Output)
	case "fail":
		r.failed = true
		// Output outside any test (a panic in TestMain, a timeout, the FAIL line).
		for _, l := range r.pkgs[e.Package] {
			fmt.Fprint(r.w, l)
		}
		delete(r.pkgs, e.Package)
	case "pass", "skip":
		for _, l := range r.pkgs[e.Package] {
			if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "?") {
				fmt.Fprint(r.w, l)
			}
		}
		delete(r.pkgs, e.Package)
	}
}

// finish prints the skipped tests; a subtest's skip and its parent's are
// both listed, since either may carry the reason.
func (r *report) finish() {
	if len(r.skips) == 0 {
		return
	}
	sort.SliceStable(r.skips, func(i, j int) bool { return r.skips[i].pkg < r.skips[j].pkg })
	fmt.Fprintf(r.w, "\nskipped tests (%d):\n", len(r.skips))
	for _, s := range r.skips {
		why := "(no reason given)"
		if len(s.reason) > 0 {
			why = strings.Join(s.reason, " / ")
		}
		fmt.Fprintf(r.w, "  %s %s: %s\n", s.pkg, s.test, why)
	}
}

func run(in io.Reader, out io.Writer) int {
	r := newReport(out)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<26)
	for sc.Scan() {
		var e event
		if line := sc.Bytes(); len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// go test prints some errors (e.g. a package that does not exist) as plain text.
			fmt.Fprintln(out, sc.Text())
			continue
		}
		r.event(e)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(out, "testreport: reading go test -json:", err)
		return 1
	}
	r.finish()
	if r.failed {
		return 1
	}
	return 0
}

func main() { os.Exit(run(os.Stdin, os.Stdout)) }
