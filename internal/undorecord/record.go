package undorecord

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
)

// Magic starts an undo record; the digit is the layout's version.
const Magic = "PTEUNDO1"

// HeaderSize is the size of a record's fixed header: the magic, then the
// edited file's size, the offset and the length of the range, each a
// little-endian uint64.
const HeaderSize = 8 + 3*8

// Fixed is the size of a record without its two byte runs: the header and
// the SHA-256 of everything before it.
const Fixed = HeaderSize + sha256.Size

// MaxRun bounds the range of one record: an in-place edit rewrites a
// program's head, at most its flatbuffer region, which no reader accepts
// beyond 2 GiB. A header stating more is refused before anything else of
// the record is read.
const MaxRun = 1 << 31

// Path is the name of the undo record of the file path (resolved through
// symbolic links by the callers): ".NAME.pteundo" beside it.
func Path(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".pteundo")
}

// Encode lays an undo record out: the header (magic, the file's size, the
// offset and length of the range), the range's old bytes, its new bytes,
// and the SHA-256 of all that. old and new have one length.
func Encode(size, off int64, old, new []byte) []byte {
	rec := make([]byte, 0, Fixed+len(old)+len(new))
	rec = append(rec, Magic...)
	rec = binary.LittleEndian.AppendUint64(rec, uint64(size))
	rec = binary.LittleEndian.AppendUint64(rec, uint64(off))
	rec = binary.LittleEndian.AppendUint64(rec, uint64(len(old)))
	rec = append(rec, old...)
	rec = append(rec, new...)
	sum := sha256.Sum256(rec)
	return append(rec, sum[:]...)
}

// Record is a checked undo record: the bytes Old of the file at Off were
// being replaced by New (of the same length) in a file of Size bytes.
type Record struct {
	Size, Off int64
	Old, New  []byte
}

// Error is an undo record that is not applied: not trusted, damaged, or
// not about the file as it is now. The record is left where it is.
type Error struct {
	// Path is the undo record.
	Path string
	// Off is the byte offset in the record (or in the file, for a
	// mismatch) where the problem is; -1 when it concerns the whole record.
	Off int64
	// Msg says what is wrong.
	Msg string
}

// Error says which record is wrong, where, and what to do about it.
func (e *Error) Error() string {
	at := ""
	if e.Off >= 0 {
		at = fmt.Sprintf("at byte %d: ", e.Off)
	}
	return fmt.Sprintf("undo record %s: %s%s; it is left for you to inspect (remove it when the file is known good)", e.Path, at, e.Msg)
}

// header is a record's fixed header, as stored.
type header struct {
	size, off, n uint64
}

// checkHeader checks the fixed header hdr of a record of recSize bytes at
// path against the edited file's size: the magic, the range inside the
// file and within MaxRun, and the record's size the one the range makes.
func checkHeader(path string, hdr []byte, recSize, fileSize int64) (header, error) {
	if string(hdr[:8]) != Magic {
		return header{}, &Error{Path: path, Off: 0, Msg: fmt.Sprintf("magic %q, want %q (not an undo record)", hdr[:8], Magic)}
	}
	h := header{
		size: binary.LittleEndian.Uint64(hdr[8:]),
		off:  binary.LittleEndian.Uint64(hdr[16:]),
		n:    binary.LittleEndian.Uint64(hdr[24:]),
	}
	switch {
	case h.size != uint64(fileSize):
		return header{}, &Error{Path: path, Off: 8, Msg: fmt.Sprintf("it is for a file of %d bytes, the file has %d (replaced since?)", h.size, fileSize)}
	case h.off > h.size || h.n > h.size-h.off:
		return header{}, &Error{Path: path, Off: 16, Msg: fmt.Sprintf("range %d+%d is outside a file of %d bytes", h.off, h.n, h.size)}
	case h.n > MaxRun:
		return header{}, &Error{Path: path, Off: 24, Msg: fmt.Sprintf("range of %d bytes, more than an in-place edit writes (%d)", h.n, MaxRun)}
	case uint64(recSize) != Fixed+2*h.n:
		return header{}, &Error{Path: path, Off: 24, Msg: fmt.Sprintf("a range of %d bytes makes a record of %d bytes, not %d", h.n, Fixed+2*h.n, recSize)}
	}
	return h, nil
}

