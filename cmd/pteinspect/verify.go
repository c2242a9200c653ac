package main

import (
	"context"
	"errors"
	"io"

	"github.com/ptekit/ptekit/check"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/input"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// runVerify runs every check (inspect.Check): the reader's (verifier,
// container invariants, what each method needs to load) and, for TensorRT
// delegates, their compile specs and the blob readings of both upstream
// readers. It exits 1 when any finding is an error.
//
// With data files (srcs) it also resolves the program against them: a file
// that does not load, files that do not merge and each method that fails
// to load for want of external data are errors (inspect.CheckData).
func runVerify(ctx context.Context, opener *input.Opener, name string, stdout, stderr io.Writer, o *options, srcs []ptd.Source) int {
	fail := func(err error) int {
		warnUndo(stderr, o.undo, o.quiet)
		return failure(stdout, stderr, name, o, err)
	}
	probs := o.undoFindings()
	var file *inspect.File // null in the JSON when the file does not open
	f, err := opener.Program(ctx, name)
	if err != nil {
		fe, ok := errors.AsType[*pte.FormatError](err)
		if _, limit := errors.AsType[*pte.ProgramLimitError](err); !ok || limit {
			return fail(err) // not a finding: this reader's limit
		}
		probs = append(probs, check.FormatProblem(pte.SeverityError, "", fe))
	} else {
		defer f.Close()
		file = &inspect.File{Size: f.Size, RootOffset: f.RootOffset, FileIdentifier: f.Identifier}
		if err := checkFilters(f, o); err != nil {
			return fail(err) // --method: --verify takes no --delegate
		}
		var all []inspect.Problem
		if len(srcs) > 0 {
			all, err = inspect.CheckData(f, ptd.Resolve(f.Program, srcs))
		} else {
			all, err = inspect.Check(f)
		}
		if err != nil {
			return fail(err)
		}
		for _, p := range all {
			if o.method == "" || p.Method == "" || p.Method == o.method {
				probs = append(probs, p)
			}
		}
	}
	return printVerify(stdout, stderr, name, file, probs, o)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
