package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/pte"
)

// runCompileSpecs prints the compile spec table: method, delegate index,
// backend, key and decoded value.
func runCompileSpecs(f *pte.File, name string, w io.Writer, stderr io.Writer, o *options) int {
	rows := inspect.CompileSpecRows(f.Program, o.method, o.backend)
	if o.json {
		if err := inspect.Encode(w, inspect.CompileSpecTable{CompileSpecs: rows}); err != nil {
			return failErr(stderr, name, err)
		}
		return exitOK
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, "no compile specs")
		return exitOK
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METHOD\tDELEGATE\tBACKEND\tKEY\tVALUE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", esc(r.Method), r.DelegateIndex, esc(r.Backend), esc(r.Key), escText(r.Decoded))
	}
	tw.Flush()
	return exitOK
}

// noMethod is the error of a --method that names no method of f.
func noMethod(f *pte.File, name string) error {
	return fmt.Errorf("%w %q (methods: %s)", inspect.ErrNoMethod, name, joinOr(escAll(inspect.MethodNames(f))))
}

func joinOr(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ") // linear: 8192 methods must be fast
}
