//go:build !linux

package atomicfile

import (
	"errors"
	"os"
)

// openUnnamed reports that unnamed files are a Linux feature: elsewhere
// the output goes through a named temporary file.
func openUnnamed(dir, name string) (*os.File, error) { return nil, errors.ErrUnsupported }

func linkUnnamed(f *os.File, newpath string) error { return errors.ErrUnsupported }
