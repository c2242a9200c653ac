package pte

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes the program file at path, like Write. The file is
// written to a temporary file in the same directory, synced and renamed
// over path only when everything succeeded, so path is either untouched or
// complete, and no temporary file is left behind on error. Because sources
// are read before the rename, path may be the file the payloads come from.
//
// An existing destination keeps its permission bits; a new one gets 0644.
// When path is a symbolic link, the file it points to is replaced.
func WriteFile(path string, p *Program, segments []*io.SectionReader, opts *WriteOptions) (info *WriteInfo, err error) {
	// Lay out and encode first: a program that cannot be written creates
	// no file at all.
	plan, err := planWrite(p, segments, opts)
	if err != nil {
		return nil, err
	}
	target, mode, err := writeTarget(path)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("pte: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if info, err = plan.writeTo(tmp); err != nil {
		return nil, err
	}
	if err = tmp.Chmod(mode); err != nil {
		return nil, fmt.Errorf("pte: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return nil, fmt.Errorf("pte: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return nil, fmt.Errorf("pte: %w", err)
	}
	if err = os.Rename(tmp.Name(), target); err != nil {
		return nil, fmt.Errorf("pte: %w", err)
	}
	syncDir(filepath.Dir(target))
	return info, nil
}

// writeTarget resolves symbolic links in path and returns the file to
// replace and the permission bits the new file gets.
func writeTarget(path string) (string, fs.FileMode, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return path, 0o644, nil
	case err != nil:
		return "", 0, fmt.Errorf("pte: %w", err)
	case !st.Mode().IsRegular():
		return "", 0, fmt.Errorf("pte: %s is not a regular file", path)
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", 0, fmt.Errorf("pte: %w", err)
	}
	return target, st.Mode().Perm(), nil
}

// syncDir makes a rename in dir durable. Errors are ignored: some systems
// cannot sync directories, and the data itself is already on disk.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
