package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// Options controls Create. The zero value replaces any existing file.
type Options struct {
	// NoOverwrite refuses an existing destination: Create fails at once,
	// and Commit fails, leaving the other file alone, when the name
	// appeared meanwhile. The error wraps fs.ErrExist.
	NoOverwrite bool
	// Inputs are the files the output is made from. An output that is one
	// of them, by path, symbolic link or hard link, is refused with an
	// *InputError.
	Inputs []string
	// InPlace is an input the output may replace when both name the same
	// path: a rewrite in place, such as pteexport --from X -o X. Another
	// name for it (a symbolic or hard link) is refused as for Inputs.
	InPlace string
}

// Error is an output that cannot be created or put in place, said in the
// terms of the path the caller gave (never a temporary name).
type Error struct {
	Path string // the destination, as given to Create
	Msg  string // the whole message, e.g. "directory /out does not exist"
	Err  error  // the cause: fs.ErrNotExist, fs.ErrExist, a syscall.Errno, ...
}

// Error returns e.Msg.
func (e *Error) Error() string { return e.Msg }

// Unwrap returns e.Err.
func (e *Error) Unwrap() error { return e.Err }

// File is an output being written. Nothing exists at its destination
// until Commit; Abort (or an error in Commit) discards it.
type File struct {
	f      *os.File
	path   string // the destination as given
	target string // the destination with symbolic links resolved
	tmp    string // the hidden temporary name; "" for an unnamed file
	o      Options
	inputs []input
	// pending are the inputs of an output that did not exist at Create,
	// compared with it at Commit only if it exists by then.
	pending []string
	ctx     context.Context
	stop    func() bool // stops the context's abort; nil without one

	mu    sync.Mutex
	state int
}

const (
	stateOpen = iota
	stateCommitted
	stateAborted
)

// errFinished is returned by Commit on a File already committed or aborted.
var errFinished = errors.New("atomicfile: file already committed or aborted")

// testForceFallback makes Create use the portable temporary file + rename
// path on Linux too (tests of that path).
var testForceFallback bool

// Create starts writing the file at path. It fails at once, without
// creating anything, when the directory does not exist, when path is a
// directory or another non-regular file or a symbolic link to nothing,
// when it is a symbolic link owned by another user in a sticky directory
// writable by others (which the kernel's fs.protected_symlinks would not
// follow), when it exists and opts.NoOverwrite is set, and when it is one
// of opts.Inputs. A nil opts means the zero Options.
func Create(path string, opts *Options) (*File, error) {
	return CreateContext(context.Background(), path, opts)
}

// CreateContext is Create with a context: when ctx is done before Commit,
// the file is discarded at once (a write in progress fails at its next
// system call) and writes and Commit return context.Cause(ctx), which for
// NotifyInterrupt's context is an *InterruptError.
func CreateContext(ctx context.Context, path string, opts *Options) (*File, error) {
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	target, st, err := resolve(path)
	if err != nil {
		return nil, err
	}
	inputs := o.Inputs
	inPlace := o.InPlace != "" && samePath(path, o.InPlace)
	if o.InPlace != "" && !inPlace {
		inputs = append(inputs[:len(inputs):len(inputs)], o.InPlace)
	}
	// A new output cannot be an input yet: its inputs are stat'ed only if
	// it exists when Commit comes (an export of 65536 engines would stat
	// each for nothing).
	var ins []input
	pending := inputs
	if st != nil {
		if ins, err = checkInputs(path, st, inputs); err != nil {
			return nil, err
		}
		pending = nil
		if o.NoOverwrite {
			return nil, existError(path)
		}
		if !inPlace {
			// The file to be replaced (not one being rewritten, which is
			// read while the output is written) need not stay cached.
			dropCached(target, st)
		}
	}
	f := &File{path: path, target: target, o: o, inputs: ins, pending: pending, ctx: ctx}
	if err := f.open(); err != nil {
		return nil, err
	}
	if ctx.Done() != nil {
		f.stop = context.AfterFunc(ctx, f.cancel)
	}
	return f, nil
}

// open creates the unnamed file, or where that is not possible the
// hidden temporary file.
func (f *File) open() error {
	dir := filepath.Dir(f.target)
	if !testForceFallback {
		tf, err := openUnnamed(dir, f.path)
		if err == nil {
			f.f = tf
			return nil
		}
		if !errors.Is(err, errors.ErrUnsupported) {
			return dirError(f.path, dir, err)
		}
	}
	for range 100 {
		name := hiddenName(f.target)
		tf, err := openNamed(name, f.path)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return dirError(f.path, dir, err)
		}
		f.f, f.tmp = tf, name
		return nil
	}
	return &Error{Path: f.path, Msg: fmt.Sprintf("cannot create a temporary file in %s", dir), Err: fs.ErrExist}
}

