package testkit

import (
	"bytes"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Flatc runs flatc --go over dir/schema (a .fbs file name) with Go package
// name pkg, the way the go:generate lines of internal/fbs do, and returns
// the gofmt'ed source of the one generated file. Every occurrence of each
// strip string is removed first (flatc 2.0 qualifies included types with
// a namespace Go cannot resolve). It fails the test in CI when flatc is
// missing (scripts/test installs it) and skips elsewhere.
func Flatc(t testing.TB, dir, schema, pkg string, strip ...string) []byte {
	t.Helper()
	flatc, err := exec.LookPath("flatc")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("flatc not found in CI: scripts/test must install flatbuffers-compiler")
		}
		t.Skip("flatc not installed (apt-get install flatbuffers-compiler)")
	}
	out := t.TempDir()
	cmd := exec.Command(flatc, "--go", "--go-namespace", pkg, "--gen-onefile", "--gen-all",
		"-o", out, filepath.Join(dir, schema))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("flatc on %s: %v\n%s", filepath.Join(dir, schema), err, b)
	}
	gen := filepath.Base(schema)
	gen = gen[:len(gen)-len(filepath.Ext(gen))] + "_generated.go"
	b, err := os.ReadFile(filepath.Join(out, gen))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range strip {
		b = bytes.ReplaceAll(b, []byte(s), nil)
	}
	f, err := format.Source(b)
	if err != nil {
		t.Fatalf("gofmt of flatc output: %v", err)
	}
	return f
}
