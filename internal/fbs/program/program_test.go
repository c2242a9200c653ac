package program_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// schemaDir holds the committed .fbs files this package is generated from.
const schemaDir = "../../../schema"

// generate is what the go:generate lines make of dir's schema.
func generate(t *testing.T, dir string) []byte {
	return testkit.Flatc(t, dir, "program.fbs", "program")
}

// TestGeneratedCodeIsCurrent checks that the committed Go code is exactly what
// flatc generates from the committed schema.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	want := generate(t, schemaDir)
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
	ref := filepath.Dir(testkit.SharedDir(t, "reference", "schema", "program.fbs"))
	want := generate(t, ref)
	got := generate(t, schemaDir)
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
