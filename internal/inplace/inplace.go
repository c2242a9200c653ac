package inplace

import (
	"bytes"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ptekit/ptekit/internal/atomicfile"
	"github.com/ptekit/ptekit/internal/undorecord"
)

// ErrBusy is the refusal of an edit (or a recovery) of a file that another
// open file description holds: another process has it open or mapped.
var ErrBusy = errors.New("the file is open or mapped by another process")

// ErrLeaseBroken is the refusal to write a file whose write lease is no
// longer held: another process opened it during the edit, and the kernel
// broke the lease (at once for a waiting opener, or when
// /proc/sys/fs/lease-break-time passed while the editor was stopped).
var ErrLeaseBroken = errors.New("the write lease was broken: another process opened the file during the edit")

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

// Edit is a file open for in-place writes, under a write lease.
type Edit struct {
	path string // resolved
	f    *os.File
	size int64
	// seen is when the lease was last seen whole (taken, or F_GETLEASE
	// said F_WRLCK); grace is how long after that the kernel cannot yet
	// have broken it (lease-break-time, less a margin; see guard).
	seen  time.Time
	grace time.Duration
}

// openLeased opens path (through symbolic links) for writing and takes the
// write lease.
func openLeased(path string) (*Edit, error) {
	if err := atomicfile.CheckLink(path); err != nil {
		return nil, err
	}
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
	e := &Edit{path: real, f: f, size: st.Size(), grace: leaseGrace()}
	if err := e.lease(); errors.Is(err, ErrBusy) {
		f.Close()
		return nil, fmt.Errorf("%s: %w; it is not changed in place while ExecuTorch or another program may be reading it (close it, or re-bake to another file)", path, ErrBusy)
	} else if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: cannot take a write lease: %w", path, err)
	}
	return e, nil
}

// lease takes the write lease (again).
func (e *Edit) lease() error {
	if err := lease(e.f); err != nil {
		return err
	}
	e.seen = time.Now()
	return nil
}

// Open opens path for an in-place edit: it takes the write lease (ErrBusy,
// wrapped, when another process has the file open or mapped) and applies
// the undo record an edit that a dead writer left unfinished (see
// Recover). Close ends the edit.
func Open(path string) (*Edit, error) {
	e, err := openLeased(path)
	if err != nil {
		return nil, err
	}
	if _, err := e.recover(); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
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

// guard is called before every write of the file: it fails with
// ErrLeaseBroken unless the lease still holds every other opener off.
// F_GETLEASE says F_WRLCK while nobody wants the file. Once another open
// begins to break the lease, it says the type the lease is broken to, both
// while that open waits (the editor may still write: the opener sees
// nothing before the lease is given up) and after the kernel gave up
// waiting (lease-break-time passed while the editor was stopped or
// stalled: the opener may be reading). The two are told apart by time: a
// lease seen whole less than lease-break-time ago (less a margin) cannot
// have been broken yet. Otherwise no byte is written.
func (e *Edit) guard() error {
	held, err := leaseHeld(e.f)
	now := time.Now()
	switch {
	case err == nil && held:
		e.seen = now
		return nil
	case err == nil && now.Sub(e.seen) < e.grace:
		return nil // being broken: the opener still waits
	}
	return ErrLeaseBroken
}

// graceMargin is taken off lease-break-time: the kernel starts counting
// when the breaking open begins, after guard last saw the lease whole.
const graceMargin = 100 * time.Millisecond

// leaseGrace is lease-break-time less graceMargin; 0 (no write once a
// break begins) when it cannot be read.
func leaseGrace() time.Duration {
	b, err := os.ReadFile("/proc/sys/fs/lease-break-time")
	if err != nil {
		return 0
	}
	s, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || s <= 0 {
		return 0
	}
	return max(time.Duration(s)*time.Second-graceMargin, 0)
}

// WriteAt replaces the bytes at off with b, crash-safely: undo record
// first, then the bytes, sync, then the record goes. It never changes the
// file's size. It returns whether anything changed (false when the bytes
// were already b). Before each write of the file it checks that the lease
// is still held (guard); on a failure after the record was written, it
// backs out (backOut): the old bytes are put back when that is safe, else
// the record stays for Recover and the error says so.
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
	if err := e.guard(); err != nil {
		return false, fmt.Errorf("%s: %w (the file is unchanged)", e.path, err)
	}
	undo := undorecord.Path(e.path)
	if err := writeRecord(undo, e.size, off, old, b); err != nil {
		return false, err
	}
	hook(StepUndoWritten)
	if err := e.write(b, off); err != nil {
		return false, e.backOut(undo, old, off, err)
	}
	hook(StepSynced)
	if err := removeRecord(undo); err != nil {
		return true, fmt.Errorf("%s: the edit is complete, but its undo record %s stays: %w", e.path, undo, err)
	}
	hook(StepUndoRemoved)
	return true, nil
}

