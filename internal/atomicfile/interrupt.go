package atomicfile

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// InterruptError is the cause of a context that NotifyInterrupt cancelled:
// the signal that asked the command to stop. It matches context.Canceled
// under errors.Is.
type InterruptError struct {
	Signal os.Signal
}

// Error names the signal, e.g. "interrupted (SIGINT)".
func (e *InterruptError) Error() string { return "interrupted (" + signalName(e.Signal) + ")" }

// Is reports whether target is context.Canceled: an interrupt cancels.
func (e *InterruptError) Is(target error) bool { return target == context.Canceled }

// ExitCode is the status a shell gives a command that a signal ended,
// 128 plus the signal number: 130 for SIGINT, 143 for SIGTERM.
func (e *InterruptError) ExitCode() int {
	if s, ok := e.Signal.(syscall.Signal); ok && s > 0 {
		return 128 + int(s)
	}
	return 130
}

func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// NotifyInterrupt returns a copy of parent that is cancelled, with an
// *InterruptError as its cause, on the first SIGINT or SIGTERM. After that
// signal the two get their default effect again, so a second Ctrl-C ends
// the process at once. Call stop when the command is done with the
// context; it restores the signals' default effect.
//
// It is signal.NotifyContext, whose cause is only a message, with the
// signal kept for the exit status.
func NotifyInterrupt(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			signal.Stop(ch)
			cancel(&InterruptError{Signal: s})
		case <-ctx.Done():
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(ch)
			cancel(nil)
		})
	}
}

// Interrupted returns the interrupt that err, or the cause of ctx when ctx
// is non-nil, carries; nil when there is none.
func Interrupted(ctx context.Context, err error) *InterruptError {
	ie, ok := errors.AsType[*InterruptError](err)
	if !ok && ctx != nil {
		ie, _ = errors.AsType[*InterruptError](context.Cause(ctx))
	}
	return ie
}
