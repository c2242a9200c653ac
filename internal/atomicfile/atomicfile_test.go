package atomicfile

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	timeout = 10 * time.Second
	tick    = time.Millisecond
)

// bothPaths runs fn with the unnamed-file path (where the system has it)
// and with the portable temporary file + rename path.
func bothPaths(t *testing.T, fn func(t *testing.T)) {
	t.Run("native", fn)
	t.Run("fallback", func(t *testing.T) {
		testForceFallback = true
		defer func() { testForceFallback = false }()
		fn(t)
	})
}

// unnamed reports whether this run writes unnamed files.
func unnamed() bool { return runtime.GOOS == "linux" && !testForceFallback }

// names lists dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// write creates path with opts, writes data and commits.
func write(path string, data []byte, opts *Options) error {
	f, err := Create(path, opts)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Commit()
}

func TestCreateCommitAbort(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "out.bin")
		f, err := Create(path, nil)
		require.NoError(t, err)
		assert.Equal(t, path, f.Name())
		_, err = f.Write([]byte("hello "))
		require.NoError(t, err)
		_, err = f.ReadFrom(strings.NewReader("world"))
		require.NoError(t, err)
		_, err = os.Lstat(path)
		assert.ErrorIs(t, err, fs.ErrNotExist, "visible before Commit")
		if unnamed() {
			assert.Empty(t, names(t, dir), "the unnamed file has no name before Commit")
		} else {
			assert.Len(t, names(t, dir), 1, "the hidden temporary file")
		}
		require.NoError(t, f.Commit())
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "hello world", string(got))
		assert.Equal(t, []string{"out.bin"}, names(t, dir))
		assert.NoError(t, f.Abort(), "Abort after Commit does nothing")
		assert.Error(t, f.Commit(), "a second Commit")
		assert.FileExists(t, path)

		// Abort leaves the destination as it was and nothing else.
		f, err = Create(path, nil)
		require.NoError(t, err)
		_, err = f.Write([]byte("discarded"))
		require.NoError(t, err)
		require.NoError(t, f.Abort())
		got, _ = os.ReadFile(path)
		assert.Equal(t, "hello world", string(got))
		assert.Equal(t, []string{"out.bin"}, names(t, dir))
		assert.Error(t, f.Commit(), "Commit after Abort")
		assert.Equal(t, []string{"out.bin"}, names(t, dir))
	})
}

func TestPermissions(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "new.bin")
		require.NoError(t, write(path, []byte("x"), nil))
		st, err := os.Stat(path)
		require.NoError(t, err)
		want := fs.FileMode(0o666) &^ umask(t)
		assert.Equal(t, want, st.Mode().Perm(), "a new file gets 0666 less the umask")

		// A replaced file keeps its permission bits; another hard link to
		// it keeps the old contents.
		require.NoError(t, os.Chmod(path, 0o640))
		other := filepath.Join(dir, "other-link.bin")
		require.NoError(t, os.Link(path, other))
		require.NoError(t, write(path, []byte("y"), nil))
		st, err = os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o640), st.Mode().Perm())
		got, _ := os.ReadFile(other)
		assert.Equal(t, "x", string(got))
		got, _ = os.ReadFile(path)
		assert.Equal(t, "y", string(got))
		assert.ElementsMatch(t, []string{"new.bin", "other-link.bin"}, names(t, dir))
	})
}

func TestSymlinkDestination(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		dir := t.TempDir()
		sub := filepath.Join(dir, "real")
		require.NoError(t, os.Mkdir(sub, 0o755))
		target := filepath.Join(sub, "model.pte")
		require.NoError(t, os.WriteFile(target, []byte("old"), 0o600))
		link := filepath.Join(dir, "link.pte")
		require.NoError(t, os.Symlink("real/model.pte", link))

		// Written through: the target is replaced, the link kept, and the
		// temporary file lived next to the target.
		require.NoError(t, write(link, []byte("new"), nil))
		lst, err := os.Lstat(link)
		require.NoError(t, err)
		assert.NotZero(t, lst.Mode()&fs.ModeSymlink, "the link is kept")
		got, _ := os.ReadFile(target)
		assert.Equal(t, "new", string(got))
		st, _ := os.Stat(target)
		assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm(), "the target's mode")
		assert.Equal(t, []string{"model.pte"}, names(t, sub))
		assert.ElementsMatch(t, []string{"link.pte", "real"}, names(t, dir))

		// A link to nothing is refused, saying so.
		dangling := filepath.Join(dir, "dangling.pte")
		require.NoError(t, os.Symlink("nowhere.pte", dangling))
		_, err = Create(dangling, nil)
		require.Error(t, err)
		assert.Equal(t, dangling+" is a symbolic link to nowhere.pte, which does not exist", err.Error())
		assert.ErrorIs(t, err, fs.ErrNotExist)

		// A link to a directory is refused.
		dirLink := filepath.Join(dir, "dirlink")
		require.NoError(t, os.Symlink("real", dirLink))
		_, err = Create(dirLink, nil)
		assert.EqualError(t, err, dirLink+" is a directory")
		_, err = os.Stat(filepath.Join(dir, "nowhere.pte"))
		assert.ErrorIs(t, err, fs.ErrNotExist, "nothing created at the link's target")
	})
}

