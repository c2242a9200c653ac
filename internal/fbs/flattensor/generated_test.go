package flattensor_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// generate is what the go:generate lines make of dir's schema.
func generate(t *testing.T, dir string) []byte {
	return testkit.Flatc(t, dir, "flat_tensor.fbs", "flattensor", "executorch_flatbuffer.")
}

// TestGeneratedCodeIsCurrent: the committed code is what flatc makes of the
// committed schema.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	want := generate(t, filepath.Join("..", "..", "..", "schema"))
	got, err := os.ReadFile("flat_tensor_generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("flat_tensor_generated.go is stale: run `go generate ./internal/fbs/flattensor` and commit the result")
	}
}

// TestWireLayoutMatchesExecuTorch: flatc's Go output from ExecuTorch's own
// flat_tensor.fbs equals ours, so tables, slots, types and defaults agree
// (comments do not reach the Go code).
func TestWireLayoutMatchesExecuTorch(t *testing.T) {
	ref := filepath.Dir(testkit.SharedDir(t, "reference", "schema", "flat_tensor.fbs"))
	if !bytes.Equal(generate(t, ref), generate(t, filepath.Join("..", "..", "..", "schema"))) {
		t.Fatal("schema/flat_tensor.fbs differs in wire layout from ExecuTorch's flat_tensor.fbs")
	}
}

// TestIdentifier pins what flatc does not put into Go code.
func TestIdentifier(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "schema", "flat_tensor.fbs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`file_identifier "FT01";`, `root_type FlatTensor;`, `namespace flat_tensor_flatbuffer;`} {
		if !bytes.Contains(b, []byte(s)) {
			t.Errorf("flat_tensor.fbs lacks %q", s)
		}
	}
}
