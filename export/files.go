package export

import (
	"fmt"
	"os"
	"sync"
	"syscall"
)

// fileSet reads engine and blob files for an export, holding at most one
// of them open at a time: a program may call more engines than the
// process may open files, and the writer reads them one after another.
// Each file is opened when first read (by the dedup, the writer, or a
// blob check), and again if another was read in between.
type fileSet struct {
	mu  sync.Mutex
	cur *lazyFile
	f   *os.File
}

// lazyFile is a file of a fileSet: an io.ReaderAt that opens the file
// when it is read (closing the set's previously open one). It also gives
// its descriptor through syscall.Conn, so that pte.Write can copy it with
// copy_file_range.
type lazyFile struct {
	set  *fileSet
	path string
	size int64
	st   os.FileInfo // the file checked when it was added
}

// add checks that path is a regular file and returns it as a lazyFile,
// not yet open: a file that cannot be opened is reported when it is first
// read, with its path.
func (s *fileSet) add(path string) (*lazyFile, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fileKind(st.Mode()))
	}
	return &lazyFile{set: s, path: path, size: st.Size(), st: st}, nil
}

// file returns the open file of lf, opening it (and closing the set's
// other file) when needed. The caller holds s.mu.
func (s *fileSet) fileLocked(lf *lazyFile) (*os.File, error) {
	if s.cur == lf {
		return s.f, nil
	}
	s.closeLocked()
	// Non-blocking, so that a FIFO put in the file's place cannot hang
	// the open; the identity check below then refuses it.
	f, err := os.OpenFile(lf.path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !os.SameFile(st, lf.st) || st.Size() != lf.size {
		f.Close()
		return nil, fmt.Errorf("%s changed during the export (was %d bytes, now %d, or another file)", lf.path, lf.size, st.Size())
	}
	s.cur, s.f = lf, f
	return f, nil
}

func (s *fileSet) closeLocked() {
	if s.f != nil {
		s.f.Close()
	}
	s.cur, s.f = nil, nil
}

// close closes the open file, if any.
func (s *fileSet) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked()
}

// ReadAt reads from the file, opening it if needed.
func (lf *lazyFile) ReadAt(p []byte, off int64) (int, error) {
	lf.set.mu.Lock()
	defer lf.set.mu.Unlock()
	f, err := lf.set.fileLocked(lf)
	if err != nil {
		return 0, err
	}
	return f.ReadAt(p, off)
}

// SyscallConn opens the file if needed and returns its raw descriptor,
// valid until another file of the set is opened.
func (lf *lazyFile) SyscallConn() (syscall.RawConn, error) {
	lf.set.mu.Lock()
	defer lf.set.mu.Unlock()
	f, err := lf.set.fileLocked(lf)
	if err != nil {
		return nil, err
	}
	return f.SyscallConn()
}

// Stat returns what stat(2) said when the file was added, without opening
// it: pte.DedupPayloads tells files apart by its device and inode.
func (lf *lazyFile) Stat() (os.FileInfo, error) { return lf.st, nil }
