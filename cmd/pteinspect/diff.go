package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/ptekit/ptekit/pte/ptejson"
)

const diffUsage = `usage: pteinspect diff [--json] A.pte B.pte

Compares two programs structurally: methods, values, instructions, delegates,
compile specs, segment sizes and hashes. Prints one line per difference,
"PATH: A -> B". Exit status 0 when equal, 1 when different, 2 on error.

Flags:
`

// runDiff compares two programs. Every error exits 2, so that 1 always
// means "different".
func runDiff(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var asJSON bool
	fs := pflag.NewFlagSet("pteinspect diff", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&asJSON, "json", false, `print {"equal": BOOL, "differences": [{"path", "a", "b"}]}`)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			io.WriteString(stdout, diffUsage)
			io.WriteString(stdout, fs.FlagUsages())
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
	var docs [2]*ptejson.Document
	for i, name := range fs.Args() {
		f, err := openInput(name, stdin)
		if err != nil {
			failErr(stderr, name, err)
			return exitUsage
		}
		docs[i], err = ptejson.Build(f, &ptejson.Options{Hash: true})
		f.Close()
		if err != nil {
			failErr(stderr, name, err)
			return exitUsage
		}
		// The whole-file digest changes with any other difference; leave it
		// out so that the lines say what changed.
		docs[i].File.SHA256 = ptejson.Digest{}
	}
	diffs, err := ptejson.Diff(docs[0], docs[1])
	if err != nil {
		fmt.Fprintf(stderr, "pteinspect: diff: %v\n", err)
		return exitUsage
	}
	if asJSON {
		if diffs == nil {
			diffs = []ptejson.Difference{}
		}
		if err := ptejson.Encode(stdout, struct {
			Equal       bool                 `json:"equal"`
			Differences []ptejson.Difference `json:"differences"`
		}{len(diffs) == 0, diffs}); err != nil {
			fmt.Fprintf(stderr, "pteinspect: diff: %v\n", err)
			return exitUsage
		}
	} else {
		for _, d := range diffs {
			fmt.Fprintln(stdout, d)
		}
	}
	if len(diffs) > 0 {
		return exitFail
	}
	return exitOK
}