// decode reads and checks the record of recSize bytes that r holds, for a
// file of fileSize bytes: the header first (checkHeader), then the rest,
// whose size the header fixed, and its checksum.
func decode(path string, r io.ReaderAt, recSize, fileSize int64) (*Record, error) {
	if recSize < Fixed {
		return nil, &Error{Path: path, Off: -1, Msg: fmt.Sprintf("%d bytes, shorter than an undo record's fixed %d (not a record)", recSize, Fixed)}
	}
	var hdr [HeaderSize]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return nil, fmt.Errorf("undo record %s: %w", path, err)
	}
	h, err := checkHeader(path, hdr[:], recSize, fileSize)
	if err != nil {
		return nil, err
	}
	rec := make([]byte, recSize) // Fixed + 2n, n within the file and MaxRun
	if _, err := r.ReadAt(rec, 0); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // it shrank since
		}
		return nil, fmt.Errorf("undo record %s: %w", path, err)
	}
	body := rec[:len(rec)-sha256.Size]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], rec[len(body):]) {
		return nil, &Error{Path: path, Off: int64(len(body)), Msg: "checksum mismatch (the record is damaged)"}
	}
	if !bytes.Equal(body[:HeaderSize], hdr[:]) {
		return nil, &Error{Path: path, Off: 0, Msg: "the header changed while it was read"}
	}
	runs := body[HeaderSize:]
	return &Record{Size: int64(h.size), Off: int64(h.off), Old: runs[:h.n:h.n], New: runs[h.n:]}, nil
}

// open opens the record at path for reading without following a symbolic
// link and without blocking on a FIFO, and returns it with its FileInfo;
// nil, nil, nil when there is none.
func open(path string) (*os.File, iofs.FileInfo, error) {
	f, err := openNoFollow(path)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		if isSymlinkErr(err) {
			return nil, nil, &Error{Path: path, Off: -1, Msg: "it is a symbolic link, not a record ptekit wrote"}
		}
		return nil, nil, fmt.Errorf("undo record %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("undo record %s: %w", path, err)
	}
	return f, st, nil
}

// trust checks that the record (st) may be applied to the file (file): a
// regular file, owned by the file's owner, by root or by the user running
// this process, writable by nobody else, with one name (not a hard link).
func trust(path string, st, file iofs.FileInfo) error {
	if !st.Mode().IsRegular() {
		return &Error{Path: path, Off: -1, Msg: fmt.Sprintf("not a regular file (%v)", st.Mode().Type())}
	}
	uid, links, ok := owner(st)
	if !ok {
		return &Error{Path: path, Off: -1, Msg: "its owner cannot be told on this system"}
	}
	// root can change the file anyway: its records are trusted too (root
	// re-baking a user's file in place leaves a record the user can apply).
	fileUID, _, _ := owner(file)
	if uid != fileUID && int64(uid) != int64(os.Geteuid()) && uid != 0 {
		return &Error{Path: path, Off: -1, Msg: fmt.Sprintf("owned by uid %d, neither the file's owner (uid %d), nor root, nor the user running this (uid %d)", uid, fileUID, os.Geteuid())}
	}
	if perm := st.Mode().Perm(); perm&0o022 != 0 {
		return &Error{Path: path, Off: -1, Msg: fmt.Sprintf("writable by group or others (mode %04o)", perm)}
	}
	// ptekit writes a record under one name; a second name is a hard link
	// someone made, to a file that may be another's (where the kernel does
	// not protect hard links, anyone who can write the directory can).
	if links != 1 {
		return &Error{Path: path, Off: -1, Msg: fmt.Sprintf("it has %d names (a hard link), not a record ptekit wrote", links)}
	}
	return nil
}

// Read reads and checks the undo record at path for the file whose
// FileInfo is file, in this order: that the record is a regular file, not
// a symbolic link, owned by the file's owner, by root or by the user
// running this, not writable by group or others, not a hard link; its header (magic, the file's size, the
// range inside the file, no more than MaxRun, the record's size); its
// checksum. It returns nil, nil when there is no record, and an *Error
// for a record that fails a check. It never reads more than the header
// before the lengths are known to be sane.
func Read(path string, file iofs.FileInfo) (*Record, error) {
	f, st, err := open(path)
	if f == nil || err != nil {
		return nil, err
	}
	defer f.Close()
	if err := trust(path, st, file); err != nil {
		return nil, err
	}
	return decode(path, f, st.Size(), file.Size())
}

