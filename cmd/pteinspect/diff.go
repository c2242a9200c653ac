package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/cli"
	"github.com/ptekit/ptekit/internal/input"
	"github.com/ptekit/ptekit/pte"
)

const diffUsage = `usage: pteinspect diff [--paths | --json [--summary]] [--layout] A.pte|URL B.pte|URL
       pteinspect diff [--json] [--layout] A.ptd|URL B.ptd|URL

Compares two programs and prints what changed: the verdict (bitwise equal
or not, sizes, and each compile spec when only compile specs differ), then
per method (matched by index, as ExecuTorch's diff_pte.py does) the
operators and delegates found on one side only, non_const_buffer_sizes,
value and instruction counts, each differing tensor (type, shape, name,
where it is used, which metadata changed, and for constant data how many
elements differ, by how much, with samples), values and tensors on one side
only; then methods on one side only, named data by key, and TensorRT
delegates (engine, budget, compile specs); a change alike in several
delegates is one line.

--paths prints instead one line per structural difference, "PATH: A -> B",
methods matched by name, compile specs by key, e.g.

  methods[forward].delegates[0].compile_specs[weight_streaming_budget]: (absent) -> "4294967296"

--json prints those differences as JSON; --summary adds the change summary
to it (docs/json.md). Where things are in the file (file size, header
offsets, segment offsets) is left out unless --layout is given (listed
after the summary). Two .ptd data files compare by key, printing the
--paths lines: layout, size and content (SHA-256); --layout adds the
header, segment table and each key's segment and offset.

Exit status 0 when equal, 1 when different, 2 on error, 3 when reading a
URL failed in a way worth retrying, 130/143 when interrupted.

Flags:
`

// runDiff compares two programs. Every error exits 2 (or, reading a URL,
// 3 when worth retrying, 130/143 when interrupted), so that 1 always means
// "different".
func runDiff(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if cli.BoolFlag(args, "json") {
		stderr = &jsonStderr{Writer: stderr, stdout: stdout}
	}
	d := &diffRun{stdout: stdout, stderr: stderr}
	fs := d.flags()
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			io.WriteString(stdout, diffUsage)
			io.WriteString(stdout, cli.FlagUsages(fs))
			return exitOK
		}
		return diffUsageErr(stderr, "%v", err)
	}
	if fs.NArg() != 2 {
		return diffUsageErr(stderr, "expected two files, got %d arguments", fs.NArg())
	}
	if d.paths && d.asJSON {
		return diffUsageErr(stderr, "--paths and --json are two outputs; give one")
	}
	if d.summary && !d.asJSON {
		return diffUsageErr(stderr, "--summary goes with --json (the summary is the default human view)")
	}
	if fs.Arg(0) == "-" && fs.Arg(1) == "-" {
		return diffUsageErr(stderr, "only one side can be standard input")
	}
	opener, err := d.in.Opener(stdin, nil)
	if err != nil {
		return diffUsageErr(stderr, "%v", err)
	}
	if tuneHTTP != nil {
		tuneHTTP(&opener.HTTP)
	}
	// The documents hold what the diff compares; the decoded plans need
	// not be held beside them.
	opener.ProgramOptions.LazyPlans = true
	ctx, stop := d.in.Context(context.Background(), fs.Args()...)
	defer stop()
	d.names = [2]string{fs.Arg(0), fs.Arg(1)}
	if ptdA, ptdB := isPTD(ctx, opener, fs.Arg(0)), isPTD(ctx, opener, fs.Arg(1)); ptdA || ptdB {
		if !ptdA || !ptdB {
			return diffUsageErr(stderr, "compare a .ptd data file with another .ptd file, a program with a program")
		}
		if d.summary {
			return diffUsageErr(stderr, "--summary compares programs, not .ptd data files")
		}
		return runPTDDiff(ctx, opener, fs.Args(), d.asJSON, d.layout, stdout, stderr, d.fail)
	}
	return d.programs(ctx, opener)
}

// diffRun is one pteinspect diff: its flags, outputs and the two names.
type diffRun struct {
	asJSON, layout, quiet bool
	// paths prints the path lines; summary adds the summary to --json.
	paths, summary bool
	in             input.Flags
	stdout, stderr io.Writer
	names          [2]string
}

// flags returns the flag set of diff, bound to d.
func (d *diffRun) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("pteinspect diff", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&d.asJSON, "json", false, `print {"equal": BOOL, "differences": [{"path", "kind", "a", "b"}]}`)
	fs.BoolVar(&d.layout, "layout", false, "also compare file size, header offsets and segment offsets")
	fs.BoolVar(&d.paths, "paths", false, `print one "PATH: A -> B" line per difference instead of the change summary`)
	fs.BoolVar(&d.summary, "summary", false, `with --json, add the change summary as "summary"`)
	d.in.AddFlags(fs)
	fs.BoolVarP(&d.quiet, "quiet", "q", false, "no progress line on a terminal")
	return fs
}

// fail reports an error reading one side.
func (d *diffRun) fail(name string, err error) int {
	if d.asJSON {
		writeFailure(d.stdout, err, false)
	}
	if code := failErr(d.stderr, name, err); code != exitFail {
		return code // retry or interrupt
	}
	return exitUsage
}

