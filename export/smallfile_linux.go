package export

import (
	"fmt"
	"os"
	"syscall"
)

// readSmallFile reads the regular file at path whole when it holds at
// most limit bytes, with raw system calls: stat, open, fstat, pread,
// close. An export of many small engines pays this per engine, and an
// *os.File costs more than the read itself (a poller registration that
// fails for regular files, a cleanup for the collector). ok is false,
// with nothing read, when path is not a regular file or is larger than
// limit; the caller then takes the general path, which says why.
func readSmallFile(path string, limit int64) (data []byte, ok bool, err error) {
	var st syscall.Stat_t
	if err := ignoringEINTR(func() error { return syscall.Stat(path, &st) }); err != nil {
		return nil, false, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size > limit {
		return nil, false, nil
	}
	// Non-blocking, so that a FIFO put in the file's place cannot hang
	// the open; the identity check below then refuses it.
	var fd int
	err = ignoringEINTR(func() (err error) {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var fst syscall.Stat_t
	if err := ignoringEINTR(func() error { return syscall.Fstat(fd, &fst) }); err != nil {
		return nil, false, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if fst.Dev != st.Dev || fst.Ino != st.Ino || fst.Size != st.Size {
		return nil, false, fmt.Errorf("%s changed during the export (was %d bytes, now %d, or another file)", path, st.Size, fst.Size)
	}
	data = make([]byte, st.Size)
	for n := 0; n < len(data); {
		k, err := syscall.Pread(fd, data[n:], int64(n))
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, false, &os.PathError{Op: "read", Path: path, Err: err}
		case k == 0:
			return nil, false, fmt.Errorf("%s changed during the export (was %d bytes, read %d)", path, st.Size, n)
		}
		n += k
	}
	return data, true, nil
}

// ignoringEINTR retries fn while it fails with EINTR, as package os does.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != syscall.EINTR {
			return err
		}
	}
}
