package export

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// progressInterval is how often writeAtomic reports progress.
const progressInterval = 200 * time.Millisecond

// writeAtomic creates a temporary file next to path, lets write fill it,
// syncs it and renames it to path. On any failure the temporary file is
// removed and path is left as it was. The new file gets the mode of the
// file it replaces, or 0644. When progress is non-nil it is called
// periodically with the bytes written so far (and once at the end).
func writeAtomic(path string, total int64, progress func(written, total int64), write func(*os.File) (int64, error)) (size int64, err error) {
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
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

	stop := startProgress(f, total, progress)
	size, err = write(f)
	stop()
	if err != nil {
		return 0, err
	}
	if err := f.Chmod(mode); err != nil {
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		done = true
		return 0, err
	}
	done = true
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
