package pte

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// wrDirNames lists the names in dir.
func wrDirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileFailureLeavesNothing(t *testing.T) {
	p := wrProgram(1)
	broken := errors.New("read failed")
	bad := io.NewSectionReader(&failingReaderAt{data: make([]byte, 3<<20), limit: 1 << 20, err: broken}, 0, 3<<20)
	segs := []*io.SectionReader{wrSection(nil), bad}

	dir := t.TempDir()
	dst := filepath.Join(dir, "out.pte")
	if _, err := WriteFile(dst, p, segs, nil); !errors.Is(err, broken) {
		t.Fatalf("err = %v", err)
	}
	if names := wrDirNames(t, dir); len(names) != 0 {
		t.Errorf("failed write left %v", names)
	}

	// An existing destination keeps its bytes and mode.
	old := []byte("previous contents")
	if err := os.WriteFile(dst, old, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dst, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteFile(dst, p, segs, nil); err == nil {
		t.Fatal("failing source accepted")
	}
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, old) {
		t.Errorf("destination changed on failure: %q", got)
	}
	if names := wrDirNames(t, dir); len(names) != 1 {
		t.Errorf("failed write left %v", names)
	}

	// A program too large for the flatbuffer creates no file at all.
	defer func(v int64) { maxProgramSize = v }(maxProgramSize)
	maxProgramSize = 1 << 12
	big := wrProgram(0)
	big.BackendDelegateData = []*BackendDelegateInlineData{{Data: make([]byte, 1<<13)}}
	dst2 := filepath.Join(dir, "big.pte")
	if _, err := WriteFile(dst2, big, nil, nil); !errors.Is(err, ErrProgramTooLarge) {
		t.Errorf("err = %v", err)
	}
	if names := wrDirNames(t, dir); len(names) != 1 {
		t.Errorf("refused write left %v", names)
	}

	// Success replaces the file and keeps its mode.
	info, err := WriteFile(dst, p, []*io.SectionReader{wrSection(nil), wrSection([]byte("engine"))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o640 || st.Size() != info.Size {
		t.Errorf("mode %v size %d (want 0640, %d)", st.Mode().Perm(), st.Size(), info.Size)
	}
	// A new file gets 0666 less the umask, as a file the shell creates.
	ref := filepath.Join(t.TempDir(), "ref")
	if err := os.WriteFile(ref, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	refSt, err := os.Stat(ref)
	if err != nil {
		t.Fatal(err)
	}
	dst3 := filepath.Join(dir, "new.pte")
	if _, err := WriteFile(dst3, p, []*io.SectionReader{wrSection(nil), wrSection([]byte("engine"))}, nil); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dst3); err != nil || st.Mode().Perm() != refSt.Mode().Perm() {
		t.Errorf("new file mode %v (%v), want %v", st.Mode().Perm(), err, refSt.Mode().Perm())
	}
}

// wrSegmentedFile writes wrProgram(len(sizes)) to dir/name with one
// delegate segment of each size (distinct, non-repeating bytes) after the
// empty constant segment, and returns its path: a generated carrier for
// tests that rewrite a file with segments.
func wrSegmentedFile(t *testing.T, dir, name string, sizes ...int) string {
	t.Helper()
	segs := []*io.SectionReader{wrSection(nil)}
	x := uint32(2463534242)
	for _, n := range sizes {
		b := make([]byte, n)
		for i := range b {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			b[i] = byte(x)
		}
		segs = append(segs, wrSection(b))
	}
	path := filepath.Join(dir, name)
	if _, err := WriteFile(path, wrProgram(len(sizes)), segs, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestWriteFileOverItsOwnSource(t *testing.T) {
	dir := t.TempDir()
	path := wrSegmentedFile(t, dir, "two.pte", 1000, 3000)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := wrOpenBytes(t, orig)

	f, srcs := wrOpenSources(t, path)
	// Through a symbolic link, so that the link's target is what changes.
	link := filepath.Join(dir, "link.pte")
	if err := os.Symlink(filepath.Base(path), link); err != nil {
		t.Fatal(err)
	}
	info, err := WriteFile(link, f.Program, srcs, &WriteOptions{SegmentAlignment: 64})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("symbolic link replaced (%v)", err)
	}
	got, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if got.Size != info.Size || got.Header.SegmentBaseOffset%64 != 0 {
		t.Errorf("rewritten file: size %d, base %d", got.Size, got.Header.SegmentBaseOffset)
	}
	if d := wrDiff(wrWithSegments(want.Program, info.Segments), got.Program); d != "" {
		t.Errorf("program differs: %s", d)
	}
	wrComparePayloads(t, want, got, info.SegmentIndex)
}

// TestWriteFileKernelCopyMatchesBufferedCopy writes the same program from a
// file source once to a file (where copy_file_range applies) and once to
// memory; the bytes must be identical.
func TestWriteFileKernelCopyMatchesBufferedCopy(t *testing.T) {
	dir := t.TempDir()
	f, srcs := wrOpenSources(t, wrSegmentedFile(t, t.TempDir(), "large.pte", 1<<20, 4096))
	var mem bytes.Buffer
	if _, err := Write(&mem, f.Program, srcs, nil); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.pte")
	if _, err := WriteFile(out, f.Program, srcs, nil); err != nil {
		t.Fatal(err)
	}
	disk, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mem.Bytes(), disk) {
		t.Error("file and memory outputs differ")
	}
	if len(disk) < 1<<20 {
		t.Errorf("output is only %d bytes", len(disk))
	}
}