// hiddenName returns a fresh hidden name next to target: .NAME.tmp-N.
func hiddenName(target string) string {
	dir, base := filepath.Split(target)
	return filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(rand.Uint64()%1e12, 10))
}

// Name returns the destination path, as given to Create.
func (f *File) Name() string { return f.path }

// OSFile returns the file being written, for code that needs an *os.File
// (copy_file_range, Stat). Write to it freely; do not Close, Chmod or
// rename it: Commit and Abort own its life.
func (f *File) OSFile() *os.File { return f.f }

// Write writes p to the file.
func (f *File) Write(p []byte) (int, error) {
	n, err := f.f.Write(p)
	return n, f.writeErr(err)
}

// ReadFrom copies r to the file until EOF, inside the kernel when r is a
// file and the system can (copy_file_range, sendfile).
func (f *File) ReadFrom(r io.Reader) (int64, error) {
	n, err := f.f.ReadFrom(r)
	return n, f.writeErr(err)
}

// writeErr turns the error of a write cut short by the context into the
// context's cause, and names the destination instead of a temporary file.
func (f *File) writeErr(err error) error {
	if err == nil {
		return nil
	}
	if f.ctx.Err() != nil {
		return context.Cause(f.ctx)
	}
	if pe, ok := errors.AsType[*fs.PathError](err); ok && f.tmp != "" && pe.Path == f.tmp {
		pe.Path = f.path
	}
	return err
}

// Commit puts the file in place: it checks the destination again (inputs,
// NoOverwrite, file type), gives the file the permission bits of the file
// it replaces, syncs it, links or renames it into place and syncs the
// directory. On error the file is discarded and the destination is left as
// it was. Commit after Commit or Abort is an error.
func (f *File) Commit() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state != stateOpen {
		if f.ctx.Err() != nil {
			return context.Cause(f.ctx)
		}
		return errFinished
	}
	if f.stop != nil && !f.stop() {
		// The context ended; its abort is running or has run.
		f.abortLocked()
		return context.Cause(f.ctx)
	}
	f.stop = nil
	if err := f.commit(); err != nil {
		f.abortLocked()
		return err
	}
	f.state = stateCommitted
	f.f.Close() // the data is synced and in place: nothing left to report
	SyncDir(filepath.Dir(f.target))
	return nil
}

func (f *File) commit() error {
	st, err := os.Stat(f.target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st = nil
	case err != nil:
		return &Error{Path: f.path, Msg: fmt.Sprintf("cannot write %s: %v", f.path, errnoOf(err)), Err: err}
	case !st.Mode().IsRegular():
		return notRegular(f.path, st)
	case f.o.NoOverwrite:
		return existError(f.path)
	}
	if st != nil {
		for _, in := range f.inputs {
			if os.SameFile(st, in.st) {
				return newInputError(f.path, in.path)
			}
		}
		if _, err := checkInputs(f.path, st, f.pending); err != nil {
			return err
		}
		if err := f.f.Chmod(st.Mode().Perm()); err != nil {
			return err
		}
	}
	if err := f.f.Sync(); err != nil {
		return f.writeErr(err)
	}
	if f.tmp != "" {
		return f.renameNamed()
	}
	return f.linkUnnamed(st != nil)
}

// linkUnnamed gives the unnamed file its name. A new destination is
// linked directly (atomic, and refusing a name that appeared meanwhile);
// an existing one is replaced through a hidden name and a rename, since
// linkat cannot replace a name.
func (f *File) linkUnnamed(exists bool) error {
	if !exists || f.o.NoOverwrite {
		err := linkUnnamed(f.f, f.target)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, fs.ErrExist):
			return f.placeError(err)
		case f.o.NoOverwrite:
			return existError(f.path)
		}
		// The name appeared since the Stat: replace it as any other.
	}
	for range 100 {
		name := hiddenName(f.target)
		err := linkUnnamed(f.f, name)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return f.placeError(err)
		}
		// A SIGKILL between the link and the rename leaves name behind:
		// the one window in which this package leaves litter on Linux.
		if err := os.Rename(name, f.target); err != nil {
			os.Remove(name)
			return f.placeError(err)
		}
		return nil
	}
	return &Error{Path: f.path, Msg: fmt.Sprintf("cannot name a temporary file next to %s", f.path), Err: fs.ErrExist}
}

// renameNamed moves the hidden temporary file to the destination. With
// NoOverwrite it hard-links instead (which fails if the name exists) and
// removes the temporary name; where hard links do not work it checks and
// renames.
func (f *File) renameNamed() error {
	if err := f.f.Close(); err != nil {
		return f.writeErr(err)
	}
	if f.o.NoOverwrite {
		err := os.Link(f.tmp, f.target)
		switch {
		case err == nil:
			os.Remove(f.tmp)
			f.tmp = ""
			return nil
		case errors.Is(err, fs.ErrExist):
			return existError(f.path)
		}
		if _, err := os.Lstat(f.target); err == nil {
			return existError(f.path)
		}
	}
	if err := os.Rename(f.tmp, f.target); err != nil {
		return f.placeError(err)
	}
	f.tmp = ""
	return nil
}

