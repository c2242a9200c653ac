package pte

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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

// verdictToken is one token of a pte-bad verdict (vectors README, section
// 5): kind is "load", "meta", "method", "data_loader" or "CRASH"; method is
// set for meta and method; value is "ok", an ExecuTorch Error name or a
// signal name; n is the repeat count of the "x<n>" suffix (1 without it).
type verdictToken struct {
	kind, method, value string
	n                   int
}

// parseVerdict splits a verdict into its tokens, rejecting anything outside
// the documented grammar so that a new kind of token fails loudly instead
// of being skipped.
func parseVerdict(verdict string) ([]verdictToken, error) {
	var toks []verdictToken
	for _, raw := range strings.Fields(verdict) {
		tok := verdictToken{n: 1}
		head, value, ok := strings.Cut(raw, ":")
		if !ok || value == "" {
			return nil, fmt.Errorf("token %q: no \":<value>\"", raw)
		}
		// A repeat suffix "x<n>" can only follow the value; values are
		// identifiers (Error names, "ok", signal names) that do not end
		// in x<digits>.
		if i := strings.LastIndexByte(value, 'x'); i > 0 {
			if n, err := strconv.Atoi(value[i+1:]); err == nil && n > 1 {
				value, tok.n = value[:i], n
			}
		}
		tok.value = value
		switch {
		case head == "load", head == "data_loader", head == "CRASH":
			tok.kind = head
		case strings.HasPrefix(head, "meta[") && strings.HasSuffix(head, "]"):
			tok.kind, tok.method = "meta", head[len("meta["):len(head)-1]
		case strings.HasPrefix(head, "method[") && strings.HasSuffix(head, "]"):
			tok.kind, tok.method = "method", head[len("method["):len(head)-1]
		default:
			return nil, fmt.Errorf("token %q: unknown kind %q", raw, head)
		}
		toks = append(toks, tok)
	}
	return toks, nil
}

func TestParseVerdict(t *testing.T) {
	toks, err := parseVerdict("data_loader:InvalidArgument load:ok meta[fwd]:InvalidProgram method[fwd]:okx3 CRASH:SIGSEGV")
	if err != nil {
		t.Fatal(err)
	}
	want := []verdictToken{
		{"data_loader", "", "InvalidArgument", 1}, {"load", "", "ok", 1},
		{"meta", "fwd", "InvalidProgram", 1}, {"method", "fwd", "ok", 3}, {"CRASH", "", "SIGSEGV", 1},
	}
	if fmt.Sprint(toks) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", toks, want)
	}
	for _, bad := range []string{"load", "frob:ok", "method[x:ok", "load:"} {
		if _, err := parseVerdict(bad); err == nil {
			t.Errorf("parseVerdict(%q) succeeded", bad)
		}
	}
}

// TestPteBad checks every damaged program against its InternalConsistency
// verdict: Open fails with the C++ runtime's code when Program::load fails;
// otherwise Verify reports an Error with the code method_meta or
// load_method failed with, and, where upstream accepts a method that is
// still invalid (vectors README: a Go reader should reject every file
// here), some Error finding for that method. Every file is rejected one way
// or the other.
func TestPteBad(t *testing.T) {
	dir := testkit.SharedDir(t, "vectors/pte-bad")
	for _, c := range readPteBadIndex(t, dir) {
		t.Run(c.name, func(t *testing.T) {
			toks, err := parseVerdict(c.verdict)
			if err != nil {
				t.Fatalf("verdict %q: %v", c.verdict, err)
			}
			load := ""
			for _, tok := range toks {
				if tok.kind == "load" {
					load = tok.value
				}
			}
			f, err := Open(filepath.Join(dir, c.name+".pte"))
			if errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("index.tsv names a program the tree lacks: %v", err)
			}
			if load != "" && load != "ok" {
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
				if load == "ok" {
					t.Fatalf("Open: %v; C++ loads the program (%s)", err, c.verdict)
				}
				t.Logf("Open: %v (verdict %s)", err, c.verdict)
				return
			}
			defer f.Close()
			findings := f.Verify()
			for _, fd := range findings {
				t.Logf("%v", fd)
			}
			for _, tok := range toks {
				if tok.kind != "meta" && tok.kind != "method" {
					continue
				}
				if tok.value == "ok" {
					if !hasMethodError(findings, tok.method) {
						t.Errorf("%s: upstream accepts method %s, but the file is invalid: want an Error for it", c.verdict, tok.method)
					}
					continue
				}
				if !hasFinding(findings, tok.method, tok.value, true) {
					t.Errorf("%s: want an Error with code %s for method %s", c.verdict, tok.value, tok.method)
				}
			}
			if !hasMethodError(findings, "*") {
				t.Errorf("%s: Open and Verify accept the file; want it rejected", c.verdict)
			}
		})
	}
}

