package program_test

import (
	"bytes"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// schemaDir holds the committed .fbs files this package is generated from.
const schemaDir = "../../../schema"

// needFlatc returns the path of flatc, failing the test in CI (where .ci/run
// installs it) and skipping it elsewhere when it is missing.
func needFlatc(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("flatc")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("flatc not found in CI: .ci/run must install flatbuffers-compiler")
		}
		t.Skip("flatc not installed (apt-get install flatbuffers-compiler)")
	}
	return p
}

// generate runs flatc and gofmt over dir/program.fbs the way go:generate does and
// returns the generated Go source.
func generate(t *testing.T, flatc, dir string) []byte {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command(flatc, "--go", "--go-namespace", "program", "--gen-onefile", "--gen-all",
		"-o", out, filepath.Join(dir, "program.fbs"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("flatc on %s: %v\n%s", dir, err, b)
	}
	b, err := os.ReadFile(filepath.Join(out, "program_generated.go"))
	if err != nil {
		t.Fatal(err)
	}
	// go:generate runs gofmt over flatc's output; do the same here.
	f, err := format.Source(b)
	if err != nil {
		t.Fatalf("gofmt of flatc output: %v", err)
	}
	return f
}

// TestGeneratedCodeIsCurrent checks that the committed Go code is exactly what
// flatc generates from the committed schema.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	flatc := needFlatc(t)
	want := generate(t, flatc, schemaDir)
	got, err := os.ReadFile("program_generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("internal/fbs/program/program_generated.go is stale: run `go generate ./internal/fbs/program` and commit the result")
	}
}

// TestWireLayoutMatchesExecuTorch generates Go code from ExecuTorch's own
// schema (../shared/reference/schema) and compares it with ours. flatc's Go
// output carries every table, field slot, type, default, enum value and union
// member, but none of the plain comments, so equal output means an identical
// wire layout.
func TestWireLayoutMatchesExecuTorch(t *testing.T) {
	flatc := needFlatc(t)
	ref := filepath.Dir(testkit.SharedDir(t, "reference", "schema", "program.fbs"))
	want := generate(t, flatc, ref)
	got := generate(t, flatc, schemaDir)
	if !bytes.Equal(got, want) {
		t.Fatal("schema/program.fbs differs in wire layout from ExecuTorch's program.fbs")
	}
}

// TestIdentifierAndAlignment pins the attributes flatc does not put into Go
// code: the file identifier, root type and the force_align of inline data.
func TestIdentifierAndAlignment(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(schemaDir, "program.fbs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`file_identifier "ET12";`,
		`root_type Program;`,
		`storage: [ubyte] (force_align: 16);`,
		`data: [ubyte] (force_align: 16);`,
	} {
		if !bytes.Contains(b, []byte(s)) {
			t.Errorf("program.fbs lacks %q", s)
		}
	}
}
