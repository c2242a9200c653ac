//go:build !unix

package pte

import (
	"errors"
	"io/fs"
)

// fileIdentity has no device and inode to offer here: each reader is its
// own identity.
func fileIdentity(st fs.FileInfo) (string, error) {
	return "", errors.New("no device and inode")
}
