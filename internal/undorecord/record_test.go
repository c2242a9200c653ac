package undorecord

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// program writes a file of size bytes and returns its path and FileInfo.
func program(t *testing.T, size int) (string, os.FileInfo) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.pte")
	require.NoError(t, os.WriteFile(path, bytes.Repeat([]byte{'p'}, size), 0o644))
	st, err := os.Stat(path)
	require.NoError(t, err)
	return path, st
}

// TestReadHugeRecordBounded (issue 21, defect 2): a 3 GiB sparse record
// beside a 1 KiB program is refused after its header, whatever the header
// says, in bounded memory; so is the look a viewer takes (Probe).
func TestReadHugeRecordBounded(t *testing.T) {
	path, st := program(t, 1024)
	const huge = 3 << 30
	for _, tc := range []struct {
		name string
		hdr  []byte
		want string
	}{
		{"zeros", nil, "not an undo record"},
		{"magic, range in the file", rawHeader(1024, 0, 16), "makes a record of"},
		{"magic, range as large as the record", rawHeader(1024, 0, (huge-Fixed)/2), "outside a file of 1024 bytes"},
		{"magic, range past the cap", rawHeader(1<<40, 0, (huge-Fixed)/2), "it is for a file of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			undo := Path(path)
			f, err := os.OpenFile(undo, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
			require.NoError(t, err)
			_, err = f.Write(tc.hdr)
			require.NoError(t, err)
			require.NoError(t, f.Truncate(huge)) // sparse: no disk
			require.NoError(t, f.Close())
			var rerr error
			n := testkit.Allocated(func() { _, rerr = Read(undo, st) })
			assert.ErrorContains(t, rerr, tc.want)
			assert.Less(t, n, uint64(1<<20), "Read allocated %d bytes for a %d-byte record", n, huge)
			var notice *Notice
			n = testkit.Allocated(func() { notice = Probe(path) })
			require.NotNil(t, notice)
			assert.Contains(t, notice.Refused, tc.want)
			assert.Less(t, n, uint64(1<<20), "Probe allocated %d bytes", n)
		})
	}
}

func rawHeader(size, off, n uint64) []byte {
	h := []byte(Magic)
	h = binary.LittleEndian.AppendUint64(h, size)
	h = binary.LittleEndian.AppendUint64(h, off)
	return binary.LittleEndian.AppendUint64(h, n)
}

// TestReadChecksInOrder: each check, on a record that passes those before
// it, with what it says.
func TestReadChecksInOrder(t *testing.T) {
	path, st := program(t, 10)
	good := Encode(10, 2, []byte("234"), []byte("abc"))
	damaged := bytes.Clone(good)
	damaged[HeaderSize] ^= 1
	for _, tc := range []struct {
		name string
		rec  []byte
		want string
	}{
		{"short", good[:Fixed-1], "shorter than"},
		{"magic", append([]byte("PTEUNDO2"), good[8:]...), "not an undo record"},
		{"other size", Encode(11, 2, []byte("234"), []byte("abc")), "for a file of 11 bytes, the file has 10"},
		{"range past the end", Encode(10, 8, []byte("234"), []byte("abc")), "outside a file of 10 bytes"},
		{"length", append(bytes.Clone(good), 0), "makes a record of"},
		{"checksum", damaged, "checksum mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(Path(path), tc.rec, 0o600))
			r, err := Read(Path(path), st)
			assert.Nil(t, r)
			assert.ErrorContains(t, err, tc.want)
			var e *Error
			assert.ErrorAs(t, err, &e)
		})
	}
	require.NoError(t, os.WriteFile(Path(path), good, 0o600))
	r, err := Read(Path(path), st)
	require.NoError(t, err)
	assert.Equal(t, &Record{Size: 10, Off: 2, Old: []byte("234"), New: []byte("abc")}, r)
	require.NoError(t, os.Remove(Path(path)))
	r, err = Read(Path(path), st)
	assert.NoError(t, err)
	assert.Nil(t, r, "no record")
}

