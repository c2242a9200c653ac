package main

import (
	"context"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ptekit/ptekit/internal/testprog"
)

// TestMain makes the test binary also the commands of the script tests:
// pteexport (run, as main calls it) and mkprog (package testprog), which
// writes the programs a script re-bakes. SCRIPT_SIGNAL_MID_WRITE=INT or
// TERM interrupts a write once it has begun.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"pteexport": func() {
			if sig := os.Getenv("SCRIPT_SIGNAL_MID_WRITE"); sig != "" {
				interrupt := testprog.SignalOnce(sig, 1)
				progressHook = func(ctx context.Context, written, total int64) {
					if written < total {
						interrupt(ctx)
					}
				}
			}
			os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
		"mkprog": func() { os.Exit(testprog.Mkprog(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScript runs testdata/script/*.txtar: pteexport's user-facing
// contract (building, re-baking, refusals, messages, JSON on failure).
func TestScript(t *testing.T) {
	testscript.Run(t, testprog.ScriptParams("testdata/script"))
}
