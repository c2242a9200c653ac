package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ptekit/ptekit/internal/testprog"
)

// scriptCommands are the commands of the script tests: pteinspect itself
// (run, as main calls it) and mkprog, which writes the programs a script
// needs (package testprog), so that no script names a shared file.
// SCRIPT_SIGNAL_MID_WRITE=INT or TERM interrupts an --extract once it has
// begun writing.
var scriptCommands = map[string]func(){
	"pteinspect": func() {
		if sig := os.Getenv("SCRIPT_SIGNAL_MID_WRITE"); sig != "" {
			extractHook = testprog.SignalOnce(sig, 2) // the second read: some bytes are written
		}
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	},
	"mkprog": func() { os.Exit(testprog.Mkprog(os.Args[1:], os.Stdout, os.Stderr)) },
}

// TestScript runs testdata/script/*.txtar: the user-facing contract of
// pteinspect (views, flags, messages, exit statuses, JSON on failure), in
// the style of cmd/go's script tests. `go test -run TestScript/NAME`
// runs one; -testwork keeps the work directories.
func TestScript(t *testing.T) {
	testscript.Run(t, testprog.ScriptParams("testdata/script"))
}
