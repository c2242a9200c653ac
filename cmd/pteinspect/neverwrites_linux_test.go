package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/internal/undorecord"
)

// writeEvents are the inotify events of anything but reading: a file
// opened for writing and closed, written, its metadata changed, a name
// created, removed or moved in the directory.
const writeEvents = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_CREATE |
	unix.IN_DELETE | unix.IN_DELETE_SELF | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_MOVE_SELF

// watchWrites watches dir (and the files in it) for writeEvents and
// returns a function that drains what happened since the last call.
func watchWrites(t *testing.T, dir string) func() []string {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	_, err = unix.InotifyAddWatch(fd, dir, writeEvents)
	require.NoError(t, err)
	return func() []string {
		var events []string
		buf := make([]byte, 64<<10)
		for {
			n, err := unix.Read(fd, buf)
			if errors.Is(err, unix.EAGAIN) {
				return events
			}
			require.NoError(t, err)
			for b := buf[:n]; len(b) >= unix.SizeofInotifyEvent; {
				mask := binary.NativeEndian.Uint32(b[4:])
				nameLen := binary.NativeEndian.Uint32(b[12:])
				name := string(bytes.TrimRight(b[unix.SizeofInotifyEvent:unix.SizeofInotifyEvent+nameLen], "\x00"))
				events = append(events, name+":"+maskString(mask))
				b = b[unix.SizeofInotifyEvent+nameLen:]
			}
		}
	}
}

func maskString(m uint32) string {
	var s []string
	for _, e := range []struct {
		bit  uint32
		name string
	}{{unix.IN_MODIFY, "modify"}, {unix.IN_ATTRIB, "attrib"}, {unix.IN_CLOSE_WRITE, "close-write"},
		{unix.IN_CREATE, "create"}, {unix.IN_DELETE, "delete"}, {unix.IN_DELETE_SELF, "delete-self"},
		{unix.IN_MOVED_FROM, "moved-from"}, {unix.IN_MOVED_TO, "moved-to"}, {unix.IN_MOVE_SELF, "move-self"}} {
		if m&e.bit != 0 {
			s = append(s, e.name)
		}
	}
	return strings.Join(s, ",")
}

// snapshot is what a viewer must leave as it is: the directory's names,
// and each file's bytes, mode and modification and change times.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(p, &st))
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		out[e.Name()] = string(data) + "|" + string(binary.NativeEndian.AppendUint32(nil, st.Mode)) +
			string(binary.NativeEndian.AppendUint64(nil, uint64(st.Mtim.Nano()))) +
			string(binary.NativeEndian.AppendUint64(nil, uint64(st.Ctim.Nano())))
	}
	return out
}

// TestViewerNeverWrites (issue 21): no view of pteinspect opens the program
// for writing, writes it, changes its metadata or touches its directory,
// even with a record beside it that pteexport --recover would apply (its
// owner's, mode 0600, consistent with the file). inotify sees every write,
// root's too (write bits do not stop root, the tests' usual user); the
// program's write bits are cleared and its directory made read-only as
// well, which stops everyone else.
func TestViewerNeverWrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.pte")
	data := testprog.Programs(t)["aligned_4096"]
	require.NoError(t, os.WriteFile(path, data, 0o444))
	undo := undorecord.Path(path)
	require.NoError(t, os.WriteFile(undo, undorecord.Encode(int64(len(data)), 0, []byte("EVILEVILEVILEVIL"), data[:16]), 0o600))
	require.NoError(t, os.Chmod(dir, 0o555))
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	ptdPath := writePTD(t, "w.ptd", 1, "w.const")
	outDir := t.TempDir()
	before := snapshot(t, dir)
	require.Contains(t, before, filepath.Base(undo))
	drain := watchWrites(t, dir)

	for _, args := range [][]string{
		{path},
		{"-l", path},
		{"--json", path},
		{"--json", "--hash", path},
		{"--verify", path},
		{"--verify", "--json", path},
		{"--plan", path},
		{"--compile-specs", path},
		{"--data", ptdPath, path},
		{"--json", "--data", ptdPath, path},
		{"--verify", "--data", ptdPath, path},
		{"--extract", "0:0", "-o", filepath.Join(outDir, "payload"), path},
		{"diff", path, path},
	} {
		r := runArgs(nil, args...)
		assert.NotEqual(t, exitUsage, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stdout+r.stderr, "pteexport --recover", "%v reports the record", args)
		assert.Empty(t, drain(), "%v wrote in the program's directory", args)
		assert.Equal(t, before, snapshot(t, dir), "%v changed the program's directory", args)
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, data, got)
}
