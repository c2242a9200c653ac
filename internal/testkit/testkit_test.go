package testkit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// recorder is a testing.TB that records how a helper ended the test.
// Fatal and Skip stop the calling goroutine, as they do on a real test, so
// the helper under test must run in its own goroutine (see outcome).
type recorder struct {
	testing.TB
	how, msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatal(args ...any) {
	r.how, r.msg = "fatal", strings.TrimSpace(fmt.Sprintln(args...))
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) { r.Fatal(fmt.Sprintf(format, args...)) }
func (r *recorder) Skip(args ...any) {
	r.how, r.msg = "skip", strings.TrimSpace(fmt.Sprintln(args...))
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) { r.Skip(fmt.Sprintf(format, args...)) }
func (r *recorder) Errorf(format string, args ...any) {
	r.how, r.msg = "error", fmt.Sprintf(format, args...)
}

// outcome runs fn with a recorder and returns how it ended: "fatal",
// "skip", "error" (failed and went on) or "" (passed), and the message.
func outcome(t *testing.T, fn func(tb testing.TB)) (how, msg string) {
	r := &recorder{TB: t}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		fn(r)
	}()
	wg.Wait()
	return r.how, r.msg
}

// fakeRepo makes root/repo/go.mod and root/repo/pkg/sub, changes into the
// latter for the rest of the test and returns root.
func fakeRepo(t *testing.T) string {
	root := t.TempDir()
	pkg := filepath.Join(root, "repo", "pkg", "sub")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "repo", "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(pkg)
	return root
}

func TestSharedPathFromThisPackage(t *testing.T) {
	t.Setenv("PTEKIT_SHARED", "") // these tests are about the default location
	got, err := SharedPath("vectors", "pte")
	if err != nil {
		t.Fatal(err)
	}
	// This package is <repo>/internal/testkit.
	want := filepath.Join("..", "..", "..", "shared", "vectors", "pte")
	if got != want {
		t.Errorf("SharedPath = %q, want %q", got, want)
	}
}

func TestSharedPathWalksUpToGoMod(t *testing.T) {
	t.Setenv("PTEKIT_SHARED", "") // these tests are about the default location
	fakeRepo(t)
	got, err := SharedPath("corpus")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join("..", "..", "..", "shared", "corpus"); got != want {
		t.Errorf("SharedPath = %q, want %q", got, want)
	}
}

func TestSharedPathWithoutGoMod(t *testing.T) {
	t.Setenv("PTEKIT_SHARED", "") // these tests are about the default location
	dir := t.TempDir()
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "go.mod")); err == nil {
		t.Skip("the temporary directory is inside a module")
	}
	t.Chdir(dir)
	if p, err := SharedPath("x"); err == nil || !strings.Contains(err.Error(), "no go.mod") {
		t.Errorf("SharedPath outside a module = %q, %v; want a no go.mod error", p, err)
	}
}

func TestSharedDir(t *testing.T) {
	t.Setenv("PTEKIT_SHARED", "") // these tests are about the default location
	root := fakeRepo(t)
	if err := os.MkdirAll(filepath.Join(root, "shared", "corpus"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, ci := range []string{"", "1"} {
		t.Setenv("CI", ci)
		var got string
		how, msg := outcome(t, func(tb testing.TB) { got = SharedDir(tb, "corpus") })
		if how != "" || got != filepath.Join("..", "..", "..", "shared", "corpus") {
			t.Errorf("CI=%q, present: SharedDir = %q, ended %q %q", ci, got, how, msg)
		}
		how, msg = outcome(t, func(tb testing.TB) { SharedDir(tb, "vectors", "none") })
		want := map[string]string{"": "skip", "1": "fatal"}[ci]
		if how != want || !strings.Contains(msg, filepath.Join("shared", "vectors", "none")) {
			t.Errorf("CI=%q, missing: SharedDir ended %q %q, want %s naming the path", ci, how, msg, want)
		}
	}
}

func TestGlob(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.pte", "b.pte", "c.json"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	if how, msg := outcome(t, func(tb testing.TB) { got = Glob(tb, dir, "*.pte") }); how != "" {
		t.Fatalf("Glob ended %s: %s", how, msg)
	}
	if len(got) != 2 || filepath.Base(got[0]) != "a.pte" || filepath.Base(got[1]) != "b.pte" {
		t.Errorf("Glob = %q", got)
	}
	for _, pat := range []string{"*.bpte", "["} {
		if how, msg := outcome(t, func(tb testing.TB) { Glob(tb, dir, pat) }); how != "fatal" {
			t.Errorf("Glob %q ended %q %q, want fatal", pat, how, msg)
		}
	}
}

func TestCountingReaderAt(t *testing.T) {
	c := NewCountingReaderAt(bytes.NewReader([]byte("0123456789")))
	p := make([]byte, 4)
	if n, err := c.ReadAt(p, 2); n != 4 || err != nil || string(p) != "2345" {
		t.Fatalf("ReadAt = %d, %v, %q", n, err, p)
	}
	// A short read at the end counts the bytes returned with the error.
	if n, err := c.ReadAt(p, 8); n != 2 || !errors.Is(err, io.EOF) {
		t.Fatalf("ReadAt at the end = %d, %v", n, err)
	}
	if c.Bytes() != 6 || c.Calls() != 2 {
		t.Errorf("Bytes, Calls = %d, %d; want 6, 2", c.Bytes(), c.Calls())
	}
}

func TestCountingReaderAtConcurrent(t *testing.T) {
	c := &CountingReaderAt{R: bytes.NewReader(make([]byte, 100))}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			p := make([]byte, 10)
			for range 100 {
				c.ReadAt(p, 50)
			}
		})
	}
	wg.Wait()
	if c.Bytes() != 8*100*10 || c.Calls() != 8*100 {
		t.Errorf("Bytes, Calls = %d, %d; want 8000, 800", c.Bytes(), c.Calls())
	}
}

