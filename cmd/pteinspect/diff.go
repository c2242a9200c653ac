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

const diffUsage = `usage: pteinspect diff [--json] [--layout] A.pte|URL B.pte|URL
       pteinspect diff [--json] [--layout] A.ptd|URL B.ptd|URL

Compares two programs structurally: methods (matched by name), values,
instructions, operators, delegates and their compile specs (matched by key),
payload and segment sizes and hashes. Prints one line per difference,
"PATH: A -> B", e.g.

  methods[forward].delegates[0].compile_specs[weight_streaming_budget]: (absent) -> "4294967296"

Where things are in the file (file size, header offsets, segment offsets) is
left out unless --layout is given. Two .ptd data files compare by key:
layout, size and content (SHA-256); --layout adds the header, segment
table and each key's segment and offset. Exit status 0 when equal, 1 when
different, 2 on error, 3 when reading a URL failed in a way worth retrying,
130/143 when interrupted.

Flags:
`

// runDiff compares two programs. Every error exits 2 (or, reading a URL,
// 3 when worth retrying, 130/143 when interrupted), so that 1 always means
// "different".
func runDiff(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if j, _ := wantsJSON(args); j {
		stderr = &jsonStderr{Writer: stderr, stdout: stdout}
	}
	var asJSON, layout, quiet bool
	var in input.Flags
	fs := pflag.NewFlagSet("pteinspect diff", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&asJSON, "json", false, `print {"equal": BOOL, "differences": [{"path", "kind", "a", "b"}]}`)
	fs.BoolVar(&layout, "layout", false, "also compare file size, header offsets and segment offsets")
	in.AddFlags(fs)
	fs.BoolVarP(&quiet, "quiet", "q", false, "no progress line on a terminal")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			io.WriteString(stdout, diffUsage)
			io.WriteString(stdout, cli.FlagUsages(fs))
			return exitOK
		}
		return usageErr(stderr, "diff: %v", err)
	}
	if fs.NArg() != 2 {
		return usageErr(stderr, "diff: expected two files, got %d arguments", fs.NArg())
	}
	if fs.Arg(0) == "-" && fs.Arg(1) == "-" {
		return usageErr(stderr, "diff: only one side can be standard input")
	}
	opener, err := in.Opener(stdin, nil)
	if err != nil {
		return usageErr(stderr, "diff: %v", err)
	}
	if tuneHTTP != nil {
		tuneHTTP(&opener.HTTP)
	}
	ctx, stop := in.Context(context.Background(), fs.Args()...)
	defer stop()
	// fail reports an error reading one side.
	fail := func(name string, err error) int {
		if asJSON {
			writeFailure(stdout, err, false)
		}
		if code := failErr(stderr, name, err); code != exitFail {
			return code // retry or interrupt
		}
		return exitUsage
	}
	if ptdA, ptdB := isPTD(ctx, opener, fs.Arg(0)), isPTD(ctx, opener, fs.Arg(1)); ptdA || ptdB {
		if !ptdA || !ptdB {
			return usageErr(stderr, "diff: compare a .ptd data file with another .ptd file, a program with a program")
		}
		return runPTDDiff(ctx, opener, fs.Args(), asJSON, layout, stdout, stderr, fail)
	}
	// Both files are open together: with the same layout they are read
	// in one lockstep pass, each byte once.
	var files [2]*pte.File
	for i, name := range fs.Args() {
		f, err := opener.Program(ctx, name)
		if err != nil {
			return fail(name, err)
		}
		defer f.Close()
		files[i] = f
	}
	var docs [2]*inspect.Document
	meter := newMeter(stderr, quiet, "pteinspect: reading "+esc(input.Display(fs.Arg(0)))+" and "+esc(input.Display(fs.Arg(1))))
	docs[0], docs[1], err = inspect.BuildPair(files[0], files[1], &inspect.Options{Hash: true, Progress: meter.Report})
	meter.Done()
	if err != nil {
		// Say which side fails (on this error path only, each is built
		// again alone).
		name := fs.Arg(0) + ", " + fs.Arg(1)
		for i, f := range files {
			if _, e := inspect.Build(f, &inspect.Options{Hash: true}); e != nil {
				name, err = fs.Arg(i), e
				break
			}
		}
		return fail(name, err)
	}
	diffs, err := inspect.DiffDocuments(docs[0], docs[1], &inspect.DiffOptions{Layout: layout})
	if err != nil {
		return diffFail(stdout, stderr, err, asJSON)
	}
	return printDiffs(stdout, stderr, diffs, asJSON)
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
		if diffs == nil {
			diffs = []inspect.Difference{}
		}
		if err := inspect.Encode(stdout, struct {
			Equal       bool                 `json:"equal"`
			Differences []inspect.Difference `json:"differences"`
		}{len(diffs) == 0, diffs}); err != nil {
			fmt.Fprintf(stderr, "pteinspect: diff: %v\n", err)
			return exitUsage
		}
	} else {
		for _, d := range diffs {
			fmt.Fprintln(stdout, escText(d.String()))
		}
	}
	if len(diffs) > 0 {
		return exitFail
	}
	return exitOK
}
