package main

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ptekit/ptekit/internal/testprog"
)

// TestMain makes the test binary also the commands of the script tests:
// pteexport (run, as main calls it) and mkprog (package testprog), which
// writes the programs a script re-bakes.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"pteexport": func() {
			if sig := os.Getenv("SCRIPT_SIGNAL_MID_WRITE"); sig != "" {
				progressHook = signalOnce(sig)
			}
			os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
		"mkprog": func() { os.Exit(testprog.Mkprog(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// signalOnce returns a progress hook that, on the first report of a write
// in progress, sends the process SIGINT or SIGTERM and waits for the
// command to notice: a deterministic Ctrl-C in the middle of a write, for
// the scripts (SCRIPT_SIGNAL_MID_WRITE=INT or TERM).
func signalOnce(name string) func(ctx context.Context, written, total int64) {
	sig := syscall.SIGINT
	if name == "TERM" {
		sig = syscall.SIGTERM
	}
	sent := false
	return func(ctx context.Context, written, total int64) {
		if sent || written >= total {
			return
		}
		sent = true
		syscall.Kill(os.Getpid(), sig)
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
		}
	}
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