// hasMethodError reports whether findings hold an Error for method, or a
// program-level Error (which fails every method), or any Error when method
// is "*".
func hasMethodError(fs []Finding, method string) bool {
	for _, fd := range fs {
		if fd.Severity == SeverityError && (method == "*" || fd.Method == method || fd.Method == "") {
			return true
		}
	}
	return false
}

// TestPteVectors checks that every TensorRT program the C++ runtime loads
// (its NAME.cpp.jsonl) opens and verifies without errors, and that its
// delegate payloads are reachable; one it refuses gets an error finding.
func TestPteVectors(t *testing.T) {
	dir := testkit.SharedDir(t, "vectors/pte")
	for _, path := range testkit.Glob(t, dir, "*.pte") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			verdict := readCppVerdict(t, strings.TrimSuffix(path, ".pte")+".cpp.jsonl")
			clean := verdict.loadOK
			for _, code := range verdict.methods {
				clean = clean && code == ""
			}
			f, err := Open(path)
			if err != nil {
				if clean {
					t.Fatalf("Open: %v (the C++ runtime loads it)", err)
				}
				return
			}
			defer f.Close()
			if !clean {
				if !slices.ContainsFunc(f.Verify(), func(fd Finding) bool { return fd.Severity == SeverityError }) {
					t.Errorf("the C++ runtime refuses it (%+v) but Verify finds no error", verdict)
				}
				return
			}
			for _, fd := range f.Verify() {
				if fd.Severity == SeverityError {
					t.Errorf("%v", fd)
				}
			}
			want := readDelegateSummary(t, strings.TrimSuffix(path, ".pte")+".json")
			for _, d := range want {
				pl, err := f.DelegateData(d.PlanIndex, d.DelegateIndex)
				if err != nil {
					t.Errorf("DelegateData(%d, %d): %v", d.PlanIndex, d.DelegateIndex, err)
					continue
				}
				data, err := pl.Data()
				if err != nil {
					t.Errorf("delegate %d:%d: %v", d.PlanIndex, d.DelegateIndex, err)
					continue
				}
				sum := sha256.Sum256(data)
				magic := string(data[:min(len(data), 4)])
				if len(data) != d.Size || hex.EncodeToString(sum[:]) != d.SHA256 || magic != d.Magic {
					t.Errorf("delegate %d:%d: %d bytes, sha256 %x, magic %q; want %d, %s, %q",
						d.PlanIndex, d.DelegateIndex, len(data), sum, magic, d.Size, d.SHA256, d.Magic)
				}
			}
		})
	}
}

// delegateSummary is one entry of NAME.json's delegates[] (vectors README,
// section 4).
type delegateSummary struct {
	PlanIndex     int    `json:"plan_index"`
	DelegateIndex int    `json:"delegate_index"`
	Size          int    `json:"size"`
	SHA256        string `json:"sha256"`
	Magic         string `json:"magic"`
}

// readDelegateSummary reads the delegates[] of a vectors/pte NAME.json.
// Magic is Latin-1 there, so it is mapped back to bytes.
func readDelegateSummary(t *testing.T, path string) []delegateSummary {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Delegates []delegateSummary `json:"delegates"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for i := range doc.Delegates {
		m := []byte{}
		for _, r := range doc.Delegates[i].Magic {
			m = append(m, byte(r))
		}
		doc.Delegates[i].Magic = string(m)
	}
	return doc.Delegates
}
