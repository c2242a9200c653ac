package pte

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// copyFileRangeSupported says whether copyFileRange may do anything: on
// Linux it may, and the kernel says per call whether it does.
const copyFileRangeSupported = true

// copyFileRange copies up to n bytes from src at offset off to dst at its
// current file offset, inside the kernel (no user-space buffer, and a
// reflink on file systems that support it). It never moves src's file
// offset. It returns errors.ErrUnsupported, with the bytes copied so far,
// when the kernel cannot do it for these files; the caller then continues
// with an ordinary copy. It stops early without error at the end of src.
func copyFileRange(dst *os.File, src syscall.Conn, off, n int64) (int64, error) {
	sc, err := src.SyscallConn()
	if err != nil {
		return 0, errors.ErrUnsupported
	}
	dc, err := dst.SyscallConn()
	if err != nil {
		return 0, errors.ErrUnsupported
	}
	var done int64
	var opErr error
	cerr := sc.Control(func(sfd uintptr) {
		opErr = dc.Control(func(dfd uintptr) {
			for done < n {
				o := off + done
				chunk := min(n-done, 1<<30)
				r, err := unix.CopyFileRange(int(sfd), &o, int(dfd), nil, int(chunk), 0)
				switch err {
				case nil:
				case unix.EINTR, unix.EAGAIN:
					continue
				case unix.ENOSYS, unix.EXDEV, unix.EINVAL, unix.EOPNOTSUPP, unix.EPERM, unix.EBADF:
					opErr = errors.ErrUnsupported
					return
				default:
					opErr = os.NewSyscallError("copy_file_range", err)
					return
				}
				if r == 0 {
					return // end of src: the caller reports the short read
				}
				done += int64(r)
			}
		})
	})
	if cerr != nil {
		return done, errors.ErrUnsupported
	}
	return done, opErr
}

// startWriteback asks the kernel to start writing n bytes of f at off
// back to the device without waiting for it (sync_file_range with
// SYNC_FILE_RANGE_WRITE: pages already under writeback are skipped). It
// is a hint for a later fsync, which alone makes the data durable; its
// error (a pipe, a file system without it) is ignored.
func startWriteback(f *os.File, off, n int64) {
	if sc, err := f.SyscallConn(); err == nil {
		sc.Control(func(fd uintptr) { unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE) })
	}
}
