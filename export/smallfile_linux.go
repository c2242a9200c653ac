package export

import (
	"fmt"
	"io"
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
	sf, ok, err := statSmallFile(path, limit)
	if !ok || err != nil {
		return nil, false, err
	}
	data = make([]byte, sf.size)
	if _, err := sf.ReadAt(data, 0); err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// smallFile is a small regular file read with raw system calls each time
// it is read, never held open: the engines past the held-bytes budget are
// read so (once to compare them, once to write them), which costs the
// same per file as holding them, without the memory.
type smallFile struct {
	path string
	size int64
	dev  uint64
	ino  uint64
}

// statSmallFile stats path (following symbolic links) and returns it as
// a smallFile when it is a regular file of at most limit bytes; ok is
// false otherwise, for the general path to say why.
func statSmallFile(path string, limit int64) (sf *smallFile, ok bool, err error) {
	var st syscall.Stat_t
	if err := ignoringEINTR(func() error { return syscall.Stat(path, &st) }); err != nil {
		return nil, false, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size > limit {
		return nil, false, nil
	}
	return &smallFile{path: path, size: st.Size, dev: uint64(st.Dev), ino: uint64(st.Ino)}, true, nil
}

// ReadAt opens the file, checks that it is still the file stat saw (same
// device, inode and size), reads p at off and closes it.
func (sf *smallFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &os.PathError{Op: "read", Path: sf.path, Err: syscall.EINVAL}
	}
	// Non-blocking, so that a FIFO put in the file's place cannot hang
	// the open; the identity check below then refuses it.
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = syscall.Open(sf.path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: sf.path, Err: err}
	}
	defer syscall.Close(fd)
	var fst syscall.Stat_t
	if err := ignoringEINTR(func() error { return syscall.Fstat(fd, &fst) }); err != nil {
		return 0, &os.PathError{Op: "stat", Path: sf.path, Err: err}
	}
	if uint64(fst.Dev) != sf.dev || uint64(fst.Ino) != sf.ino || fst.Size != sf.size {
		return 0, fmt.Errorf("%s changed during the export (was %d bytes, now %d, or another file)", sf.path, sf.size, fst.Size)
	}
	want := len(p)
	if off >= sf.size {
		want = 0
	} else if rest := sf.size - off; int64(want) > rest {
		want = int(rest)
	}
	n := 0
	for n < want {
		k, err := syscall.Pread(fd, p[n:want], off+int64(n))
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return n, &os.PathError{Op: "read", Path: sf.path, Err: err}
		case k == 0:
			return n, fmt.Errorf("%s changed during the export (was %d bytes, read %d)", sf.path, sf.size, off+int64(n))
		}
		n += k
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// ignoringEINTR retries fn while it fails with EINTR, as package os does.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != syscall.EINTR {
			return err
		}
	}
}