func TestOpenCounting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("hello, world"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, size := OpenCounting(t, path)
	if size != 12 {
		t.Errorf("size %d, want 12", size)
	}
	p := make([]byte, 5)
	if _, err := c.ReadAt(p, 7); err != nil || string(p) != "world" || c.Bytes() != 5 {
		t.Errorf("ReadAt: %q, %v, %d bytes counted", p, err, c.Bytes())
	}
	if how, _ := outcome(t, func(tb testing.TB) { OpenCounting(tb, path+".missing") }); how != "fatal" {
		t.Errorf("OpenCounting of a missing file ended %q, want fatal", how)
	}
}

func TestSharedSeeds(t *testing.T) {
	t.Setenv("PTEKIT_SHARED", "") // these tests are about the default location
	root := fakeRepo(t)
	if got := sharedSeeds(0, []string{"vectors/*.pte"}); len(got) != 0 {
		t.Errorf("%d seeds without shared data", len(got))
	}
	files := map[string]string{"small.pte": "abc", "big.pte": "0123456789", "other.blob": "x"}
	dir := filepath.Join(root, "shared", "vectors")
	if err := os.MkdirAll(filepath.Join(dir, "sub.pte"), 0o755); err != nil { // a directory is no seed
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		max      int64
		patterns []string
		want     string
	}{
		{0, []string{"vectors/*.pte"}, "0123456789,abc"},
		{5, []string{"vectors/*.pte"}, "abc"},
		{3, []string{"vectors/*.pte", "vectors/*.blob"}, "abc,x"},
		{0, []string{"corpus/*.pte"}, ""},
	} {
		var got []string
		for _, b := range sharedSeeds(tc.max, tc.patterns) {
			got = append(got, string(b))
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("sharedSeeds(%d, %q) = %q, want %s", tc.max, tc.patterns, got, tc.want)
		}
	}
}

func TestSharedPathOverride(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PTEKIT_SHARED", dir)
	got, err := SharedPath("vectors", "pte")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "vectors", "pte"); got != want {
		t.Fatalf("SharedPath with PTEKIT_SHARED=%s: got %s, want %s", dir, got, want)
	}
}

// TestSharedProgramsEmptyTree: a shared tree that is there but holds no
// program fails the test (callers would otherwise pass by checking none),
// in CI or not; an absent tree fails only in CI, and programs over the
// size limit are left out without failing.
func TestSharedProgramsEmptyTree(t *testing.T) {
	tree := t.TempDir()
	t.Setenv("PTEKIT_SHARED", tree)
	t.Setenv("CI", "")
	if how, msg := outcome(t, func(tb testing.TB) { SharedPrograms(tb, 0) }); how != "fatal" || !strings.Contains(msg, "no .pte file") {
		t.Errorf("empty tree: %q %q, want a fatal naming the missing programs", how, msg)
	}
	if err := os.WriteFile(filepath.Join(tree, "big.pte"), make([]byte, 64), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	if how, msg := outcome(t, func(tb testing.TB) { got = SharedPrograms(tb, 16) }); how != "" || len(got) != 0 {
		t.Errorf("tree of one 64-byte program, limit 16: %q %q %v, want none and no failure", how, msg, got)
	}
	t.Setenv("PTEKIT_SHARED", filepath.Join(tree, "absent"))
	if how, _ := outcome(t, func(tb testing.TB) { got = SharedPrograms(tb, 0) }); how != "" || got != nil {
		t.Errorf("absent tree outside CI: %q %v, want none and no failure", how, got)
	}
	t.Setenv("CI", "true")
	if how, _ := outcome(t, func(tb testing.TB) { SharedPrograms(tb, 0) }); how != "fatal" {
		t.Errorf("absent tree in CI: %q, want fatal", how)
	}
}

func TestRangeReaderAt(t *testing.T) {
	c := NewRangeReaderAt(bytes.NewReader(make([]byte, 100)))
	read := func(off, n int64) {
		if _, err := c.ReadAt(make([]byte, n), off); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
	}
	read(0, 10)
	read(10, 10)
	read(50, 60) // short: 50 bytes
	if n, first := c.Reread(); n != 0 || c.Bytes() != 70 {
		t.Fatalf("disjoint reads: Reread = %d %v, Bytes = %d", n, first, c.Bytes())
	}
	if got := c.Ranges(); !slices.Equal(got, []Range{{0, 10}, {10, 20}, {50, 100}}) {
		t.Errorf("Ranges = %v", got)
	}
	read(5, 10)  // 5..15 again
	read(0, 20)  // 0..20 again: 5..15 a third time, counted once
	read(95, 10) // 95..100 again
	if n, first := c.Reread(); n != 25 || first != (Range{0, 10}) {
		t.Errorf("Reread = %d %v, want 25 {0 10}", n, first)
	}
	c.Reset()
	if n, _ := c.Reread(); n != 0 || c.Bytes() != 0 {
		t.Errorf("after Reset: Reread %d, Bytes %d", n, c.Bytes())
	}
}
