//go:build !linux

package pte

import (
	"errors"
	"os"
	"syscall"
)

const copyFileRangeSupported = false

func copyFileRange(dst *os.File, src syscall.Conn, off, n int64) (int64, error) {
	return 0, errors.ErrUnsupported
}

// startWriteback does nothing here: only Linux has sync_file_range.
func startWriteback(f *os.File, off, n int64) {}