// TestErrorsInUserTerms: failures name the paths the caller gave, never a
// temporary file.
func TestErrorsInUserTerms(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		dir := t.TempDir()
		missing := filepath.Join(dir, "out")
		_, err := Create(filepath.Join(missing, "model.pte"), nil)
		require.Error(t, err)
		assert.Equal(t, "directory "+missing+" does not exist", err.Error())
		assert.ErrorIs(t, err, fs.ErrNotExist)
		var ae *Error
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, filepath.Join(missing, "model.pte"), ae.Path)

		_, err = Create(filepath.Join(missing, "deeper", "model.pte"), nil)
		assert.EqualError(t, err, "directory "+filepath.Join(missing, "deeper")+" does not exist")

		file := filepath.Join(dir, "file")
		require.NoError(t, os.WriteFile(file, nil, 0o644))
		_, err = Create(filepath.Join(file, "model.pte"), nil)
		assert.EqualError(t, err, file+" is not a directory")

		_, err = Create(dir, nil)
		assert.EqualError(t, err, dir+" is a directory")

		if runtime.GOOS != "windows" && os.Geteuid() != 0 {
			ro := filepath.Join(dir, "ro")
			require.NoError(t, os.Mkdir(ro, 0o555))
			_, err = Create(filepath.Join(ro, "model.pte"), nil)
			assert.EqualError(t, err, "cannot create files in directory "+ro+": permission denied")
			assert.ErrorIs(t, err, fs.ErrPermission)
		}

		// The directory disappears before Commit.
		gone := filepath.Join(dir, "gone")
		require.NoError(t, os.Mkdir(gone, 0o755))
		f, err := Create(filepath.Join(gone, "model.pte"), nil)
		require.NoError(t, err)
		f.Write([]byte("x"))
		if !unnamed() {
			// The hidden file keeps the directory busy: remove it as a
			// cleaner would, to make the directory removable.
			for _, n := range names(t, gone) {
				os.Remove(filepath.Join(gone, n))
			}
		}
		require.NoError(t, os.Remove(gone))
		err = f.Commit()
		require.Error(t, err)
		assert.NotContains(t, err.Error(), ".tmp")
		assert.Contains(t, err.Error(), filepath.Join(gone, "model.pte"))
	})
}

func TestNoOverwrite(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "out.bin")
		require.NoError(t, os.WriteFile(path, []byte("keep"), 0o644))
		_, err := Create(path, &Options{NoOverwrite: true})
		assert.EqualError(t, err, path+" already exists")
		assert.ErrorIs(t, err, fs.ErrExist)
		require.NoError(t, os.Remove(path))

		// The name appears while the file is written: Commit refuses it
		// and leaves the other file alone.
		f, err := Create(path, &Options{NoOverwrite: true})
		require.NoError(t, err)
		f.Write([]byte("mine"))
		require.NoError(t, os.WriteFile(path, []byte("keep"), 0o644))
		assert.ErrorIs(t, f.Commit(), fs.ErrExist)
		got, _ := os.ReadFile(path)
		assert.Equal(t, "keep", string(got))
		assert.Equal(t, []string{"out.bin"}, names(t, dir))

		// Without NoOverwrite a name that appeared meanwhile is replaced.
		require.NoError(t, os.Remove(path))
		f, err = Create(path, nil)
		require.NoError(t, err)
		f.Write([]byte("mine"))
		require.NoError(t, os.WriteFile(path, []byte("keep"), 0o644))
		require.NoError(t, f.Commit())
		got, _ = os.ReadFile(path)
		assert.Equal(t, "mine", string(got))
		assert.Equal(t, []string{"out.bin"}, names(t, dir))
	})
}

func TestContextCancel(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "out.bin")
		require.NoError(t, os.WriteFile(path, []byte("keep"), 0o644))
		ctx, cancel := context.WithCancel(context.Background())
		f, err := CreateContext(ctx, path, nil)
		require.NoError(t, err)
		_, err = f.Write(bytes.Repeat([]byte{1}, 1<<16))
		require.NoError(t, err)
		cancel()
		// The abort runs in its own goroutine: writes fail once it has.
		require.Eventually(t, func() bool {
			_, err = f.Write([]byte{2})
			return err != nil
		}, timeout, tick)
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, f.Commit(), context.Canceled)
		got, _ := os.ReadFile(path)
		assert.Equal(t, "keep", string(got))
		assert.Equal(t, []string{"out.bin"}, names(t, dir))

		// A context already done creates nothing.
		_, err = CreateContext(ctx, filepath.Join(dir, "other.bin"), nil)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, []string{"out.bin"}, names(t, dir))

		// Cancelled after Commit: nothing happens.
		ctx2, cancel2 := context.WithCancel(context.Background())
		f, err = CreateContext(ctx2, path, nil)
		require.NoError(t, err)
		f.Write([]byte("done"))
		require.NoError(t, f.Commit())
		cancel2()
		got, _ = os.ReadFile(path)
		assert.Equal(t, "done", string(got))
	})
}

