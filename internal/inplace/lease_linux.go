package inplace

import (
	"errors"
	"os"
	"syscall"
)

// lease takes a write lease on f. The kernel refuses it (EAGAIN) while any
// other open file description of the file exists, mapped or not.
func lease(f *os.File) error {
	err := fcntl(f, syscall.F_SETLEASE, syscall.F_WRLCK)
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EBUSY) {
		return ErrBusy
	}
	return err
}

// unlease gives the lease up; a process waiting to open the file goes on.
func unlease(f *os.File) error {
	return fcntl(f, syscall.F_SETLEASE, syscall.F_UNLCK)
}

func fcntl(f *os.File, cmd, arg int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, uintptr(cmd), uintptr(arg))
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// Supported reports whether this system has write leases, without which
// Open refuses every file.
func Supported() bool { return true }