// placeError reports a failure to put the file in place.
func (f *File) placeError(err error) error {
	return &Error{Path: f.path, Msg: fmt.Sprintf("cannot create %s: %v", f.path, errnoOf(err)), Err: err}
}

// Abort discards the file: the destination is left as it was. It does
// nothing after Commit or a previous Abort, so `defer f.Abort()` is safe.
// The error is that of removing a temporary file, if any.
func (f *File) Abort() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state != stateOpen {
		return nil
	}
	if f.stop != nil {
		f.stop()
	}
	return f.abortLocked()
}

// cancel is the context's abort.
func (f *File) cancel() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state == stateOpen {
		f.abortLocked()
	}
}

func (f *File) abortLocked() error {
	f.state = stateAborted
	f.f.Close()
	if f.tmp == "" {
		return nil
	}
	err := os.Remove(f.tmp)
	f.tmp = ""
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// CheckLink refuses path when it is a symbolic link that another user
// planted in a sticky shared directory (see Create): for the commands
// that write a file where it is (an in-place edit), which must not follow
// such a link either. Any other path, or one that cannot be looked at, is
// no error here.
func CheckLink(path string) error {
	lst, err := os.Lstat(path)
	if err != nil || lst.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	return plantedLink(path, lst)
}

// resolve checks the destination and returns the file to replace (path
// with symbolic links resolved) and its FileInfo, nil when it does not
// exist yet.
func resolve(path string) (string, fs.FileInfo, error) {
	lst, err := os.Lstat(path)
	switch {
	case err == nil && lst.Mode()&fs.ModeSymlink != 0:
		if err := plantedLink(path, lst); err != nil {
			return "", nil, err
		}
		target, err := filepath.EvalSymlinks(path)
		if errors.Is(err, fs.ErrNotExist) {
			link, _ := os.Readlink(path)
			return "", nil, &Error{Path: path, Err: fs.ErrNotExist,
				Msg: fmt.Sprintf("%s is a symbolic link to %s, which does not exist", path, link)}
		}
		var st fs.FileInfo
		if err == nil {
			st, err = os.Stat(target)
		}
		if err != nil {
			return "", nil, &Error{Path: path, Msg: fmt.Sprintf("cannot follow the symbolic link %s: %v", path, errnoOf(err)), Err: err}
		}
		if !st.Mode().IsRegular() {
			return "", nil, notRegular(path, st)
		}
		return target, st, nil
	case err == nil:
		if !lst.Mode().IsRegular() {
			return "", nil, notRegular(path, lst)
		}
		return path, lst, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		dir := filepath.Dir(path)
		if st, derr := os.Stat(dir); derr != nil {
			return "", nil, dirError(path, dir, derr)
		} else if !st.IsDir() {
			return "", nil, &Error{Path: path, Msg: fmt.Sprintf("%s is not a directory", dir), Err: syscall.ENOTDIR}
		}
		return path, nil, nil
	}
	return "", nil, &Error{Path: path, Msg: fmt.Sprintf("cannot write %s: %v", path, errnoOf(err)), Err: err}
}

// dirError says why no file can be created in dir.
func dirError(path, dir string, err error) error {
	msg := fmt.Sprintf("cannot create files in directory %s: %v", dir, errnoOf(err))
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		msg = fmt.Sprintf("directory %s does not exist", dir)
	case errors.Is(err, fs.ErrPermission):
		msg = fmt.Sprintf("cannot create files in directory %s: permission denied", dir)
	case errors.Is(err, syscall.EROFS):
		msg = fmt.Sprintf("cannot create files in directory %s: read-only file system", dir)
	}
	return &Error{Path: path, Msg: msg, Err: err}
}

// existError is the NoOverwrite refusal.
func existError(path string) error {
	return &Error{Path: path, Msg: fmt.Sprintf("%s already exists", path), Err: fs.ErrExist}
}

// notRegular refuses a destination that is not a regular file.
func notRegular(path string, st fs.FileInfo) error {
	what := "not a regular file"
	switch m := st.Mode(); {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe, not a regular file"
	case m&fs.ModeDevice != 0:
		what = "a device, not a regular file"
	case m&fs.ModeSocket != 0:
		what = "a socket, not a regular file"
	}
	return &Error{Path: path, Msg: fmt.Sprintf("%s is %s", path, what), Err: syscall.EINVAL}
}

// errnoOf strips the path from a *PathError or *LinkError so that a
// message names only the paths the caller gave.
func errnoOf(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	if le, ok := errors.AsType[*os.LinkError](err); ok {
		return le.Err
	}
	return err
}

// SyncDir makes a change of the names in dir (a file created, linked or
// removed) durable, as Commit does for the output's name. Errors are
// ignored: some file systems cannot sync a directory, and the file itself
// is complete.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
