package testprog

import (
	"context"
	"os"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// ScriptParams are the commands' script test parameters: the scripts in
// dir, commands run with exec only, HOME in the work directory.
func ScriptParams(dir string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			e.Setenv("HOME", e.WorkDir)
			return nil
		},
	}
}

// SignalOnce returns a hook that, on its nth call, sends the process
// SIGINT (name "INT") or SIGTERM ("TERM") and waits until ctx is cancelled
// by the command's signal handling (at most 10 s): a deterministic Ctrl-C
// in the middle of a write, for the scripts' SCRIPT_SIGNAL_MID_WRITE.
func SignalOnce(name string, nth int) func(ctx context.Context) {
	sig := syscall.SIGINT
	if name == "TERM" {
		sig = syscall.SIGTERM
	}
	calls := 0
	return func(ctx context.Context) {
		if calls++; calls != nth {
			return
		}
		syscall.Kill(os.Getpid(), sig)
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
		}
	}
}
