package pte

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// TestOpenAllocBound checks FuzzOpen's allocation bound deterministically
// on the corpus and on inputs built to allocate much per byte: shared
// strings, one shared vector, many findings per vector element.
func TestOpenAllocBound(t *testing.T) {
	inputs := map[string][]byte{}
	dir := testkit.SharedDir(t, "corpus")
	for _, path := range testkit.Glob(t, dir, "*.pte") {
		if st, err := os.Stat(path); err == nil && st.Size() <= 8<<20 {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			inputs[filepath.Base(path)] = b
		}
	}
	bad := wrProgram(0)
	args := make([]int32, 40000)
	for i := range args {
		args[i] = 1 << 30
	}
	bad.Plan(0).Chains[0].Instructions = []*Instruction{{Args: &DelegateCall{Args: args}}}
	bad.Plan(0).Inputs = args
	inputs["40000 bad indices twice"] = shWrite(t, bad)
	for _, n := range []int{2, 60} {
		b, _ := shSharedSizes(t, n)
		inputs[fmt.Sprintf("%d tensors sharing sizes", n)] = b
	}

	var worst float64
	for name, b := range inputs {
		_, _, alloc, err := openAndVerify(b, nil)
		ratio := float64(alloc) / float64(len(b))
		worst = max(worst, ratio)
		if alloc > openAllocBound(len(b)) {
			t.Errorf("%s: %d bytes allocated for %d input bytes (%.1f per byte; err %v)", name, alloc, len(b), ratio, err)
		}
	}
	t.Logf("%d inputs, at most %.1f bytes allocated per input byte", len(inputs), worst)
}

// TestVerifyElementFindingsLimit: Verify lists the first maxElemFindings
// bad elements of a vector and counts the rest in one finding.
func TestVerifyElementFindingsLimit(t *testing.T) {
	for _, n := range []int{3, maxElemFindings, 100} {
		p := wrProgram(0)
		p.Plan(0).Inputs = make([]int32, n)
		for i := range p.Plan(0).Inputs {
			p.Plan(0).Inputs[i] = -1
		}
		f := shOpen(t, shWrite(t, p))
		var listed, summary int
		for _, fd := range f.Verify() {
			switch fd.Err.Path {
			case "execution_plan[0].inputs":
				summary++
				if want := fmt.Sprintf("%d more elements", n-maxElemFindings); !strings.Contains(fd.Err.Msg, want) {
					t.Errorf("summary %q does not say %q", fd.Err.Msg, want)
				}
			default:
				if strings.HasPrefix(fd.Err.Path, "execution_plan[0].inputs[") {
					listed++
				}
			}
		}
		wantListed, wantSummary := min(n, maxElemFindings), 0
		if n > maxElemFindings {
			wantSummary = 1
		}
		if listed != wantListed || summary != wantSummary {
			t.Errorf("%d bad inputs: %d listed and %d summaries, want %d and %d", n, listed, summary, wantListed, wantSummary)
		}
	}
}
