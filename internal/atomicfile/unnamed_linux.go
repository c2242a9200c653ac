package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openUnnamed creates an unnamed file in dir with O_TMPFILE, mode 0666
// less the umask, and returns it named name (the destination, for error
// messages). It returns errors.ErrUnsupported when the caller must use a
// named temporary file instead: the kernel or file system does not do
// O_TMPFILE, or /proc/self/fd, through which the file gets its name, is
// missing.
func openUnnamed(dir, name string) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o666)
		if err != unix.EINTR {
			break
		}
	}
	switch err {
	case nil:
	case unix.EOPNOTSUPP, unix.EISDIR, unix.EINVAL, unix.ENOSYS:
		// EISDIR: a kernel before 3.11 reads O_TMPFILE as O_DIRECTORY.
		return nil, errors.ErrUnsupported
	default:
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	st, err := f.Stat()
	if err == nil {
		var pst fs.FileInfo
		if pst, err = os.Stat(procPath(fd)); err == nil && !os.SameFile(st, pst) {
			err = errors.ErrUnsupported
		}
	}
	if err != nil {
		f.Close()
		return nil, errors.ErrUnsupported
	}
	return f, nil
}

func procPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// linkUnnamed gives the unnamed file f the name newpath, with linkat(2)
// following /proc/self/fd/N (which needs no privilege, unlike
// AT_EMPTY_PATH). An existing newpath fails with an error wrapping
// fs.ErrExist.
func linkUnnamed(f *os.File, newpath string) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			lerr = unix.Linkat(unix.AT_FDCWD, procPath(int(fd)), unix.AT_FDCWD, newpath, unix.AT_SYMLINK_FOLLOW)
			if lerr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if lerr != nil {
		return &os.LinkError{Op: "link", Old: f.Name(), New: newpath, Err: lerr}
	}
	return nil
}