func (e *Edit) write(b []byte, off int64) error {
	if Hook != nil {
		// Two writes, so that a test can stop the writer between them.
		h := len(b) / 2
		if err := e.guard(); err != nil {
			return err
		}
		if _, err := e.f.WriteAt(b[:h], off); err != nil {
			return err
		}
		hook(StepPartial)
		b, off = b[h:], off+int64(h)
	}
	if err := e.guard(); err != nil {
		return err
	}
	if _, err := e.f.WriteAt(b, off); err != nil {
		return err
	}
	hook(StepWritten)
	return e.f.Sync()
}

// backOut undoes a write of old's range at off that failed with cause.
// The old bytes go back while the lease still holds other openers off
// (guard). When it may not (the kernel broke it: the editor was stopped),
// they go back only under the lease taken again, which the kernel grants
// only when no one else has the file open; otherwise nothing more is
// written and the record stays for Recover.
func (e *Edit) backOut(undo string, old []byte, off int64, cause error) error {
	if e.guard() != nil {
		if lerr := e.lease(); lerr != nil {
			return fmt.Errorf("%s: %w; it may be half written, and is not written again while another process has it open: its undo record %s stays (run pteexport --recover %s once nothing has the file open)",
				e.path, cause, undo, e.path)
		}
	}
	if rerr := e.rollback(undo, old, off); rerr != nil {
		return fmt.Errorf("%s: %w; putting the old bytes back failed too (%v): run pteexport --recover %s", e.path, cause, rerr, e.path)
	}
	return fmt.Errorf("%s: %w (the old bytes are back: the file is unchanged)", e.path, cause)
}

// rollback puts the old bytes back at off, syncs them and removes the
// undo record: what an edit that failed, and a recovery, end with.
func (e *Edit) rollback(undo string, old []byte, off int64) error {
	if _, err := e.f.WriteAt(old, off); err != nil {
		return err
	}
	if err := e.f.Sync(); err != nil {
		return err
	}
	return removeRecord(undo)
}

// removeRecord removes the undo record and makes its removal durable.
func removeRecord(undo string) error {
	if err := os.Remove(undo); err != nil {
		return err
	}
	atomicfile.SyncDir(filepath.Dir(undo))
	return nil
}

// writeRecord writes the undo record atomically: it is complete and synced
// (with its directory) when it has a name. It is made readable and
// writable by its owner only, as Recover requires of a record it applies.
func writeRecord(path string, size, off int64, old, new []byte) error {
	out, err := atomicfile.Create(path, &atomicfile.Options{NoOverwrite: true})
	if err == nil {
		defer out.Abort()
		// With NoOverwrite, Commit replaces no file, so it keeps these bits.
		err = out.OSFile().Chmod(0o600)
	}
	if err == nil {
		_, err = out.Write(undorecord.Encode(size, off, old, new))
	}
	if err == nil {
		err = out.Commit()
	}
	if err != nil {
		return fmt.Errorf("writing the undo record: %w", err)
	}
	return nil
}

// Recover finishes an in-place edit of path that a dead writer left
// unfinished: when an undo record exists it takes the write lease, checks
// the record (undorecord.Read: a regular file owned by the file's owner,
// root or this user, writable by nobody else, whose header and checksum
// are sound, about a file of this size), checks that every byte of its
// range in the file is the old or the new one, puts the old bytes back and
// removes the record. It reports whether there was one. Without a record
// it only looks for it (one stat); a path that does not exist is an error.
func Recover(path string) (bool, error) {
	if err := atomicfile.CheckLink(path); err != nil {
		return false, err
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false, fmt.Errorf("nothing to recover: %w", err)
	}
	if _, err := os.Lstat(undorecord.Path(real)); errors.Is(err, iofs.ErrNotExist) {
		if _, err := os.Stat(real); err != nil {
			return false, err
		}
		return false, nil
	}
	e, err := openLeased(path)
	if err != nil {
		return false, fmt.Errorf("%s: an in-place edit was interrupted, and the file cannot be opened to undo it: %w", path, err)
	}
	defer e.Close()
	return e.recover()
}

// recover is Recover on the leased file of e.
func (e *Edit) recover() (bool, error) {
	f, real := e.f, e.path
	undo := undorecord.Path(real)
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	r, err := undorecord.Read(undo, st)
	if r == nil || err != nil {
		return false, err
	}
	isOld, err := r.Matches(f, real, undo)
	if err != nil {
		return false, err
	}
	if isOld {
		err = removeRecord(undo)
	} else if err = e.guard(); err != nil {
		return false, fmt.Errorf("%s: %w; the undo record %s stays", real, err, undo)
	} else {
		err = e.rollback(undo, r.Old, r.Off)
	}
	return err == nil, err
}
