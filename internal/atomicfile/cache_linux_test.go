package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// residentPages counts the pages of the file at path in the page cache
// (mincore of a read-only mapping).
func residentPages(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Skipf("mincore: %v", e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// TestCreateDropsReplacedFileCache checks that Create over a large file
// lets its cached pages go (they are dead once the output takes the
// name, and their room is what the output's pages need), leaves its
// bytes alone when the output is then abandoned, and keeps the pages of
// a file rewritten in place (InPlace), which the writer still reads.
func TestCreateDropsReplacedFileCache(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "old.pte")
	data := bytes.Repeat([]byte("0123456789abcdef"), int(dropCacheMin)/16)
	write := func() {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, _ := os.Open(path)
		f.Sync() // clean pages: only those can be dropped
		f.Close()
	}
	write()
	before := residentPages(t, path)
	if before < len(data)/os.Getpagesize()/2 {
		t.Skipf("only %d pages of a just-written file are cached here", before)
	}
	f, err := Create(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	after := residentPages(t, path)
	f.Abort()
	if after > before/4 {
		t.Errorf("Create over a %d-byte file left %d of its %d cached pages", len(data), after, before)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
		t.Error("the replaced file changed although the output was abandoned")
	}

	write()
	before = residentPages(t, path)
	f, err = Create(path, &Options{InPlace: path})
	if err != nil {
		t.Fatal(err)
	}
	after = residentPages(t, path)
	f.Abort()
	if after < before*3/4 {
		t.Errorf("Create in place dropped the cache of the file being rewritten: %d of %d pages left", after, before)
	}
}

// TestReplaceLargeFile replaces a file above dropCacheMin on both paths:
// the output is the new data, alone in the directory, with the old file's
// permissions, and this process keeps no descriptor of the old inode (it
// is freed by the rename, in Commit, with no other process involved).
func TestReplaceLargeFile(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "model.pte")
		if err := os.WriteFile(path, bytes.Repeat([]byte("o"), int(dropCacheMin)), 0o640); err != nil {
			t.Fatal(err)
		}
		var old unix.Stat_t
		if err := unix.Stat(path, &old); err != nil {
			t.Fatal(err)
		}
		if err := write(path, []byte("new"), nil); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != "new" {
			t.Errorf("output %q, want %q", got, "new")
		}
		if got := names(t, dir); len(got) != 1 || got[0] != "model.pte" {
			t.Errorf("directory holds %q", got)
		}
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o640 {
			t.Errorf("output mode %v (%v), want 0640", st.Mode().Perm(), err)
		}
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("no /proc/self/fd: %v", err)
		}
		for _, e := range ents {
			var s unix.Stat_t
			if unix.Stat("/proc/self/fd/"+e.Name(), &s) == nil && s.Dev == old.Dev && s.Ino == old.Ino {
				t.Errorf("descriptor %s still refers to the replaced file", e.Name())
			}
		}
	})
}
