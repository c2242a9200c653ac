package archtest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ptekit/ptekit"

// anything marks a package that may import every ptekit package the other
// rules allow (the commands, the test helpers).
const anything = "*"

// allowed is the "may import (ptekit)" column of docs/architecture.md: the
// ptekit packages each package's non-test code may import. A name ending
// in "/" stands for every package under it. TestTableMatchesDoc keeps the
// two in step.
var allowed = map[string][]string{
	"internal/fbs/":        {},
	"internal/fbverify":    {},
	"httprange":            {},
	"objstore":             {"httprange", "internal/quote"},
	"internal/atomicfile":  {},
	"internal/undorecord":  {},
	"internal/inplace":     {"internal/atomicfile", "internal/undorecord"},
	"internal/quote":       {},
	"internal/jsontree":    {},
	"internal/batch":       {},
	"pte":                  {"internal/fbs/", "internal/fbverify", "httprange", "objstore", "internal/atomicfile", "internal/quote"},
	"ptd":                  {"pte", "internal/fbs/", "internal/fbverify", "internal/atomicfile", "internal/quote"},
	"compilespec":          {"pte", "internal/quote", "internal/size"},
	"delegate":             {"internal/jsontree", "internal/quote"},
	"executor":             {"pte", "ptd", "compilespec", "delegate", "internal/quote"},
	"check":                {"pte", "compilespec", "delegate", "internal/quote"},
	"internal/jsonerr":     {"pte", "ptd", "executor"},
	"inspect":              {"pte", "ptd", "compilespec", "delegate", "executor", "check", "internal/jsonerr", "internal/jsontree", "internal/quote"},
	"export":               {"pte", "compilespec", "delegate", "check", "objstore", "internal/atomicfile", "internal/inplace", "internal/undorecord", "internal/jsontree", "internal/quote", "internal/batch"},
	"internal/input":       {"pte", "ptd", "compilespec", "httprange", "objstore", "internal/atomicfile", "internal/undorecord"},
	"internal/cli":         {"internal/batch"},
	"internal/progress":    {"internal/size"},
	"internal/size":        {"internal/quote"},
	"internal/bench":       {},
	"internal/testreport":  {},
	"cmd/":                 {anything},
	"internal/testkit":     {anything},
	"internal/testprog":    {anything},
	"internal/s3test":      {anything},
	"internal/conformtree": {anything},
	"internal/archtest":    {},
}

// fbsUsers are the only packages whose code or tests may import the
// generated FlatBuffers code: the format packages, which verify bytes
// before they call it, and the generated packages' own tests.
var fbsUsers = []string{"pte", "ptd", "internal/fbs/"}

// testOnly are imported by tests only.
var testOnly = []string{"internal/testkit", "internal/testprog", "internal/conformtree", "internal/s3test"}

// match reports whether package rel is named by pattern (a name, or a
// prefix ending in "/").
func match(pattern, rel string) bool {
	if strings.HasSuffix(pattern, "/") {
		return strings.HasPrefix(rel, pattern)
	}
	return rel == pattern
}

func matchAny(patterns []string, rel string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, rel) })
}

// rule returns the allowed-imports entry of package rel.
func rule(rel string) ([]string, bool) {
	for pat, imps := range allowed {
		if match(pat, rel) {
			return imps, true
		}
	}
	return nil, false
}

type pkg struct {
	rel              string   // path inside the module
	imports, testing []string // ptekit imports of the code, and of its tests
}

// listPackages runs go list over the module.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(gobin, "list", "-f",
		"{{.ImportPath}}\t{{join .Imports \" \"}}\t{{join .TestImports \" \"}} {{join .XTestImports \" \"}}", module+"/...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	ours := func(paths string) []string {
		var rel []string
		for _, p := range strings.Fields(paths) {
			if r, ok := strings.CutPrefix(p, module+"/"); ok {
				rel = append(rel, r)
			}
		}
		return rel
	}
	var pkgs []pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 3 {
			t.Fatalf("go list line %q", sc.Text())
		}
		rel := strings.TrimPrefix(f[0], module+"/")
		pkgs = append(pkgs, pkg{rel: rel, imports: ours(f[1]), testing: ours(f[2])})
	}
	if len(pkgs) < 5 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

// TestImportDirection fails when a package imports one that
// docs/architecture.md draws above it, when anything but the format
// packages imports the generated FlatBuffers code, and when non-test code
// imports a test helper.
func TestImportDirection(t *testing.T) {
	for _, p := range listPackages(t) {
		imps, ok := rule(p.rel)
		if !ok {
			t.Errorf("package %s is not in docs/architecture.md: add it to the package table and to this test's allowed table", p.rel)
			continue
		}
		for _, imp := range p.imports {
			if matchAny(testOnly, imp) && !matchAny(testOnly, p.rel) {
				t.Errorf("%s imports the test helper %s outside its tests", p.rel, imp)
			}
			if !slices.Contains(imps, anything) && !matchAny(imps, imp) {
				t.Errorf("%s imports %s, which docs/architecture.md does not allow (allowed: %v)", p.rel, imp, imps)
			}
		}
		for _, imp := range slices.Concat(p.imports, p.testing) {
			if match("internal/fbs/", imp) && !matchAny(fbsUsers, p.rel) {
				t.Errorf("%s imports the generated code %s: only %v may", p.rel, imp, fbsUsers)
			}
		}
	}
}

// TestTableMatchesDoc checks that the allowed table above says what the
// package table of docs/architecture.md says, so the two cannot drift.
func TestTableMatchesDoc(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile("`([^`]+)`")
	seen := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		last := strings.TrimSpace(cells[3])
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			pat := strings.TrimSuffix(m[1], "...")
			if pat == "schema/" {
				continue // the .fbs files, not a Go package
			}
			key := pat
			if _, ok := allowed[key]; !ok {
				for k := range allowed {
					if match(k, pat) {
						key = k
					}
				}
			}
			want, ok := allowed[key]
			if !ok {
				t.Errorf("docs/architecture.md names %q, which this test's allowed table lacks", pat)
				continue
			}
			seen[key] = true
			var got []string
			switch {
			case strings.HasPrefix(last, "anything"):
				got = []string{anything}
			case last == "—" || last == "-":
				got = []string{}
			default:
				for _, n := range name.FindAllStringSubmatch(last, -1) {
					imp := n[1]
					if imp == "internal/fbs" {
						imp = "internal/fbs/"
					}
					got = append(got, imp)
				}
			}
			slices.Sort(got)
			w := slices.Clone(want)
			slices.Sort(w)
			if !slices.Equal(got, w) {
				t.Errorf("%s: docs/architecture.md allows %v, this test %v", pat, got, w)
			}
		}
	}
	for pat := range allowed {
		if !seen[pat] {
			t.Errorf("this test allows imports for %q, which docs/architecture.md does not list", pat)
		}
	}
}
