//go:build unix

package pte

import (
	"fmt"
	"os"
	"syscall"
)

// fileIdentity returns the device and inode of the file f reads, which
// two *os.File values (or two paths) share exactly when they are the same
// file.
func fileIdentity(f *os.File) (string, bool) {
	st, err := f.Stat()
	if err != nil {
		return "", false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%x:%x", uint64(sys.Dev), uint64(sys.Ino)), true
}
