package export

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// readSmallFile reads the regular file at path whole when it holds at
// most limit bytes, with direct system calls: open, fstat, pread, close.
// An export of many small engines pays this per engine, and an
// *os.File costs more than the read itself (a poller registration that
// fails for regular files, a cleanup for the collector). ok is false,
// with nothing read, when path is not a regular file or is larger than
// limit; the caller then takes the general path, which says why.
func readSmallFile(path string, limit int64) (data []byte, ok bool, err error) {
	fd, st, err := openSmallFile(path)
	if err != nil {
		return nil, false, err
	}
	defer unix.Close(fd)
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > limit {
		return nil, false, nil
	}
	data = make([]byte, st.Size)
	if _, err := preadFull(fd, path, st.Size, data, 0); err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// openSmallFile opens path for reading and fstats it: one path lookup,
// not a stat and then an open. Non-blocking, so that a FIFO cannot hang
// the open; a caller looks at the mode before reading.
func openSmallFile(path string) (fd int, st unix.Stat_t, err error) {
	err = ignoringEINTR(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return -1, st, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if err := ignoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		unix.Close(fd)
		return -1, st, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return fd, st, nil
}

// smallFile is a small regular file read with direct system calls each time
// it is read, never held open: small engines are read so when they are
// written (see readSmallEngine).
type smallFile struct {
	path string
	size int64
	dev  uint64
	ino  uint64
}

// readSmallEngine reads the regular file at path when it holds at most
// limit bytes (into buf, at least limit bytes long), with direct system
// calls, and returns it as a smallFile, with the SHA-256 of its bytes: an
// export of many small engines compares them by that sum and reads each
// again when it writes it, instead of holding them all (1 KiB per engine
// of a bench of 1 KiB engines, a quarter of its peak memory). ok is false,
// with nothing read, when path is not a regular file or is larger than
// limit; the caller then takes the general path, which says why.
func readSmallEngine(path string, limit int64, buf []byte) (sf *smallFile, sum [sha256.Size]byte, ok bool, err error) {
	fd, st, err := openSmallFile(path)
	if err != nil {
		return nil, sum, false, err
	}
	defer unix.Close(fd)
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > limit {
		return nil, sum, false, nil
	}
	data := buf[:st.Size]
	if _, err := preadFull(fd, path, st.Size, data, 0); err != nil {
		return nil, sum, false, err
	}
	return &smallFile{path: path, size: st.Size, dev: uint64(st.Dev), ino: uint64(st.Ino)}, sha256.Sum256(data), true, nil
}

// ReadAt opens the file, checks that it is still the file stat saw (same
// device, inode and size), reads p at off and closes it.
func (sf *smallFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &os.PathError{Op: "read", Path: sf.path, Err: unix.EINVAL}
	}
	// The identity check refuses a FIFO or another file put in its place.
	fd, fst, err := openSmallFile(sf.path)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	if uint64(fst.Dev) != sf.dev || uint64(fst.Ino) != sf.ino || fst.Size != sf.size {
		return 0, fmt.Errorf("%s changed during the export (was %d bytes, now %d, or another file)", sf.path, sf.size, fst.Size)
	}
	return preadFull(fd, sf.path, sf.size, p, off)
}

// preadFull reads p at off from fd, the file at path of size bytes; past
// the end it reads what there is and returns io.EOF, and a file that ends
// sooner than size is an error (it changed during the export).
func preadFull(fd int, path string, size int64, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &os.PathError{Op: "read", Path: path, Err: unix.EINVAL}
	}
	want := len(p)
	if off >= size {
		want = 0
	} else if rest := size - off; int64(want) > rest {
		want = int(rest)
	}
	n := 0
	for n < want {
		k, err := unix.Pread(fd, p[n:want], off+int64(n))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return n, &os.PathError{Op: "read", Path: path, Err: err}
		case k == 0:
			return n, fmt.Errorf("%s changed during the export (was %d bytes, read %d)", path, size, off+int64(n))
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
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}
