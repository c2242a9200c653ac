// Package testkit holds the helpers ptekit's tests share: finding the
// reference data that lives next to the repository, listing its files, and
// counting what a reader under test reads.
//
// The reference data (the corpus of real programs and the conformance
// vectors) is kept outside the repository, in a directory named shared
// next to the repository root. Tests that need it call [SharedDir]: when it
// is missing a test fails if the CI environment variable is non-empty and
// is skipped otherwise, so a local checkout without the data still runs
// every other test while CI cannot silently lose coverage.
//
// testkit imports only the standard library, so the in-package tests of
// every ptekit package, pte included, can use it.
package testkit

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// SharedPath returns where <repo>/../shared/<parts> is, whether or not it
// exists. The repository root is the nearest directory at or above the
// working directory (the package directory under go test) that holds a
// go.mod file. The path is relative to the working directory, so that
// test output and golden files do not depend on where the checkout is.
//
// Use it to add optional fuzz seeds; tests that need the data call
// [SharedDir].
//
// The environment variable PTEKIT_SHARED, when set, names another
// directory to use in place of <repo>/../shared: the whole suite can then
// run against a different tree of the same layout (for example a held-back
// set of conformance vectors) without moving files around.
func SharedPath(parts ...string) (string, error) {
	if dir := os.Getenv("PTEKIT_SHARED"); dir != "" {
		return filepath.Join(append([]string{dir}, parts...)...), nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testkit: %w", err)
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			return "", fmt.Errorf("testkit: no go.mod in %s or any directory above it", wd)
		}
		root = parent
	}
	p := filepath.Join(append([]string{filepath.Dir(root), "shared"}, parts...)...)
	if rel, err := filepath.Rel(wd, p); err == nil {
		p = rel
	}
	return p, nil
}

// SharedDir returns the path of <repo>/../shared/<parts> (see
// [SharedPath]). When that file or directory does not exist, the test
// fails if the CI environment variable is non-empty and is skipped
// otherwise. A repository root that cannot be found always fails the
// test.
func SharedDir(t testing.TB, parts ...string) string {
	t.Helper()
	p, err := SharedPath(parts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("shared data %s missing (CI is set): %v", p, err)
		}
		t.Skipf("shared data %s missing: %v", p, err)
	}
	return p
}

// Glob returns the files in dir whose names match pattern (in the syntax
// of [filepath.Match]; pattern may name subdirectories). It fails the test
// when the pattern is malformed or matches nothing, so a test that walks a
// data set cannot pass by walking none of it.
func Glob(t testing.TB, dir, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		t.Fatalf("glob %s in %s: %v", pattern, dir, err)
	}
	if len(files) == 0 {
		t.Fatalf("no file matches %s in %s", pattern, dir)
	}
	return files
}

// SharedPrograms returns every .pte file of the shared tree (see
// [SharedPath]; subdirectories included, symbolic links to the tree
// followed) of at most maxSize bytes (0: any size), as the tree holds them
// when the test runs, in lexical order. When the tree is absent it returns
// none, and fails the test if the CI environment variable is non-empty:
// callers also have programs of their own to check. A tree that is there
// but holds no .pte file fails the test, as Glob does for a pattern that
// matches nothing.
func SharedPrograms(t testing.TB, maxSize int64) []string {
	t.Helper()
	root, err := SharedPath()
	if err != nil {
		t.Fatal(err)
	}
	if root, err = filepath.EvalSymlinks(root); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("shared data missing (CI is set): %v", err)
		}
		return nil
	}
	var out []string
	seen := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".pte") {
			return err
		}
		seen++
		if st, err := d.Info(); err == nil && (maxSize == 0 || st.Size() <= maxSize) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", root, err)
	}
	if seen == 0 {
		// A tree that is there but holds no program would let every
		// caller pass by checking nothing of it.
		t.Fatalf("no .pte file in the shared tree %s", root)
	}
	return out
}

// CountingReaderAt is an [io.ReaderAt] that passes reads on to R and
// counts them: the calls made and the bytes returned. Tests use it to check
// that a reader touches only the bytes it needs, for example that
// inspecting a program reads none of its engine bytes.
//
// It is safe for concurrent use when R is. The zero value with R set is
// ready to use; a CountingReaderAt must not be copied after first use.
type CountingReaderAt struct {
	// R is the reader read from.
	R io.ReaderAt

	bytes, calls atomic.Int64
}

// NewCountingReaderAt returns a CountingReaderAt reading from r.
func NewCountingReaderAt(r io.ReaderAt) *CountingReaderAt {
	return &CountingReaderAt{R: r}
}

// ReadAt reads from R and adds one call and the bytes R returned (n, also
// when R returns an error) to the counts.
func (c *CountingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.R.ReadAt(p, off)
	c.calls.Add(1)
	c.bytes.Add(int64(n))
	return n, err
}

// Bytes returns the number of bytes read so far.
func (c *CountingReaderAt) Bytes() int64 { return c.bytes.Load() }

// Calls returns the number of ReadAt calls made so far.
func (c *CountingReaderAt) Calls() int64 { return c.calls.Load() }

// OpenCounting opens the file at path for reading through a
// CountingReaderAt and returns it with the file's size. The file is closed
// when the test ends; a file that cannot be opened fails the test.
func OpenCounting(t testing.TB, path string) (*CountingReaderAt, int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return NewCountingReaderAt(f), fi.Size()
}

// AddSharedSeeds adds to f, as seeds, the files under <repo>/../shared
// (see [SharedPath]) that match any of patterns (slash-separated, in the
// syntax of [filepath.Match]) and hold at most maxSize bytes; maxSize 0
// means any size. Unlike [SharedDir] it never fails or skips: the shared
// data only widens a fuzz target's starting corpus, and fuzzing works from
// testdata/fuzz alone.
func AddSharedSeeds(f *testing.F, maxSize int64, patterns ...string) {
	for _, b := range sharedSeeds(maxSize, patterns) {
		f.Add(b)
	}
}

// sharedSeeds reads the files AddSharedSeeds adds.
func sharedSeeds(maxSize int64, patterns []string) [][]byte {
	root, err := SharedPath()
	if err != nil {
		return nil
	}
	var seeds [][]byte
	for _, pattern := range patterns {
		files, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
		for _, p := range files {
			if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || (maxSize > 0 && fi.Size() > maxSize) {
				continue
			}
			if b, err := os.ReadFile(p); err == nil {
				seeds = append(seeds, b)
			}
		}
	}
	return seeds
}
