package inplace

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"

	"github.com/ptekit/ptekit/internal/atomicfile"
)

// ErrBusy is the refusal of an edit (or a recovery) of a file that another
// open file description holds: another process has it open or mapped.
var ErrBusy = errors.New("the file is open or mapped by another process")

// Step names a point of WriteAt, for tests that kill the writer there.
type Step string

// The points of an edit, in order.
const (
	StepUndoWritten Step = "undo-written" // the record is durable, the file untouched
	StepPartial     Step = "partial"      // half of the new bytes written
	StepWritten     Step = "written"      // all new bytes written, not synced
	StepSynced      Step = "synced"       // new bytes synced, record still there
	StepUndoRemoved Step = "undo-removed" // record removed: the edit is over
)

// Hook, when non-nil, is called at each Step of WriteAt. Tests set it to
// kill the process there; nothing else may.
var Hook func(Step)

func hook(s Step) {
	if Hook != nil {
		Hook(s)
	}
}

// undoMagic starts an undo record; the digit is the record's version.
const undoMagic = "PTEUNDO1"

// undoFixed is the size of a record without its two byte runs: magic,
// file size, offset, length, and the SHA-256 of everything before it.
const undoFixed = 8 + 3*8 + sha256.Size

// UndoPath is the name of the undo record of the file path (resolved
// through symbolic links by Open and Recover before they call it).
func UndoPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".pteundo")
}

// Edit is a file open for in-place writes, under a write lease.
type Edit struct {
	path string // resolved
	f    *os.File
	size int64
}

