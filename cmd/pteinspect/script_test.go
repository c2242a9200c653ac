package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/internal/undorecord"
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
	"mkprog":    func() { os.Exit(testprog.Mkprog(os.Args[1:], os.Stdout, os.Stderr)) },
	"plantundo": func() { os.Exit(plantUndo(os.Args[1:])) },
}

// plantUndo is the plantundo command of the script tests: plantundo FILE
// plants beside FILE the undo record of issue 21's attack, which would put
// "EVILEVILEVILEVIL" over the file's first 16 bytes and whose "new" bytes
// are the file's own, so that only its provenance gives it away. Run as
// root, it gives the record to nobody (uid 65534), as if another user had
// planted it in a shared directory; run as another user, who cannot, it
// makes the record writable by everyone, which --recover refuses too.
func plantUndo(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: plantundo FILE")
		return 2
	}
	data, err := os.ReadFile(args[0])
	if err != nil || len(data) < 16 {
		fmt.Fprintf(os.Stderr, "plantundo: %v (%d bytes)\n", err, len(data))
		return 1
	}
	undo := undorecord.Path(args[0])
	rec := undorecord.Encode(int64(len(data)), 0, []byte("EVILEVILEVILEVIL"), data[:16])
	if err := os.WriteFile(undo, rec, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "plantundo: %v\n", err)
		return 1
	}
	if os.Geteuid() == 0 {
		err = os.Lchown(undo, nobody, nobody)
	} else {
		err = os.Chmod(undo, 0o666)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "plantundo: %v\n", err)
		return 1
	}
	return 0
}

// nobody is the uid and gid of the user "nobody".
const nobody = 65534

// TestScript runs testdata/script/*.txtar: the user-facing contract of
// pteinspect (views, flags, messages, exit statuses, JSON on failure), in
// the style of cmd/go's script tests. `go test -run TestScript/NAME`
// runs one; -testwork keeps the work directories.
func TestScript(t *testing.T) {
	testscript.Run(t, testprog.ScriptParams("testdata/script"))
}
