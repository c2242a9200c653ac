package input

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/atomicfile"
	"github.com/ptekit/ptekit/internal/testprog"
)

// TestOpenPipeInterrupted is an attack: the commands catch SIGINT and
// SIGTERM (Flags.Context) to clean up, so an input read that does not
// watch the context cannot be interrupted at all. A named pipe with no
// writer blocked pteinspect in open(2) forever, deaf to ^C and to
// SIGTERM (only SIGKILL ended it), and a pipe or standard input whose
// writer stalls did the same in read(2). Opening and reading a pipe or
// standard input now end at once when the context is cancelled, with its
// cause (exit 130 for SIGINT).
func TestOpenPipeInterrupted(t *testing.T) {
	head := testprog.Programs(t)["segment"][:100]
	dir := t.TempDir()
	cases := map[string]func(t *testing.T) (string, *Opener){
		"fifo without writer": func(t *testing.T) (string, *Opener) {
			p := filepath.Join(dir, "nowriter")
			require.NoError(t, syscall.Mkfifo(p, 0o600))
			t.Cleanup(func() {
				// Let the open blocked in the background end.
				if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
			})
			return p, &Opener{}
		},
		"fifo whose writer stalls": func(t *testing.T) (string, *Opener) {
			p := filepath.Join(dir, "stall")
			require.NoError(t, syscall.Mkfifo(p, 0o600))
			done := make(chan struct{})
			t.Cleanup(func() { close(done) })
			go func() {
				w, err := os.OpenFile(p, os.O_WRONLY, 0)
				if err != nil {
					return
				}
				defer w.Close()
				w.Write(head) // a program's first bytes, then nothing
				<-done
			}()
			return p, &Opener{}
		},
		"stdin whose writer stalls": func(t *testing.T) (string, *Opener) {
			r, w := io.Pipe()
			t.Cleanup(func() { w.Close() })
			go w.Write(head)
			return "-", &Opener{Stdin: r}
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			p, o := setup(t)
			for _, open := range []func(ctx context.Context) error{
				func(ctx context.Context) error { _, err := o.Program(ctx, p); return err },
				func(ctx context.Context) error { _, err := o.Open(ctx, p); return err },
			} {
				ctx, cancel := context.WithCancelCause(context.Background())
				time.AfterFunc(50*time.Millisecond, func() { cancel(&atomicfile.InterruptError{Signal: os.Interrupt}) })
				errc := make(chan error, 1)
				go func() { errc <- open(ctx) }()
				select {
				case err := <-errc:
					require.Error(t, err)
					require.NotNil(t, atomicfile.Interrupted(nil, err), "%v", err)
					require.Contains(t, err.Error(), map[bool]string{true: "<stdin>", false: p}[p == "-"])
					code, ok := ExitCode(err)
					require.True(t, ok)
					require.Equal(t, 130, code)
				case <-time.After(5 * time.Second):
					t.Fatal("the open did not end when the context was cancelled")
				}
			}
		})
	}
}