// TestProbe: what a viewer is told, and that looking changes nothing.
func TestProbe(t *testing.T) {
	path, _ := program(t, 10)
	assert.Nil(t, Probe(path), "no record")
	undo := Path(path)
	require.NoError(t, os.WriteFile(undo, Encode(10, 2, []byte("234"), []byte("ppp")), 0o600))
	n := Probe(path)
	require.NotNil(t, n)
	assert.Equal(t, undo, n.Record)
	assert.Empty(t, n.Refused)
	assert.Contains(t, n.Message("p.pte"), "pteexport --recover p.pte")

	// A record --recover would refuse for its checksum or for bytes of the
	// file that are neither its old nor its new ones is not reported as
	// one it would apply.
	rec := Encode(10, 2, []byte("234"), []byte("ppp"))
	rec[len(rec)-1] ^= 1
	require.NoError(t, os.WriteFile(undo, rec, 0o600))
	n = Probe(path)
	require.NotNil(t, n)
	assert.Contains(t, n.Refused, "checksum mismatch")
	require.NoError(t, os.WriteFile(undo, Encode(10, 2, []byte("234"), []byte("qqq")), 0o600))
	n = Probe(path)
	require.NotNil(t, n)
	assert.Contains(t, n.Refused, "neither the old nor the new one")

	require.NoError(t, os.Chmod(undo, 0o666))
	n = Probe(path)
	require.NotNil(t, n)
	assert.Contains(t, n.Refused, "writable by group or others")
	assert.Contains(t, n.Message("p.pte"), "would refuse it")

	require.NoError(t, os.Remove(undo))
	require.NoError(t, syscall.Mkfifo(undo, 0o600))
	n = Probe(path) // a FIFO does not block the look
	require.NotNil(t, n)
	assert.Contains(t, n.Refused, "not a regular file")

	// Through a symbolic link to the program: the record beside the
	// program, not beside the link.
	link := filepath.Join(t.TempDir(), "link.pte")
	require.NoError(t, os.Symlink(path, link))
	n = Probe(link)
	require.NotNil(t, n)
	assert.Equal(t, undo, n.Record)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, bytes.Repeat([]byte{'p'}, 10), got)
}

// FuzzUndoRecord: any bytes as an undo record, for a file of any size,
// are refused with an error or give a record consistent with the file and
// with the bytes (they encode back to themselves); decoding never
// allocates much more than the record's own size, whatever its header
// says.
func FuzzUndoRecord(f *testing.F) {
	f.Add(Encode(10, 2, []byte("234"), []byte("abc")), int64(10))
	f.Add(Encode(0, 0, nil, nil), int64(0))
	f.Add([]byte(Magic), int64(10))
	f.Add(rawHeader(10, 0, 1<<62), int64(10))
	f.Fuzz(func(t *testing.T, data []byte, fileSize int64) {
		if fileSize < 0 {
			fileSize = -fileSize
		}
		var r *Record
		var err error
		n := testkit.Allocated(func() { r, err = decode("rec", bytes.NewReader(data), int64(len(data)), fileSize) })
		if n > uint64(len(data))+1<<20 { // the header never sizes an allocation
			t.Fatalf("decoding a %d-byte record allocated %d bytes", len(data), n)
		}
		if err != nil {
			if r != nil {
				t.Fatal("a record and an error")
			}
			return
		}
		if r.Size != fileSize || r.Off < 0 || r.Off+int64(len(r.Old)) > r.Size || len(r.Old) != len(r.New) || len(r.Old) > MaxRun {
			t.Fatalf("bad record accepted: size %d (file %d) off %d len %d/%d", r.Size, fileSize, r.Off, len(r.Old), len(r.New))
		}
		if !bytes.Equal(Encode(r.Size, r.Off, r.Old, r.New), data) {
			t.Fatal("an accepted record does not encode back to its bytes")
		}
	})
}

// TestReadRefusesRunPastCap: a range longer than MaxRun is refused from
// the header even when the file is large enough to hold it.
func TestReadRefusesRunPastCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.pte")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(5<<30)) // sparse
	require.NoError(t, f.Close())
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(Path(path), rawHeader(5<<30, 0, MaxRun+1), 0o600))
	require.NoError(t, os.Truncate(Path(path), Fixed+2*(MaxRun+1)))
	var rerr error
	n := testkit.Allocated(func() { _, rerr = Read(Path(path), st) })
	assert.ErrorContains(t, rerr, "more than an in-place edit writes")
	assert.Less(t, n, uint64(1<<20))
}