// Open opens path for an in-place edit: it takes the write lease (ErrBusy,
// wrapped, when another process has the file open or mapped) and recovers
// an edit that a dead writer left unfinished. Close ends the edit.
func Open(path string) (*Edit, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(real, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if err := lease(f); err != nil {
		f.Close()
		return nil, leaseError(path, err)
	}
	e := &Edit{path: real, f: f, size: st.Size()}
	if _, err := recoverWith(f, real); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func leaseError(path string, err error) error {
	if errors.Is(err, ErrBusy) {
		return fmt.Errorf("%s: %w; it is not changed in place while ExecuTorch or another program may be reading it (close it, or re-bake to another file)", path, ErrBusy)
	}
	return fmt.Errorf("%s: cannot take a write lease: %w", path, err)
}

// File is the edited file, for reading. Nothing else may open it while
// the edit lasts: another open file description would break the lease.
func (e *Edit) File() *os.File { return e.f }

// Size is the size of the file when it was opened (edits never change it).
func (e *Edit) Size() int64 { return e.size }

// Close gives the lease up and closes the file.
func (e *Edit) Close() error {
	uerr := unlease(e.f)
	if err := e.f.Close(); err != nil {
		return err
	}
	return uerr
}

// WriteAt replaces the bytes at off with b, crash-safely: undo record
// first, then the bytes, sync, then the record goes. It never changes the
// file's size. It returns whether anything changed (false when the bytes
// were already b). On a failure after the record was written, the old bytes
// are put back; when even that fails, the record stays for Recover and the
// error says so.
func (e *Edit) WriteAt(b []byte, off int64) (bool, error) {
	if off < 0 || off > e.size || int64(len(b)) > e.size-off {
		return false, fmt.Errorf("%s: in-place write of %d bytes at %d is outside the file (%d bytes)", e.path, len(b), off, e.size)
	}
	old := make([]byte, len(b))
	if _, err := e.f.ReadAt(old, off); err != nil {
		return false, fmt.Errorf("%s: %w", e.path, err)
	}
	if bytes.Equal(old, b) {
		return false, nil
	}
	undo := UndoPath(e.path)
	if err := writeRecord(undo, e.size, off, old, b); err != nil {
		return false, err
	}
	hook(StepUndoWritten)
	if err := e.write(b, off); err != nil {
		if rerr := e.rollback(undo, old, off); rerr != nil {
			return false, fmt.Errorf("%s: %w; putting the old bytes back failed too (%v): run pteexport --recover %s", e.path, err, rerr, e.path)
		}
		return false, fmt.Errorf("%s: %w (the file is unchanged)", e.path, err)
	}
	hook(StepSynced)
	if err := os.Remove(undo); err != nil {
		return true, fmt.Errorf("%s: the edit is complete, but its undo record %s stays: %w", e.path, undo, err)
	}
	atomicfile.SyncDir(filepath.Dir(undo))
	hook(StepUndoRemoved)
	return true, nil
}

func (e *Edit) write(b []byte, off int64) error {
	if Hook != nil {
		// Two writes, so that a test can stop the writer between them.
		h := len(b) / 2
		if _, err := e.f.WriteAt(b[:h], off); err != nil {
			return err
		}
		hook(StepPartial)
		b, off = b[h:], off+int64(h)
	}
	if _, err := e.f.WriteAt(b, off); err != nil {
		return err
	}
	hook(StepWritten)
	return e.f.Sync()
}

func (e *Edit) rollback(undo string, old []byte, off int64) error {
	if _, err := e.f.WriteAt(old, off); err != nil {
		return err
	}
	if err := e.f.Sync(); err != nil {
		return err
	}
	if err := os.Remove(undo); err != nil {
		return err
	}
	atomicfile.SyncDir(filepath.Dir(undo))
	return nil
}

// writeRecord writes the undo record atomically: it is complete and synced
// (with its directory) when it has a name.
func writeRecord(path string, size, off int64, old, new []byte) error {
	rec := encodeRecord(size, off, old, new)
	out, err := atomicfile.Create(path, &atomicfile.Options{NoOverwrite: true})
	if err != nil {
		return fmt.Errorf("writing the undo record: %w", err)
	}
	defer out.Abort()
	if _, err := out.Write(rec); err != nil {
		return fmt.Errorf("writing the undo record: %w", err)
	}
	if err := out.Commit(); err != nil {
		return fmt.Errorf("writing the undo record: %w", err)
	}
	return nil
}

// encodeRecord lays an undo record out: magic, the file's size, the
// offset and length of the range, its old bytes, its new bytes (all
// little-endian), and the SHA-256 of all that.
func encodeRecord(size, off int64, old, new []byte) []byte {
	rec := make([]byte, 0, undoFixed+2*len(old))
	rec = append(rec, undoMagic...)
	rec = binary.LittleEndian.AppendUint64(rec, uint64(size))
	rec = binary.LittleEndian.AppendUint64(rec, uint64(off))
	rec = binary.LittleEndian.AppendUint64(rec, uint64(len(old)))
	rec = append(rec, old...)
	rec = append(rec, new...)
	sum := sha256.Sum256(rec)
	return append(rec, sum[:]...)
}

// record is a parsed undo record.
type record struct {
	size, off int64
	old, new  []byte
}

// RecordError is an undo record that cannot be applied: damaged, or not
// about the file as it is now. The record is left where it is.
type RecordError struct {
	// Path is the undo record.
	Path string
	// Off is the byte offset in the record (or in the file, for a
	// mismatch) where the problem is; -1 when it concerns the whole record.
	Off int64
	// Msg says what is wrong.
	Msg string
}

// Error says which record is wrong, where, and what to do about it.
func (e *RecordError) Error() string {
	if e.Off < 0 {
		return fmt.Sprintf("undo record %s: %s; it is left for you to inspect (remove it when the file is known good)", e.Path, e.Msg)
	}
	return fmt.Sprintf("undo record %s: at byte %d: %s; it is left for you to inspect (remove it when the file is known good)", e.Path, e.Off, e.Msg)
}

// maxRecord bounds the record read into memory: two copies of the largest
// flatbuffer region a program can have, and the fixed fields.
const maxRecord = 2*(1<<31) + undoFixed

// readRecord reads and checks the undo record at path; nil, nil when
// there is none.
func readRecord(path string) (*record, error) {
	f, err := os.Open(path)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() < undoFixed || st.Size() > maxRecord {
		return nil, &RecordError{Path: path, Off: -1, Msg: fmt.Sprintf("not a record (%d bytes, %v)", st.Size(), st.Mode().Type())}
	}
	rec := make([]byte, st.Size())
	if _, err := io.ReadFull(f, rec); err != nil {
		return nil, fmt.Errorf("undo record %s: %w", path, err)
	}
	if string(rec[:8]) != undoMagic {
		return nil, &RecordError{Path: path, Off: 0, Msg: fmt.Sprintf("magic %q, want %q", rec[:8], undoMagic)}
	}
	body := rec[:len(rec)-sha256.Size]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], rec[len(body):]) {
		return nil, &RecordError{Path: path, Off: int64(len(body)), Msg: "checksum mismatch (the record is damaged)"}
	}
	size := binary.LittleEndian.Uint64(rec[8:])
	off := binary.LittleEndian.Uint64(rec[16:])
	n := binary.LittleEndian.Uint64(rec[24:])
	if n != uint64(len(rec)-undoFixed)/2 || uint64(len(rec)-undoFixed)%2 != 0 {
		return nil, &RecordError{Path: path, Off: 24, Msg: fmt.Sprintf("length %d does not match the record's size %d", n, len(rec))}
	}
	if size > 1<<62 || off > size || n > size-off {
		return nil, &RecordError{Path: path, Off: 8, Msg: fmt.Sprintf("range %d+%d is outside a file of %d bytes", off, n, size)}
	}
	runs := rec[32 : 32+2*n]
	return &record{size: int64(size), off: int64(off), old: runs[:n], new: runs[n:]}, nil
}

