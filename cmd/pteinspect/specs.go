package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/pte"
)

// runCompileSpecs prints the compile spec table: method, delegate index,
// backend, key and decoded value. It reads the delegates a method at a
// time (inspect.CompileSpecRows), twice for the table (once to measure
// its columns and count its rows, once to print), so that the program is
// never decoded whole.
func runCompileSpecs(f *pte.File, name string, w io.Writer, stderr io.Writer, o *options) int {
	specs := inspect.CompileSpecRows(f.Program, o.method, o.backend)
	if o.json {
		rows := nonNil(slices.Collect(specs)) // [], not null
		if err := inspect.Encode(w, inspect.CompileSpecTable{CompileSpecs: rows}); err != nil {
			return failErr(stderr, name, err)
		}
		return exitOK
	}
	rows := func(yield func([]string) bool) {
		if !yield([]string{"METHOD", "DELEGATE", "BACKEND", "KEY", "VALUE"}) {
			return
		}
		for r := range specs {
			if !yield([]string{esc(r.Method), strconv.Itoa(r.DelegateIndex), esc(r.Backend), esc(r.Key), escText(r.Decoded)}) {
				return
			}
		}
	}
	// The first pass counts the rows too: the header alone means none.
	widths, n := measureAligned("", rows)
	if n == 1 {
		fmt.Fprintln(w, "no compile specs")
		return exitOK
	}
	printMeasured(w, "", rows, widths)
	return exitOK
}

func joinOr(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ") // linear: 8192 methods must be fast
}
