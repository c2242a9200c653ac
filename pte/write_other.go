//go:build !linux

package pte

import (
	"errors"
	"os"
)

const copyFileRangeSupported = false

func copyFileRange(dst, src *os.File, off, n int64) (int64, error) {
	return 0, errors.ErrUnsupported
}
