//go:build !linux

package export

import (
	"crypto/sha256"
	"io"
)

// readSmallFile is the fast path of reading a small engine file, on Linux
// only; elsewhere every file takes the general path (ok is false).
func readSmallFile(path string, limit int64) (data []byte, ok bool, err error) {
	return nil, false, nil
}

// smallFile is, on Linux, a small file read with direct system calls; there
// is none elsewhere.
type smallFile struct {
	io.ReaderAt
	path string
	size int64
}

// readSmallEngine is the Linux fast path only: ok is false elsewhere.
func readSmallEngine(path string, limit int64, buf []byte, spool *engineSpool, dir *engineDir) (sf *smallFile, sum [sha256.Size]byte, ok bool, err error) {
	return nil, sum, false, nil
}

// engineSpool is, on Linux, where the bytes of small engine files wait to
// be written; there is none elsewhere.
type engineSpool struct{}

func newEngineSpool() *engineSpool { return nil }

func (s *engineSpool) close() {}

func (s *engineSpool) seal() {}

// engineDir is, on Linux, the directory of the last small engine file
// opened; there is none elsewhere.
type engineDir struct{}

func (d *engineDir) close() {}
