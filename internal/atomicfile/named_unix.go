//go:build unix

package atomicfile

import (
	"io/fs"
	"os"
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