func TestInputsRefused(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		dir := t.TempDir()
		in := filepath.Join(dir, "e1.engine")
		require.NoError(t, os.WriteFile(in, []byte("engine"), 0o644))
		sym := filepath.Join(dir, "sym.engine")
		require.NoError(t, os.Symlink("e1.engine", sym))
		hard := filepath.Join(dir, "hard.engine")
		require.NoError(t, os.Link(in, hard))
		other := filepath.Join(dir, "other.engine")
		require.NoError(t, os.WriteFile(other, []byte("other"), 0o644))

		for _, c := range []struct {
			out, in, via, msg string
		}{
			{in, in, "", in + " is the input file"},
			{dir + "/./e1.engine", in, "", dir + "/./e1.engine is the input file " + in},
			{sym, in, "symbolic link", sym + " is the input file " + in + " (through a symbolic link)"},
			{in, sym, "symbolic link", in + " is the input file " + sym + " (through a symbolic link)"},
			{hard, in, "hard link", hard + " is the input file " + in + " (another hard link to it)"},
		} {
			for _, force := range []bool{false, true} {
				_, err := Create(c.out, &Options{Inputs: []string{other, c.in}, NoOverwrite: !force})
				var ie *InputError
				require.ErrorAs(t, err, &ie, "%s over %s", c.out, c.in)
				assert.Equal(t, c.out, ie.Output)
				assert.Equal(t, c.in, ie.Input)
				assert.Equal(t, c.via, ie.Via)
				assert.Equal(t, c.msg, err.Error())
			}
		}
		got, _ := os.ReadFile(in)
		assert.Equal(t, "engine", string(got))
		notInput := func(out string, inputs ...string) error {
			st, err := os.Stat(out)
			if err != nil {
				st = nil
			}
			_, err = checkInputs(out, st, inputs)
			return err
		}
		assert.NoError(t, notInput(other, in, sym, hard))
		assert.NoError(t, notInput(filepath.Join(dir, "new.pte"), in))
		// An input that does not exist is compared by path.
		assert.Error(t, notInput(filepath.Join(dir, "x"), dir+"/./x"))

		// The output becomes an input after Create: Commit refuses it.
		out := filepath.Join(dir, "out.pte")
		f, err := Create(out, &Options{Inputs: []string{in}})
		require.NoError(t, err)
		f.Write([]byte("program"))
		require.NoError(t, os.Link(in, out))
		var ie *InputError
		assert.ErrorAs(t, f.Commit(), &ie)
		got, _ = os.ReadFile(in)
		assert.Equal(t, "engine", string(got))
		names := names(t, dir)
		slices.Sort(names)
		assert.Equal(t, []string{"e1.engine", "hard.engine", "other.engine", "out.pte", "sym.engine"}, names)
	})
}

func TestInterruptError(t *testing.T) {
	e := &InterruptError{Signal: os.Interrupt}
	assert.ErrorIs(t, e, context.Canceled)
	assert.Equal(t, 130, e.ExitCode())
	assert.Equal(t, "interrupted (SIGINT)", e.Error())
	wrapped := errors.Join(errors.New("writing x"), e)
	assert.Same(t, e, Interrupted(nil, wrapped))
	assert.Nil(t, Interrupted(context.Background(), errors.New("other")))
}

// TestInPlace: the InPlace input may be replaced under its own path (any
// spelling of it), not under another name.
func TestInPlace(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.pte")
	require.NoError(t, os.WriteFile(in, []byte("old"), 0o644))
	sym := filepath.Join(dir, "sym.pte")
	require.NoError(t, os.Symlink("m.pte", sym))
	hard := filepath.Join(dir, "hard.pte")
	require.NoError(t, os.Link(in, hard))

	for _, out := range []string{sym, hard} {
		var ie *InputError
		assert.ErrorAs(t, write(out, []byte("x"), &Options{InPlace: in}), &ie, out)
	}
	got, _ := os.ReadFile(in)
	assert.Equal(t, "old", string(got))
	require.NoError(t, write(dir+"/./m.pte", []byte("new"), &Options{InPlace: in}))
	got, _ = os.ReadFile(in)
	assert.Equal(t, "new", string(got))
}
