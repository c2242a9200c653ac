package export

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"strings"

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
	fd, st, err := openSmallFileIn(nil, path)
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

// openSmallFileIn opens path for reading and fstats it: one path lookup,
// not a stat and then an open. Non-blocking, so that a FIFO cannot hang
// the open; a caller looks at the mode before reading. d, when not nil,
// is the last directory opened: a path in it is opened relative to it
// (openat), without looking up each of its parent directories again.
func openSmallFileIn(d *engineDir, path string) (fd int, st unix.Stat_t, err error) {
	dirfd, name := d.at(path)
	err = ignoringEINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
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

// smallFile is a small regular file: its bytes as they were read when
// the export opened it, kept in the export's engineSpool, or, when there
// is no spool, the file read again with direct system calls, never held
// open (see readSmallEngine).
type smallFile struct {
	path string
	size int64
	dev  uint64
	ino  uint64
	// sum, when the bytes are not in the spool, is the SHA-256 of those
	// read when it was opened.
	sum *[sha256.Size]byte
	// spool, when set, holds the file's bytes at off.
	spool *engineSpool
	off   int64
}

// readSmallEngine reads the regular file at path when it holds at most
// limit bytes (into buf, at least limit bytes long), with direct system
// calls, and returns it as a smallFile, with the SHA-256 of its bytes, by
// which the export compares engines. Instead of holding the bytes (a
// quarter of the peak memory of many 1 KiB engines) it puts them in spool
// (when not nil), or else reads the file again when it is written. ok is
// false, with nothing read, when path is not a regular file or is larger
// than limit; the caller then takes the general path, which says why.
func readSmallEngine(path string, limit int64, buf []byte, spool *engineSpool, dir *engineDir) (sf *smallFile, sum [sha256.Size]byte, ok bool, err error) {
	fd, st, err := openSmallFileIn(dir, path)
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
	sum = sha256.Sum256(data)
	sf = &smallFile{path: path, size: st.Size, dev: uint64(st.Dev), ino: uint64(st.Ino), off: -1}
	if spool != nil {
		if sf.off = spool.add(data, sum); sf.off >= 0 {
			sf.spool = spool
		}
	}
	if sf.spool == nil {
		kept := sum
		sf.sum = &kept
	}
	return sf, sum, true, nil
}

// ReadAt reads p at off from the bytes kept in the spool, or else opens
// the file, checks that it is still the file stat saw (same device, inode
// and size) holding the same bytes (their SHA-256: a file rewritten in
// place keeps its inode and size, and the export compared it with the
// others by the bytes first read), reads p at off and closes it.
func (sf *smallFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &os.PathError{Op: "read", Path: sf.path, Err: unix.EINVAL}
	}
	if sf.spool != nil {
		if off >= sf.size {
			return 0, io.EOF
		}
		n := int(min(int64(len(p)), sf.size-off))
		if err := sf.spool.readAt(p[:n], sf.off+off); err != nil {
			return 0, fmt.Errorf("%s: reading its bytes back from the temporary file: %w", sf.path, err)
		}
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
	// The identity check refuses a FIFO or another file put in its place.
	fd, fst, err := openSmallFileIn(nil, sf.path)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	if uint64(fst.Dev) != sf.dev || uint64(fst.Ino) != sf.ino || fst.Size != sf.size {
		return 0, fmt.Errorf("%s changed during the export (was %d bytes, now %d, or another file)", sf.path, sf.size, fst.Size)
	}
	data := make([]byte, sf.size) // at most maxHeldEngine
	if _, err := preadFull(fd, sf.path, sf.size, data, 0); err != nil {
		return 0, err
	}
	if sha256.Sum256(data) != *sf.sum {
		return 0, fmt.Errorf("%s changed during the export (its bytes are not those read when the export began)", sf.path)
	}
	if off >= sf.size {
		return 0, io.EOF
	}
	n := copy(p, data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
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

// engineDir is the directory of the last small engine file opened, open
// (O_PATH), so that the next file of the same directory is opened
// relative to it: the engines of a manifest are mostly in one directory,
// and looking up each of its parents again for each engine was about a
// quarter of opening it.
type engineDir struct {
	path string
	fd   int // valid when path is not ""
}

// at returns the directory descriptor and name with which to open path:
// relative to d's directory when path is in it (which d opens when it was
// another), else unix.AT_FDCWD and path.
func (d *engineDir) at(path string) (int, string) {
	i := strings.LastIndexByte(path, '/')
	if d == nil || i <= 0 || i == len(path)-1 {
		return unix.AT_FDCWD, path
	}
	dir, name := path[:i], path[i+1:]
	if d.path != dir {
		d.close()
		var fd int
		err := ignoringEINTR(func() (err error) {
			fd, err = unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			return err
		})
		if err != nil {
			return unix.AT_FDCWD, path // the open of path says what is wrong
		}
		d.path, d.fd = dir, fd
	}
	return d.fd, name
}

// close closes d's directory.
func (d *engineDir) close() {
	if d != nil && d.path != "" {
		unix.Close(d.fd)
		d.path = ""
	}
}

// engineSpool keeps the bytes of the small engine files an export read
// to take their sums, in an unnamed temporary file, until they are
// written: reading each file a second time cost a seventh of the CPU time
// of an export of 65,536 engines of 1 KiB, and holding them in memory a
// quarter of its peak memory. The bytes are written in batches of
// spoolBuffer and read back in windows of spoolBuffer, in the order they
// were added, which is the order the writer asks for them: one system
// call per batch either way. They live in the page cache, not in the
// process. Bytes already in the spool (by their SHA-256) are not added
// again, so one engine named by many paths (links, other spellings) is
// held once: the spool holds at most the engine bytes the program stores.
type engineSpool struct {
	f       *os.File
	at      map[[sha256.Size]byte]int64 // the offset of the bytes of each sum added
	failed  bool                        // a write failed: the spool takes no more bytes
	pending []byte                      // bytes added after the first flushed ones, not yet written
	flushed int64                       // bytes written to f
	win     []byte                      // a window of f's bytes, read back at winOff
	winOff  int64
}

// spoolBuffer is the size of an engineSpool's batches and windows.
const spoolBuffer = 256 << 10

// newEngineSpool returns an empty spool. Its file is made when its first
// batch is written: an unnamed file (O_TMPFILE, which leaves nothing
// behind, even when the export is killed) in the system's temporary
// directory. When there is none to be had, the spool takes no more bytes
// and the files of the engines it did not take are read again when they
// are written.
func newEngineSpool() *engineSpool { return &engineSpool{} }

// create makes the spool's file.
func (s *engineSpool) create() error {
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = unix.Open(os.TempDir(), unix.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, 0o600)
		return err
	})
	if err != nil {
		return err
	}
	s.f = os.NewFile(uintptr(fd), "engine spool")
	return nil
}

// add appends data, whose SHA-256 is sum, to the spool and returns its
// offset there (that of the same bytes when they were added before, until
// seal), or -1 when the spool takes no more (a batch could not be written).
func (s *engineSpool) add(data []byte, sum [sha256.Size]byte) int64 {
	if off, ok := s.at[sum]; ok {
		return off
	}
	if s.failed || len(data) > spoolBuffer {
		return -1
	}
	if len(s.pending)+len(data) > spoolBuffer {
		if s.f == nil {
			if err := s.create(); err != nil {
				s.failed = true
				return -1
			}
		}
		if _, err := s.f.WriteAt(s.pending, s.flushed); err != nil {
			// What is pending stays readable in memory.
			s.failed = true
			return -1
		}
		s.flushed += int64(len(s.pending))
		s.pending = s.pending[:0]
	}
	if s.pending == nil {
		// A batch's buffer, made once: growing it by appending made a
		// megabyte of fresh pages in an export of 1,024 engines.
		s.pending = make([]byte, 0, spoolBuffer)
	}
	off := s.flushed + int64(len(s.pending))
	s.pending = append(s.pending, data...)
	if s.at == nil {
		s.at = map[[sha256.Size]byte]int64{}
	}
	s.at[sum] = off
	return off
}

// seal ends the adding: the spool lets go of its index of the sums added
// (about 80 bytes per engine), and, once it has a file, writes the last
// batch there, so that the batch's buffer becomes the window the bytes are
// read back through instead of a second buffer of the same size. A batch
// that cannot be written stays readable in memory.
func (s *engineSpool) seal() {
	if s == nil {
		return
	}
	s.at = nil
	if s.f == nil || s.failed || len(s.pending) == 0 {
		return
	}
	if _, err := s.f.WriteAt(s.pending, s.flushed); err != nil {
		s.failed = true
		return
	}
	s.flushed += int64(len(s.pending))
	s.win, s.pending = s.pending[:0], nil
}

// readAt reads len(p) bytes at off, all of them bytes add was given
// (an added run of bytes is either all written or all pending).
func (s *engineSpool) readAt(p []byte, off int64) error {
	if off >= s.flushed {
		copy(p, s.pending[off-s.flushed:])
		return nil
	}
	end := off + int64(len(p))
	if off < s.winOff || end > s.winOff+int64(len(s.win)) {
		if s.win == nil {
			s.win = make([]byte, spoolBuffer)
		}
		n := int(min(int64(cap(s.win)), s.flushed-off))
		if n < len(p) {
			return fmt.Errorf("%d bytes at %d pass the %d written", len(p), off, s.flushed)
		}
		if _, err := s.f.ReadAt(s.win[:n], off); err != nil {
			s.win = s.win[:0]
			return err
		}
		s.win, s.winOff = s.win[:n], off
	}
	copy(p, s.win[off-s.winOff:])
	return nil
}

// close closes the spool's file, which lets the system free its bytes.
func (s *engineSpool) close() {
	if s != nil && s.f != nil {
		s.f.Close()
	}
}
