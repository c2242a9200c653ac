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

// owner is the uid that owns the file of fi and the number of its names
// (hard links); ok is false when fi does not say.
func owner(fi iofs.FileInfo) (uid uint32, links uint64, ok bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid, uint64(st.Nlink), true
	}
	return 0, 0, false
}
