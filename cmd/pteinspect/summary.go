package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ptekit/ptekit/delegate"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/cli"
	"github.com/ptekit/ptekit/internal/input"
	"github.com/ptekit/ptekit/pte"
)

// The default view fits a terminal: the methods take at most summaryLines
// lines, and at most summaryNames method names and summaryProblems
// problems are listed; --long shows everything.
const (
	summaryLines    = 20
	summaryNames    = 8
	summaryGroups   = 8 // per method
	summaryProblems = 5
)

// printSummary prints the default view: s, the inspect.Summary of the
// program, one line per method and per group of alike delegates, and the
// problems and external data of doc (as inspect.Summarize returns it).
func printSummary(w io.Writer, name string, f *pte.File, s *inspect.Summary, doc *inspect.Document) {
	if s.MethodCount == 1 && f.Program.NumPlans() > 1 {
		// Narrowed by --method: the index in the whole program.
		if i := f.PlanIndex(s.Methods[0].Name); i >= 0 {
			s.Methods[0].Index = i
		}
	}
	t := newTable(w, "")
	t.row("file", esc(input.Display(name)))
	t.row("size", compilespec.FormatSizeApprox(s.Size))
	if doc.File.SHA256.Hex != "" {
		t.row("sha256", doc.File.SHA256.Hex)
	}
	names := each(s.Methods[:min(len(s.Methods), summaryNames)], func(m *inspect.MethodSummary) string { return esc(m.Name) })
	methods := fmt.Sprintf("%d: %s", s.MethodCount, strings.Join(names, ", "))
	if s.MethodCount == 0 {
		methods = "none"
	} else if more := s.MethodCount - len(names); more > 0 {
		methods += fmt.Sprintf(" and %d more", more)
	}
	t.row("methods", methods)
	t.row("delegates", backendsText(s.Backends))
	if s.Largest != nil {
		t.row("payloads", fmt.Sprintf("%s in all, largest %s (%s delegate %d)", compilespec.FormatSizeApprox(s.Payloads),
			compilespec.FormatSizeApprox(*s.Largest.Size), esc(s.Largest.Plan), s.Largest.DelegateIndex))
	}
	t.row("problems", problemsText(s))
	t.flush()

	if len(s.Methods) > 0 {
		fmt.Fprintln(w)
	}
	lines := 0
	for i, m := range s.Methods {
		lines += 1 + min(len(m.Groups), summaryGroups+1)
		if lines > summaryLines && i > 0 {
			fmt.Fprintf(w, "... and %d more methods (--method NAME or --long shows them)\n", s.MethodCount-i)
			break
		}
		fmt.Fprintf(w, "%s (#%d): %s\n", esc(m.Name), m.Index, methodText(m))
		for j, g := range m.Groups {
			if j == summaryGroups {
				fmt.Fprintf(w, "  ... and %d more kinds of delegate (--long shows them)\n", len(m.Groups)-j)
				break
			}
			fmt.Fprintf(w, "  %s\n", groupText(g))
		}
	}
	printExternalDataSummary(w, f, doc.ExternalData)
	if s.Errors+s.Warnings > 0 {
		fmt.Fprintln(w)
		for i, p := range doc.Problems {
			if i == summaryProblems {
				fmt.Fprintf(w, "... and %d more problems (pteinspect --verify lists them all)\n", len(doc.Problems)-i)
				break
			}
			fmt.Fprintln(w, escText(p.String()))
		}
	}
	if s.Delegates() > 0 || len(f.Program.Segments) > 0 {
		fmt.Fprintf(w, "\n(--long shows segments, bindings, compile specs and every delegate)\n")
	}
}

// printExternalDataSummary is --long's external data section in a few
// lines: the keys needed (none given), or each data file, the methods that
// fail and the keys missing, lists cut to summaryNames.
func printExternalDataSummary(w io.Writer, f *pte.File, ext *inspect.ExternalData) {
	if ext == nil {
		printNeededKeys(w, f, shortList)
		return
	}
	fmt.Fprintf(w, "\nexternal data (%d file(s))\n", len(ext.Files))
	for i, f := range ext.Files {
		if i == summaryNames {
			fmt.Fprintf(w, "  ... and %d more files\n", len(ext.Files)-i)
			break
		}
		fmt.Fprintf(w, "  [%d] %s: %s\n", i, esc(f.Name), escText(dataFileState(f)))
	}
	if len(ext.Files) > 0 && !ext.Merge.OK {
		fmt.Fprintf(w, "  merge FAILS: %s\n", escText(statusText(ext.Merge)))
	}
	failing := 0
	for _, m := range ext.Methods {
		if !m.OK {
			failing++
		}
	}
	if failing > 0 {
		fmt.Fprintf(w, "  %s of %d fail to load for want of external data\n", cli.Count(failing, "method"), len(ext.Methods))
	}
	if len(ext.Missing) > 0 {
		fmt.Fprintf(w, "  missing keys: %s\n", escText(shortList(ext.Missing)))
	}
}

// shortList is quoteAll of at most summaryNames strings, saying how many
// more there are.
func shortList(s []string) string {
	if len(s) <= summaryNames {
		return quoteAll(s)
	}
	return fmt.Sprintf("%s and %d more", quoteAll(s[:summaryNames]), len(s)-summaryNames)
}

func backendsText(bs []inspect.BackendCount) string {
	if len(bs) == 0 {
		return "none"
	}
	return strings.Join(each(bs, func(b inspect.BackendCount) string { return strconv.Itoa(b.Count) + " " + esc(b.ID) }), ", ")
}

func problemsText(s *inspect.Summary) string {
	if s.Errors+s.Warnings == 0 {
		return "none"
	}
	return cli.Count(s.Errors, "error") + ", " + cli.Count(s.Warnings, "warning")
}

func methodText(m *inspect.MethodSummary) string {
	parts := []string{cli.Count(m.Inputs, "input"), cli.Count(m.Outputs, "output"), cli.Count(m.Instructions, "instruction")}
	if len(m.Returns) > 0 {
		parts = append(parts, "returns "+strings.Join(each(m.Returns, func(c inspect.Constant) string { return c.Type + " " + escText(c.Value) }), ", "))
	}
	switch {
	case m.Budgeted > 0 && m.Automatic > 0:
		parts = append(parts, fmt.Sprintf("engine budgets add up to %s (%d automatic)", compilespec.FormatSize(m.Budget), m.Automatic))
	case m.Budgeted > 1:
		parts = append(parts, "engine budgets add up to "+compilespec.FormatSize(m.Budget))
	}
	return strings.Join(parts, ", ")
}

func groupText(g *inspect.DelegateGroup) string {
	var b strings.Builder
	plural, each := "s", " each"
	if g.Count == 1 {
		plural, each = "", ""
		fmt.Fprintf(&b, "%s delegate #%d", esc(g.ID), g.First)
	} else {
		fmt.Fprintf(&b, "%d %s delegates", g.Count, esc(g.ID))
	}
	switch {
	case g.Budget != "":
		b.WriteString(", budget " + escText(g.Budget) + each)
	case delegate.IsTensorRT(g.ID):
		b.WriteString(", automatic budget")
	}
	if g.Device != "" {
		b.WriteString(", " + esc(g.Device))
	}
	if g.Unreachable == g.Count {
		b.WriteString(", payload" + plural + " not reachable")
		return b.String()
	}
	b.WriteString(", payload" + plural + " " + compilespec.FormatSizeApprox(g.Payloads))
	if g.Unreachable > 0 {
		fmt.Fprintf(&b, " (%d not reachable)", g.Unreachable)
	}
	return b.String()
}
