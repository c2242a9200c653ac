package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/pte"
)

// runVerify runs every check (inspect.Check): the reader's (verifier,
// container invariants, what each method needs to load) and, for TensorRT
// delegates, their compile specs and the blob readings of both upstream
// readers. It exits 1 when any finding is an error.
func runVerify(name string, stdin io.Reader, stdout, stderr io.Writer, o *options) int {
	fail := func(err error) int {
		if o.json {
			writeFailure(stdout, err, false)
		}
		return failErr(stderr, name, err)
	}
	var probs []inspect.Problem
	f, err := openInput(name, stdin)
	if err != nil {
		var fe *pte.FormatError
		if !errors.As(err, &fe) {
			return fail(err)
		}
		probs = append(probs, inspect.FormatProblem(pte.SeverityError, "", fe))
	} else {
		defer f.Close()
		if o.method != "" && !hasMethod(f.Program, o.method) {
			return fail(noMethod(f.Program, o.method))
		}
		all, err := inspect.Check(f)
		if err != nil {
			return fail(err)
		}
		for _, p := range all {
			if o.method == "" || p.Method == "" || p.Method == o.method {
				probs = append(probs, p)
			}
		}
	}
	errs := countErrors(probs)
	if o.json {
		err = inspect.Encode(stdout, struct {
			File     string            `json:"file"`
			OK       bool              `json:"ok"`
			Errors   int               `json:"errors"`
			Warnings int               `json:"warnings"`
			Findings []inspect.Problem `json:"findings"`
		}{name, errs == 0, errs, len(probs) - errs, nonNil(probs)})
		if err != nil {
			return failErr(stderr, name, err)
		}
	} else {
		for _, p := range probs {
			fmt.Fprintln(stdout, escText(p.String()))
		}
		fmt.Fprintf(stdout, "%s: %d error(s), %d warning(s)\n", esc(name), errs, len(probs)-errs)
	}
	if errs > 0 {
		return exitFail
	}
	return exitOK
}

func countErrors(probs []inspect.Problem) int {
	n := 0
	for _, p := range probs {
		if p.IsError() {
			n++
		}
	}
	return n
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
