//go:build !unix

package pte

import (
	"os"
	"syscall"
)

// fileIdentity has no device and inode to offer here: each *os.File is
// its own identity.
func fileIdentity(f *os.File) (string, bool) { return "", false }

// connIdentity has no descriptor identity to offer here.
func connIdentity(c syscall.Conn) (string, bool) { return "", false }
