//go:build !linux

package inplace

import (
	"errors"
	"os"
)

// lease refuses: without a lease nothing tells whether another process
// has the file open or mapped, and editing it under that process would
// corrupt what it sees.
func lease(*os.File) error {
	return errors.New("in-place edits need a write lease (Linux F_SETLEASE), which this system does not have")
}

func unlease(*os.File) error { return nil }

func leaseHeld(*os.File) (bool, error) { return false, nil }

// Supported reports whether this system has write leases, without which
// Open refuses every file.
func Supported() bool { return false }
