package inplace

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lease takes a write lease on f. The kernel refuses it (EAGAIN) while any
// other open file description of the file exists, mapped or not.
func lease(f *os.File) error {
	_, err := fcntl(f, unix.F_SETLEASE, unix.F_WRLCK)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EBUSY) {
		return ErrBusy
	}
	return err
}

// unlease gives the lease up; a process waiting to open the file goes on.
// A lease the kernel already removed (EAGAIN) is no error.
func unlease(f *os.File) error {
	if _, err := fcntl(f, unix.F_SETLEASE, unix.F_UNLCK); err != nil && !errors.Is(err, unix.EAGAIN) {
		return err
	}
	return nil
}

// leaseHeld reports whether F_GETLEASE says f holds a write lease that
// nobody is breaking (see Edit.guard for the other answers).
func leaseHeld(f *os.File) (bool, error) {
	typ, err := fcntl(f, unix.F_GETLEASE, 0)
	return err == nil && typ == unix.F_WRLCK, err
}

// fcntl runs fcntl(2) on f's descriptor.
func fcntl(f *os.File, cmd, arg int) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		n, ferr = unix.FcntlInt(fd, cmd, arg)
	}); err != nil {
		return 0, err
	}
	return n, ferr
}

// Supported reports whether this system has write leases, without which
// Open refuses every file.
func Supported() bool { return true }
