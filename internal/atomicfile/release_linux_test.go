package atomicfile

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// releaseSetup lowers the release threshold to 512 KiB, writes a 1 MiB
// old file (blocks allocated, not sparse) at dir/model.pte and returns its
// path and inode. It skips where dir's file system is not one releases
// are made on.
func releaseSetup(t *testing.T) (string, syscall.Stat_t) {
	t.Helper()
	dir := t.TempDir()
	var sfs syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &sfs))
	if !releaseFS[int64(sfs.Type)] {
		t.Skipf("%s is on a file system (0x%x) where replaced files are released in place", dir, sfs.Type)
	}
	saved := releaseMin
	releaseMin = 512 << 10
	t.Cleanup(func() { releaseMin = saved })
	path := filepath.Join(dir, "model.pte")
	require.NoError(t, os.WriteFile(path, bytes.Repeat([]byte("o"), 1<<20), 0o640))
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(path, &st))
	require.GreaterOrEqual(t, st.Blocks*512, releaseMin)
	return path, st
}

// holders lists this process's descriptors that refer to the inode st.
func holders(t *testing.T, pid string, st syscall.Stat_t) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + pid + "/fd")
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		var s syscall.Stat_t
		if syscall.Stat("/proc/"+pid+"/fd/"+e.Name(), &s) == nil && s.Dev == st.Dev && s.Ino == st.Ino {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestReleaseInHelper replaces a file above the threshold: once the new
// file is in place the writer holds no reference to the old inode, the
// helper process holds the only one (unlinked, blocks still allocated)
// as its descriptor 3, and after the writer lets it go the helper exits 0
// and is reaped. The output is the new data, alone in the directory, with
// the old file's permissions.
func TestReleaseInHelper(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		path, old := releaseSetup(t)
		var heldPid int
		reaped := make(chan *os.ProcessState, 1)
		testRelease.held = func(pid int) {
			heldPid = pid
			assert.Empty(t, holders(t, "self", old), "the writer still holds the old file")
			assert.Equal(t, []string{"3"}, holders(t, strconv.Itoa(pid), old), "the helper's descriptors")
			var s syscall.Stat_t
			if assert.NoError(t, syscall.Stat("/proc/"+strconv.Itoa(pid)+"/fd/3", &s)) {
				assert.Zero(t, s.Nlink, "the old file is still linked")
				assert.Equal(t, old.Blocks, s.Blocks, "the old file's blocks were freed before the helper closed it")
			}
		}
		testRelease.reaped = func(ps *os.ProcessState) { reaped <- ps }
		defer func() { testRelease.held, testRelease.reaped = nil, nil }()

		require.NoError(t, write(path, []byte("new"), nil))
		require.NotZero(t, heldPid, "no helper was started")
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "new", string(got))
		assert.Equal(t, []string{"model.pte"}, names(t, filepath.Dir(path)))
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o640), st.Mode().Perm())

		select {
		case ps := <-reaped:
			assert.True(t, ps.Exited(), "%v", ps)
			assert.Equal(t, 0, ps.ExitCode())
		case <-time.After(timeout):
			t.Fatal("the helper did not exit")
		}
		_, err = os.Stat("/proc/" + strconv.Itoa(heldPid))
		assert.ErrorIs(t, err, os.ErrNotExist, "the helper was not reaped")
	})
}

// TestReleaseFallback: when no helper can be started the writer frees the
// old file itself, as before: the output is right and no descriptor of
// the old inode is left open.
func TestReleaseFallback(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		path, old := releaseSetup(t)
		saved := releaseExe
		releaseExe = filepath.Join(t.TempDir(), "missing")
		defer func() { releaseExe = saved }()
		testRelease.held = func(int) { t.Error("a helper started from a missing program") }
		defer func() { testRelease.held = nil }()

		require.NoError(t, write(path, []byte("new"), nil))
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "new", string(got))
		assert.Empty(t, holders(t, "self", old))
		assert.Equal(t, []string{"model.pte"}, names(t, filepath.Dir(path)))
	})
}

// TestReleaseSmall: a file below the threshold is freed by the rename, with
// no helper.
func TestReleaseSmall(t *testing.T) {
	path, old := releaseSetup(t)
	releaseMin = old.Blocks*512 + 1
	testRelease.held = func(int) { t.Error("a helper started for a small file") }
	defer func() { testRelease.held = nil }()
	require.NoError(t, write(path, []byte("new"), nil))
	assert.Empty(t, holders(t, "self", old))
}

// TestReleaseStrayEnv: a program started with the helper's variable but
// not by a release (no descriptors 3 and 4 as a release passes them) says
// so and exits 2 instead of running.
func TestReleaseStrayEnv(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), releaseEnv+"=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	assert.Equal(t, 2, ee.ExitCode())
	assert.Contains(t, string(out), releaseEnv+" is set")
}

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
	m, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
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
	if fadviseTrap == 0 {
		t.Skip("no fadvise64 on this architecture")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "old.pte")
	data := bytes.Repeat([]byte("0123456789abcdef"), int(releaseMin)/16)
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
