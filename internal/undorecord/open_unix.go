//go:build unix

package undorecord

import (
	"errors"
	iofs "io/fs"
	"os"
	"syscall"
)

// openNoFollow opens path read-only; a symbolic link fails (ELOOP) and a
// FIFO does not block the open.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}

func isSymlinkErr(err error) bool { return errors.Is(err, syscall.ELOOP) }

// owner is the uid that owns the file of fi.
func owner(fi iofs.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}

// links is the number of names (hard links) of the file of fi.
func links(fi iofs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true
}
