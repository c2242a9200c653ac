package pte

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// pteBadCase is one line of vectors/pte-bad/index.tsv.
type pteBadCase struct {
	name, source, verdict string
}

func readPteBadIndex(t *testing.T, dir string) []pteBadCase {
	t.Helper()
	fh, err := os.Open(filepath.Join(dir, "index.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var cases []pteBadCase
	sc := bufio.NewScanner(fh)
	for first := true; sc.Scan(); first = false {
		cols := strings.Split(sc.Text(), "\t")
		if first || len(cols) < 3 {
			continue
		}
		cases = append(cases, pteBadCase{cols[0], cols[1], cols[2]})
	}
	if len(cases) == 0 {
		t.Fatal("empty pte-bad index")
	}
	return cases
}

// Cases upstream accepts at load time; we still report an Error finding.
var upstreamAcceptsBad = map[string]string{
	"delegate_call_index_out_of_range": "Internal",
	"plan_input_index_out_of_range":    "InvalidProgram",
}

// TestPteBad checks every damaged program: Open fails with the C++
// runtime's code when Program::load fails, otherwise Verify reports an Error
// with the code load_method (or method_meta) failed with.
func TestPteBad(t *testing.T) {
	dir := testkit.SharedDir(t, "vectors/pte-bad")
	for _, c := range readPteBadIndex(t, dir) {
		t.Run(c.name, func(t *testing.T) {
			f, err := Open(filepath.Join(dir, c.name+".pte"))
			tokens := strings.Fields(c.verdict)
			load := strings.TrimPrefix(tokens[0], "load:")
			if load != "ok" {
				var fe *FormatError
				if err == nil {
					f.Close()
					t.Fatalf("Open succeeded; C++ load fails with %s", load)
				}
				if !errors.As(err, &fe) || fe.Code.String() != load {
					t.Fatalf("Open: %v; want code %s", err, load)
				}
				t.Logf("Open: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("Open: %v; C++ loads the program (%s)", err, c.verdict)
			}
			defer f.Close()
			findings := f.Verify()
			for _, tok := range tokens[1:] {
				var method, code string
				if i := strings.Index(tok, "]:"); i > 0 {
					method = tok[strings.Index(tok, "[")+1 : i]
					code = tok[i+2:]
				}
				if code == "ok" {
					code = upstreamAcceptsBad[c.name]
				}
				if code == "" {
					t.Fatalf("unexpected verdict token %q", tok)
				}
				if !hasFinding(findings, method, code, true) {
					t.Errorf("%s: want an Error with code %s for method %s; got %v", c.verdict, code, method, findings)
				}
			}
			for _, fd := range findings {
				t.Logf("%v", fd)
			}
		})
	}
}

// TestPteVectors checks that every well-formed TensorRT program opens and
// verifies without errors, and that its delegate payloads are reachable.
func TestPteVectors(t *testing.T) {
	dir := testkit.SharedDir(t, "vectors/pte")
	for _, path := range testkit.Glob(t, dir, "*.pte") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := Open(path)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer f.Close()
			for _, fd := range f.Verify() {
				if fd.Severity == SeverityError {
					t.Errorf("%v", fd)
				}
			}
			for i, ep := range f.Program.ExecutionPlan {
				for j := range ep.Delegates {
					pl, err := f.DelegateData(i, j)
					if err != nil {
						t.Fatalf("DelegateData(%d, %d): %v", i, j, err)
					}
					data, err := pl.Data()
					if err != nil || len(data) < 4 || string(data[:2]) != "TR" {
						t.Errorf("delegate %d:%d payload %q..., err %v; want a TR0x blob", i, j, data[:min(len(data), 4)], err)
					}
				}
			}
		})
	}
}
