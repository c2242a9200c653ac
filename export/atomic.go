package export

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/ptekit/ptekit/internal/atomicfile"
)

// InputError is the error for an output that is one of the files it is
// made from (an engine, a blob, Options.Inputs): the output is refused
// rather than written over them.
type InputError = atomicfile.InputError

// progressInterval is how often writeOutput reports progress.
const progressInterval = 200 * time.Millisecond

// writeOutput lets write fill f, reporting progress (when non-nil: with 0
// bytes at the start, periodically, and once at the end), and commits f.
// On any failure, and when ctx is done first, f is discarded (the caller
// defers f.Abort) and the error wraps context.Cause(ctx). It returns the
// size written.
func writeOutput(ctx context.Context, f *atomicfile.File, total int64, progress func(written, total int64), write func(*os.File) (int64, error)) (int64, error) {
	if progress != nil {
		progress(0, total)
	}
	stop := startProgress(f.OSFile(), total, progress)
	size, err := write(f.OSFile())
	stop()
	if ctx.Err() != nil {
		// The context closed the file under the writer: say why.
		return 0, context.Cause(ctx)
	}
	if err != nil {
		return 0, err
	}
	if err := f.Commit(); err != nil {
		return 0, err
	}
	if progress != nil {
		progress(size, max(total, size))
	}
	return size, nil
}

// startProgress polls the size of f while it is written and reports it.
// The returned function stops the polling and waits for it to end.
func startProgress(f *os.File, total int64, progress func(written, total int64)) func() {
	if progress == nil {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if st, err := f.Stat(); err == nil {
					progress(st.Size(), max(total, st.Size()))
				}
			}
		}
	}()
	return func() {
		close(quit)
		wg.Wait()
	}
}
