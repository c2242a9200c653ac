//go:build unix

package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// openNamed creates the temporary file tmp (mode 0666 less the umask,
// failing if it exists) and returns it named name, the destination, so
// that write errors name the output rather than the temporary file.
func openNamed(tmp, name string) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(tmp, syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o666)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: tmp, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// plantedLink refuses to follow the symbolic link path (lst, its Lstat)
// where the kernel's fs.protected_symlinks would not: in a sticky
// directory writable by others (/tmp, a shared models folder), a link
// owned by neither the user writing nor the directory's owner. Anyone
// could have left it there, pointing at any file of the user writing.
// Following it in user space (EvalSymlinks) would bypass the kernel's
// rule even where it is on.
func plantedLink(path string, lst fs.FileInfo) error {
	dir := filepath.Dir(path)
	dst, err := os.Stat(dir)
	if err != nil {
		return nil // resolve reports what is wrong with the path
	}
	if dst.Mode()&fs.ModeSticky == 0 || dst.Mode().Perm()&0o002 == 0 {
		return nil
	}
	ls, ok1 := lst.Sys().(*syscall.Stat_t)
	ds, ok2 := dst.Sys().(*syscall.Stat_t)
	if !ok1 || !ok2 || ls.Uid == uint32(os.Geteuid()) || ls.Uid == ds.Uid {
		return nil
	}
	return &Error{Path: path, Err: fs.ErrPermission,
		Msg: fmt.Sprintf("%s is a symbolic link owned by uid %d in the shared directory %s (sticky, writable by others): it is not followed, as the kernel would not follow it; name the file it points to", path, ls.Uid, dir)}
}
