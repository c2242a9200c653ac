package flattensor_test

import (
	"bytes"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// needFlatc returns the path of flatc, failing in CI and skipping elsewhere
// when it is missing.
func needFlatc(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("flatc")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("flatc not found in CI: install flatbuffers-compiler")
		}
		t.Skip("flatc not installed (apt-get install flatbuffers-compiler)")
	}
	return p
}

// generate runs the go:generate steps of doc.go over dir/flat_tensor.fbs and
// returns the Go source.
func generate(t *testing.T, flatc, dir string) []byte {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command(flatc, "--go", "--go-namespace", "flattensor", "--gen-onefile", "--gen-all",
		"-o", out, filepath.Join(dir, "flat_tensor.fbs"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("flatc on %s: %v\n%s", dir, err, b)
	}
	b, err := os.ReadFile(filepath.Join(out, "flat_tensor_generated.go"))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte("executorch_flatbuffer."), nil)
	f, err := format.Source(b)
	if err != nil {
		t.Fatalf("gofmt of flatc output: %v", err)
	}
	return f
}

// TestGeneratedCodeIsCurrent: the committed code is what flatc makes of the
// committed schema.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	flatc := needFlatc(t)
	want := generate(t, flatc, filepath.Join("..", "..", "..", "schema"))
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
	flatc := needFlatc(t)
	ref := filepath.Dir(testkit.SharedDir(t, "reference", "schema", "flat_tensor.fbs"))
	if !bytes.Equal(generate(t, flatc, ref), generate(t, flatc, filepath.Join("..", "..", "..", "schema"))) {
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