// programs compares two programs. Both files are open together: with the
// same layout they are read in one lockstep pass, each byte once.
func (d *diffRun) programs(ctx context.Context, opener *input.Opener) int {
	var files [2]*pte.File
	for i, name := range d.names {
		// A viewer never applies an undo record; it reports it.
		warnUndo(d.stderr, input.UndoNotice(name), d.quiet)
		f, err := opener.Program(ctx, name)
		if err != nil {
			return d.fail(name, err)
		}
		defer f.Close()
		files[i] = f
	}
	var docs [2]*inspect.Document
	meter := newMeter(d.stderr, d.quiet, "pteinspect: reading "+esc(input.Display(d.names[0]))+" and "+esc(input.Display(d.names[1])))
	// One pass over each file gives the digests and compares the constant
	// data the summary reports.
	var consts *inspect.ConstantComparison
	var err error
	docs[0], docs[1], consts, err = inspect.BuildDiffPair(files[0], files[1], &inspect.Options{Hash: true, Progress: meter.Report})
	meter.Done()
	if err != nil {
		// Say which side fails (on this error path only, each is built
		// again alone).
		name := d.names[0] + ", " + d.names[1]
		retry := files[:]
		if oe, ok := errors.AsType[*inspect.OverlapError](err); ok {
			// Named already, and building it alone would hash the
			// overlapping bytes once per buffer.
			retry, name = nil, d.names[oe.Side]
		}
		for i, f := range retry {
			if _, e := inspect.Build(f, &inspect.Options{Hash: true}); e != nil {
				name, err = d.names[i], e
				break
			}
		}
		return d.fail(name, err)
	}
	diffs, err := inspect.DiffDocuments(docs[0], docs[1], &inspect.DiffOptions{Layout: d.layout})
	if err != nil {
		return diffFail(d.stdout, d.stderr, err, d.asJSON)
	}
	if d.paths || (d.asJSON && !d.summary) {
		return printDiffs(d.stdout, d.stderr, diffs, d.asJSON)
	}
	// The summary's verdict leaves the layout out: with --layout its
	// differences are listed after the summary.
	plain := diffs
	if d.layout {
		if plain, err = inspect.DiffDocuments(docs[0], docs[1], nil); err != nil {
			return diffFail(d.stdout, d.stderr, err, d.asJSON)
		}
	}
	sum, err := inspect.SummarizeDiff(files[0], files[1], &inspect.DiffSummaryOptions{Docs: docs, Differences: plain, Constants: consts})
	if err != nil {
		return diffFail(d.stdout, d.stderr, err, d.asJSON)
	}
	if d.asJSON {
		return writeDiffJSON(d.stdout, d.stderr, diffs, sum)
	}
	writeDiffSummary(d.stdout, d.names, sum, plain)
	writeLayout(d.stdout, diffs, plain)
	return diffStatus(diffs)
}

// writeLayout lists, after the summary, the differences --layout adds:
// those of diffs not in plain.
func writeLayout(w io.Writer, diffs, plain []inspect.Difference) {
	if len(diffs) == len(plain) {
		return
	}
	seen := make(map[string]bool, len(plain))
	for _, d := range plain {
		seen[d.Path] = true
	}
	fmt.Fprintln(w, "Layout:")
	for _, d := range diffs {
		if !seen[d.Path] {
			fmt.Fprintln(w, "  "+escText(d.String()))
		}
	}
}

// diffFail reports a failure to compare (exit status 2, so that 1 always
// means "different"): one line, and with --json the failure object. A
// failure to read one side goes through runDiff's fail.
func diffFail(stdout, stderr io.Writer, err error, asJSON bool) int {
	if asJSON {
		writeFailure(stdout, err, false)
	}
	fmt.Fprintf(stderr, "pteinspect: diff: %s\n", escText(cli.Message(err)))
	return exitUsage
}

// printDiffs prints differences as lines or JSON and returns the exit
// status: 1 when there are any.
func printDiffs(stdout, stderr io.Writer, diffs []inspect.Difference, asJSON bool) int {
	if asJSON {
		return writeDiffJSON(stdout, stderr, diffs, nil)
	}
	for _, d := range diffs {
		fmt.Fprintln(stdout, escText(d.String()))
	}
	return diffStatus(diffs)
}

// writeDiffJSON prints the --json document of a diff, with the change
// summary when sum is not nil, and returns the exit status.
func writeDiffJSON(stdout, stderr io.Writer, diffs []inspect.Difference, sum *inspect.DiffSummary) int {
	if err := inspect.Encode(stdout, struct {
		Equal       bool                 `json:"equal"`
		Differences []inspect.Difference `json:"differences"`
		Summary     *inspect.DiffSummary `json:"summary,omitempty"`
	}{len(diffs) == 0, nonNil(diffs), sum}); err != nil {
		fmt.Fprintf(stderr, "pteinspect: diff: %v\n", err)
		return exitUsage
	}
	return diffStatus(diffs)
}

// diffStatus is the exit status of a diff that ran: 1 when the sides differ.
func diffStatus(diffs []inspect.Difference) int {
	if len(diffs) > 0 {
		return exitFail
	}
	return exitOK
}
