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

// connIdentity is fileIdentity for a reader that gives its descriptor
// through syscall.Conn.
func connIdentity(c syscall.Conn) (string, bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return "", false
	}
	var st syscall.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.Fstat(int(fd), &st) }); err != nil || serr != nil {
		return "", false
	}
	return fmt.Sprintf("%x:%x", uint64(st.Dev), uint64(st.Ino)), true
}
