package export

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// progressInterval is how often writeAtomic reports progress.
const progressInterval = 200 * time.Millisecond

// atomicOptions controls writeAtomic.
type atomicOptions struct {
	// total is the expected size of the output, for progress.
	total int64
	// progress, when non-nil, is called when the temporary file exists
	// (with 0 bytes written), periodically while it is written, and once
	// at the end.
	progress func(written, total int64)
	// noOverwrite refuses to replace an existing file, atomically.
	noOverwrite bool
}

// writeAtomic creates a temporary file next to path, lets write fill it,
// syncs it and renames it to path. On any failure, and when ctx is done
// before the rename, the temporary file is removed and path is left as it
// was; cancelling ctx closes the temporary file, so that a write in
// progress fails at its next system call. The new file gets the mode of
// the file it replaces, or 0644. When path is a symbolic link, the file it
// points to is replaced and the link is kept. It returns the size written.
func writeAtomic(ctx context.Context, path string, o atomicOptions, write func(*os.File) (int64, error)) (size int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if st, err := os.Lstat(path); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return 0, fmt.Errorf("resolving the symbolic link %s: %w", path, err)
		}
		path = target
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		if o.noOverwrite {
			return 0, &fs.PathError{Op: "write", Path: path, Err: fs.ErrExist}
		}
		if !st.Mode().IsRegular() {
			return 0, &fs.PathError{Op: "write", Path: path, Err: errors.New("not a regular file")}
		}
		mode = st.Mode().Perm()
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return 0, err
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()

	// Cancellation closes the file under the writer.
	stopCancel := context.AfterFunc(ctx, func() { f.Close() })
	defer stopCancel()

	if o.progress != nil {
		o.progress(0, o.total)
	}
	stop := startProgress(f, o.total, o.progress)
	size, err = write(f)
	stop()
	if cerr := ctx.Err(); cerr != nil {
		return 0, cerr
	}
	if err != nil {
		return 0, err
	}
	if err := f.Chmod(mode); err != nil {
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	if !stopCancel() {
		return 0, ctx.Err() // cancelled after the write: the file is closed
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	if err := commit(tmp, path, o.noOverwrite); err != nil {
		return 0, err
	}
	done = true
	if o.progress != nil {
		o.progress(size, max(o.total, size))
	}
	return size, nil
}

// commit moves the finished temporary file to path. Without noOverwrite
// it renames (replacing any file at path); with it, it hard-links the file
// to path, which fails if path exists, and removes the temporary name, so
// that no file created meanwhile is replaced. On a file system without
// hard links it falls back to checking and renaming.
func commit(tmp, path string, noOverwrite bool) error {
	if !noOverwrite {
		if err := os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
			return err
		}
		return nil
	}
	err := os.Link(tmp, path)
	switch {
	case err == nil:
		os.Remove(tmp)
		return nil
	case errors.Is(err, fs.ErrExist):
		os.Remove(tmp)
		return &fs.PathError{Op: "write", Path: path, Err: fs.ErrExist}
	}
	if _, serr := os.Lstat(path); serr == nil {
		os.Remove(tmp)
		return &fs.PathError{Op: "write", Path: path, Err: fs.ErrExist}
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
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
