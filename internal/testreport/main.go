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
	Action  string
	Package string
	Test    string
	Output  string
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
	out    map[[2]string][]string // (package, test) -> output lines; test "" for the package's own
	skips  []skip
	failed bool
}

func (r *report) event(e event) {
	k := [2]string{e.Package, e.Test}
	switch e.Action {
	case "build-output":
		fmt.Fprint(r.w, e.Output)
	case "build-fail":
		r.failed = true
	case "output":
		// -json implies -v; the framework's progress lines are noise in a report.
		if e.Test == "" || !strings.HasPrefix(e.Output, "=== ") {
			r.out[k] = append(r.out[k], e.Output)
		}
	case "fail":
		// A test's output, or a package's outside any test (a panic in
		// TestMain, a timeout, the FAIL line).
		r.failed = true
		for _, l := range r.out[k] {
			fmt.Fprint(r.w, l)
		}
		delete(r.out, k)
	case "pass", "skip":
		switch {
		case e.Test != "" && e.Action == "skip":
			r.skips = append(r.skips, skip{e.Package, e.Test, reason(r.out[k])})
		case e.Test == "":
			for _, l := range r.out[k] {
				if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "?") {
					fmt.Fprint(r.w, l)
				}
			}
		}
		delete(r.out, k)
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
	r := &report{w: out, out: map[[2]string][]string{}}
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