// Recover finishes an in-place edit of path that a dead writer left
// unfinished: when an undo record exists it takes the write lease, puts
// the old bytes back and removes the record. It reports whether there was
// one. Without a record it only looks for it (one stat).
func Recover(path string) (bool, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	if _, err := os.Lstat(UndoPath(real)); errors.Is(err, iofs.ErrNotExist) {
		return false, nil
	}
	f, err := os.OpenFile(real, os.O_RDWR, 0)
	if err != nil {
		return false, fmt.Errorf("%s: an in-place edit was interrupted, and the file cannot be opened to undo it: %w", path, err)
	}
	defer f.Close()
	if err := lease(f); err != nil {
		return false, fmt.Errorf("an in-place edit was interrupted: %w", leaseError(path, err))
	}
	defer unlease(f)
	return recoverWith(f, real)
}

// recoverWith is Recover on the file f (leased) at path real.
func recoverWith(f *os.File, real string) (bool, error) {
	undo := UndoPath(real)
	r, err := readRecord(undo)
	if r == nil || err != nil {
		return false, err
	}
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	if st.Size() != r.size {
		return false, &RecordError{Path: undo, Off: -1, Msg: fmt.Sprintf("it is for a file of %d bytes, %s has %d (replaced since?)", r.size, real, st.Size())}
	}
	cur := make([]byte, len(r.old))
	if _, err := f.ReadAt(cur, r.off); err != nil {
		return false, err
	}
	for i := range cur {
		if cur[i] != r.old[i] && cur[i] != r.new[i] {
			return false, &RecordError{Path: undo, Off: r.off + int64(i), Msg: fmt.Sprintf("%s holds a byte that is neither the old nor the new one (changed since?)", real)}
		}
	}
	if !bytes.Equal(cur, r.old) {
		if _, err := f.WriteAt(r.old, r.off); err != nil {
			return false, err
		}
		if err := f.Sync(); err != nil {
			return false, err
		}
	}
	if err := os.Remove(undo); err != nil {
		return false, err
	}
	atomicfile.SyncDir(filepath.Dir(undo))
	return true, nil
}
