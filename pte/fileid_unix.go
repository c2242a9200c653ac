//go:build unix

package pte

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// fileIdentity returns the device and inode of a file, which two readers
// (or two paths) share exactly when they read the same file.
func fileIdentity(st fs.FileInfo) (string, error) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return "", errors.New("no device and inode")
	}
	return fmt.Sprintf("%x:%x", uint64(sys.Dev), uint64(sys.Ino)), nil
}
