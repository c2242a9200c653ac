package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ptekit/ptekit/internal/testprog"
)

// TestMain makes the test binary also the commands of the script tests:
// pteexport (run, as main calls it) and mkprog (package testprog), which
// writes the programs a script re-bakes.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"pteexport": func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
		"mkprog":    func() { os.Exit(testprog.Mkprog(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScript runs testdata/script/*.txtar: pteexport's user-facing
// contract (building, re-baking, refusals, messages, JSON on failure).
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			e.Setenv("HOME", e.WorkDir)
			return nil
		},
	})
}
