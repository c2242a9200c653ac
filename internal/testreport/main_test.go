package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRealGoTest runs `go test -json` on a small module with a passing, a
// skipping and a failing test, so the report is checked against the event
// stream this Go version really writes.
func TestRealGoTest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a module")
	}
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.21\n")
	write("m_test.go", `package m

import "testing"

func TestPasses(t *testing.T) { t.Log("quiet") }
func TestSkips(t *testing.T)  { t.Skip("needs the corpus") }
func TestFails(t *testing.T)  { t.Error("broken here") }
func TestSub(t *testing.T) {
	t.Run("inner", func(t *testing.T) { t.Skipf("file %s missing", "x.ptd") })
}
`)
	cmd := exec.Command("go", "test", "-json", "-count=1", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	stream, _ := cmd.Output() // exits 1: a test fails
	var out bytes.Buffer
	rc := run(bytes.NewReader(stream), &out)
	got := out.String()
	if rc != 1 {
		t.Errorf("exit %d, want 1 (a test failed)\n%s", rc, got)
	}
	for _, want := range []string{"--- FAIL: TestFails", "broken here", "skipped tests (2):",
		"example.com/m TestSkips: ", "needs the corpus", "example.com/m TestSub/inner: ", "file x.ptd missing"} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "quiet") || strings.Contains(got, "=== RUN") {
		t.Errorf("report shows a passing test's output:\n%s", got)
	}
}

func TestPassingPackageOneLine(t *testing.T) {
	stream := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Output":"PASS\n"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.01s\n"}
{"Action":"pass","Package":"p"}
`
	var out bytes.Buffer
	if rc := run(strings.NewReader(stream), &out); rc != 0 {
		t.Errorf("exit %d, want 0", rc)
	}
	if got := out.String(); got != "ok  \tp\t0.01s\n" {
		t.Errorf("report %q, want the ok line only", got)
	}
}

func TestBuildFailureAndPlainText(t *testing.T) {
	stream := `{"ImportPath":"q","Action":"build-output","Output":"q/x.go:3:1: syntax error\n"}
{"ImportPath":"q","Action":"build-fail"}
no Go files in /nowhere
{"Action":"output","Package":"q","Output":"FAIL\tq [build failed]\n"}
{"Action":"fail","Package":"q","FailedBuild":"q"}
`
	var out bytes.Buffer
	if rc := run(strings.NewReader(stream), &out); rc != 1 {
		t.Errorf("exit %d, want 1", rc)
	}
	for _, want := range []string{"syntax error", "no Go files in /nowhere", "FAIL\tq [build failed]"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