// Matches checks that every byte of r's range in the file f (at path) is
// r's old byte or its new one, as a write cut off anywhere leaves it; a
// file replaced since fails, with an *Error naming the first byte that is
// neither (undo is the record's path). It returns whether the range holds
// the old bytes already.
func (r *Record) Matches(f io.ReaderAt, path, undo string) (bool, error) {
	cur := make([]byte, len(r.Old))
	if _, err := f.ReadAt(cur, r.Off); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	for i := range cur {
		if cur[i] != r.Old[i] && cur[i] != r.New[i] {
			return false, &Error{Path: undo, Off: r.Off + int64(i), Msg: fmt.Sprintf("%s holds a byte that is neither the old nor the new one (changed since?)", path)}
		}
	}
	return bytes.Equal(cur, r.Old), nil
}

// ProbeWhole bounds the records Probe checks whole (checksum, and the
// file's bytes against the record): an in-place edit's record holds the
// program's head twice, a few KiB to a few MiB. A larger record, which
// only someone other than ptekit could have written this big, gets the
// look's other checks only, so that a planted record costs a viewer no
// more than this.
const ProbeWhole = 16 << 20

// Notice is what Probe found beside a file: an undo record, and whether
// pteexport --recover would take it.
type Notice struct {
	// Record is the record's path.
	Record string
	// Refused, when not empty, says why --recover would refuse the record
	// (not trusted, not a record, not about this file).
	Refused string
}

// Message says, for a person looking at the file named name, what lies
// beside it and what to do.
func (n *Notice) Message(name string) string {
	if n.Refused == "" {
		return fmt.Sprintf("an in-place re-bake of this file was interrupted: its undo record %s lies beside it; "+
			"the file is read as it is, possibly half re-baked, and is not changed (pteexport --recover %s puts the old bytes back)", n.Record, name)
	}
	return fmt.Sprintf("a file named like the undo record of an in-place re-bake, %s, lies beside this file, "+
		"and pteexport --recover would refuse it (%s); the file is read as it is (remove the record when the file is known good)", n.Record, n.Refused)
}

// Probe looks for the undo record of the file path, without writing
// anything: nil when there is none (or path cannot be resolved), else a
// Notice. It costs an lstat when there is no record; when there is one, an
// open, an fstat and a read of the fixed header, and, for a record of up
// to ProbeWhole bytes whose header is sound, a read of the record and of
// its range of the file (opened read-only) to check them as Recover does.
func Probe(path string) *Notice {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil
	}
	undo := Path(real)
	if _, err := os.Lstat(undo); err != nil {
		return nil
	}
	n := &Notice{Record: undo}
	file, err := os.Stat(real)
	if err != nil {
		return nil
	}
	f, st, err := open(undo)
	if f == nil && err == nil {
		return nil // gone since
	}
	if err == nil {
		defer f.Close()
		err = probe(f, st, file, undo, real)
	}
	if err != nil {
		n.Refused = reason(err)
	}
	return n
}

// probe checks the record f (st) of the file real (file) as Probe says,
// in Recover's order.
func probe(f *os.File, st, file iofs.FileInfo, undo, real string) error {
	if err := trust(undo, st, file); err != nil {
		return err
	}
	if st.Size() < Fixed {
		return fmt.Errorf("%d bytes, not a record", st.Size())
	}
	var hdr [HeaderSize]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return err
	}
	if _, err := checkHeader(undo, hdr[:], st.Size(), file.Size()); err != nil || st.Size() > ProbeWhole {
		return err
	}
	// What --recover checks next: the checksum, and the file's bytes.
	r, err := decode(undo, f, st.Size(), file.Size())
	if err != nil {
		return err
	}
	ff, err := os.Open(real)
	if err != nil {
		return err
	}
	defer ff.Close()
	_, err = r.Matches(ff, real, undo)
	return err
}

// reason is the message of err without the record's name and advice,
// which a Notice gives once.
func reason(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Msg
	}
	return err.Error()
}
