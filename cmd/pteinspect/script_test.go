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

// scriptCommands are the commands of the script tests: pteinspect itself
// (run, as main calls it) and mkprog, which writes the programs a script
// needs (package testprog), so that no script names a shared file.
var scriptCommands = map[string]func(){
	"pteinspect": func() {
		if sig := os.Getenv("SCRIPT_SIGNAL_MID_WRITE"); sig != "" {
			extractHook = signalOnce(sig)
		}
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	},
	"mkprog": func() { os.Exit(testprog.Mkprog(os.Args[1:], os.Stdout, os.Stderr)) },
}

// signalOnce returns a hook that, the second time it is called (so that
// some of the output is written), sends the process SIGINT or SIGTERM and
// waits for the command to notice: a deterministic Ctrl-C in the middle of
// a write, for the scripts (SCRIPT_SIGNAL_MID_WRITE=INT or TERM).
func signalOnce(name string) func(ctx context.Context) {
	sig := syscall.SIGINT
	if name == "TERM" {
		sig = syscall.SIGTERM
	}
	calls := 0
	return func(ctx context.Context) {
		if calls++; calls != 2 {
			return
		}
		syscall.Kill(os.Getpid(), sig)
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
		}
	}
}

// TestScript runs testdata/script/*.txtar: the user-facing contract of
// pteinspect (views, flags, messages, exit statuses, JSON on failure), in
// the style of cmd/go's script tests. `go test -run TestScript/NAME`
// runs one; -testwork keeps the work directories.
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
