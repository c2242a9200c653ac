package conformtree

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// conformancePackages are the packages whose conformance tests read the
// tree, and conformanceTests those tests: the ones that walk the
// directories Build adds to.
var (
	conformancePackages = []string{"./pte", "./ptd", "./executor", "./export", "./cmd/pteinspect", "./cmd/pteexport"}
	conformanceTests    = "^(TestCorpus|TestCorpusOpen|TestCorpusPairs|TestVectors|TestDataPairs|TestDataVectors|" +
		"TestLoadOutcomeMatchesUpstream|TestVerifyDataPairs|TestVerifyDataVectors|TestCorpusJSON|" +
		"TestVectorsJSON|TestPteVectors|TestWriteVectorsMatchUpstreamLayout|TestVectorsBackendInit|TestVectorsTensorRTOutcome|" +
		"TestVerifyVectors|TestRebakeUpstreamPrograms|TestRebakeKeepsSegmentLayout|TestExportMatchesUpstreamPrograms|" +
		"TestRebakeCLI|TestRebakeCLIMatchesReference)$"
)

// TestSuiteOnAugmentedTree runs the conformance tests of the packages that
// read the shared tree against a tree built here (go test with
// PTEKIT_SHARED and CI set, so that nothing missing is skipped), and checks
// that they judged every situation the tree adds: each run of the refused
// program, the crashed run and the TensorRT vectors pass (a blob TensorRT
// refuses is refused by the re-bake), the run naming a missing data file
// and the vectors the exporter cannot describe are skipped with their
// reasons.
func TestSuiteOnAugmentedTree(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the conformance tests of six packages (-short)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("go command not found (CI is set): %v", err)
		}
		t.Skipf("go command not found: %v", err)
	}
	root := Build(t)
	args := append([]string{"test", "-count=1", "-timeout=10m", "-v", "-run", conformanceTests}, conformancePackages...)
	cmd := exec.Command(goBin, args...)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "PTEKIT_SHARED="+root, "CI=true")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test against the augmented tree: %v\n%s", err, failures(string(out)))
	}
	name := func(s string) string { return regexp.QuoteMeta(s) }
	refusedRun := name(Refused) + `__[0-9a-f]{8}\+`
	for _, want := range []struct {
		test, sub, status string
		n                 int
	}{
		// A third run pairs it with a data file of the tree, if it has one.
		{"TestCorpusPairs", refusedRun, "PASS", 2},
		{"TestDataPairs", refusedRun, "PASS", 2},
		{"TestVerifyDataPairs", refusedRun, "PASS", 2},
		{"TestCorpusOpen", name(Refused), "PASS", 1},
		{"TestCorpusOpen", name(External), "PASS", 1},
		{"TestVectors", name(CrashedRun), "PASS", 1},
		{"TestDataVectors", name(CrashedRun), "PASS", 1},
		{"TestVerifyDataVectors", name(CrashedRun), "PASS", 1},
		{"TestVectors", name(MissingRun), "SKIP", 1},
		{"TestDataVectors", name(MissingRun), "SKIP", 1},
		{"TestVerifyDataVectors", name(MissingRun), "SKIP", 1},
		{"TestRebakeUpstreamPrograms", name(EmptyBlob), "PASS", 1},
		{"TestRebakeKeepsSegmentLayout", name(EmptyBlob), "PASS", 1},
		{"TestRebakeCLIMatchesReference", name(EmptyBlob), "PASS", 1},
		{"TestRebakeCLIMatchesReference", name(PinnedDevice), "PASS", 1},
		{"TestExportMatchesUpstreamPrograms", name(PinnedDevice), "PASS", 1},
		{"TestExportMatchesUpstreamPrograms", name(UnusedConstant), "SKIP", 1},
		{"TestExportMatchesUpstreamPrograms", name(PartialBudget), "SKIP", 1},
		{"TestVectorsBackendInit", name(EmptyBlob), "PASS", 4},
		{"TestVectorsTensorRTOutcome", name(EmptyBlob), "PASS", 4},
	} {
		re := regexp.MustCompile(`(?m)^\s*--- ` + want.status + `: ` + want.test + `/` + want.sub)
		// At least: a tree built on a tree built here holds each case twice.
		if got := len(re.FindAllString(string(out), -1)); got < want.n {
			t.Errorf("%s: %d subtests %s matching %s, want %d", want.test, got, want.status, want.sub, want.n)
		}
	}
	for _, why := range []string{"data file syn_gone.ptd is missing", "used by no instruction", "only some delegates carry a weight_streaming_budget"} {
		if !strings.Contains(string(out), why) {
			t.Errorf("no skip says %q", why)
		}
	}
}

// failures returns the lines of go test -v output that report failures,
// with the log lines around them, or the whole output when there are none.
func failures(out string) string {
	var keep []string
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.Contains(l, "--- FAIL") || strings.HasPrefix(l, "FAIL") || strings.Contains(l, "_test.go:") {
			keep = append(keep, lines[i])
		}
	}
	if len(keep) == 0 {
		return out
	}
	return strings.Join(keep, "\n")
}

// TestBuildKeep builds a tree in $CONFORMTREE_KEEP (an empty or absent
// directory), for a person who wants to run the suite against it by hand:
//
//	CONFORMTREE_KEEP=/tmp/tree go test ./internal/conformtree -run TestBuildKeep
//	PTEKIT_SHARED=/tmp/tree go test ./...
func TestBuildKeep(t *testing.T) {
	dst := os.Getenv("CONFORMTREE_KEEP")
	if dst == "" {
		t.Skip("CONFORMTREE_KEEP not set")
	}
	BuildIn(t, dst)
}
