//go:build !unix

package pte

import "os"

// fileIdentity has no device and inode to offer here: each *os.File is
// its own identity.
func fileIdentity(f *os.File) (string, bool) { return "", false }
