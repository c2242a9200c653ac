package export

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/check"
	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

// verdict opens the program at path and returns the first error of
// check.Program, the verdict `pteinspect --verify` prints; ok is false when
// it finds none.
func verdict(t *testing.T, path string) (first check.Problem, ok bool) {
	t.Helper()
	f, err := pte.Open(path)
	require.NoError(t, err)
	defer f.Close()
	probs, err := check.Program(f)
	require.NoError(t, err)
	first, _, ok = check.FirstError(probs)
	return first, ok
}

// assertRefused checks that err is a re-bake's refusal of an input whose
// first verification error is first: an *Error naming its method, whose
// message names where (the delegate, for a delegate's problem), and that
// out was not created.
func assertRefused(t *testing.T, err error, first check.Problem, out string) {
	t.Helper()
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, first.Method, e.Method)
	assert.Contains(t, e.Msg, "fails verification, so it is not re-baked")
	assert.Contains(t, e.Msg, first.Path)
	assert.Contains(t, e.Msg, first.Message)
	_, statErr := os.Stat(out)
	assert.ErrorIs(t, statErr, fs.ErrNotExist, "nothing is written")
}

// hasTensorRT reports whether the program at path opens and has a
// TensorRTBackend delegate.
func hasTensorRT(path string) bool {
	f, err := pte.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for i := range f.Program.NumPlans() {
		if slices.ContainsFunc(f.Program.PlanDelegates(i), func(d *pte.BackendDelegate) bool { return d != nil && delegate.IsTensorRT(d.ID) }) {
			return true
		}
	}
	return false
}

// blobMetadataRanges returns the file ranges of the metadata of the
// TensorRT blobs of the program in data (those whose header reads).
func blobMetadataRanges(data []byte) [][2]int64 {
	f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil
	}
	var out [][2]int64
	for i := range f.Program.NumPlans() {
		for j, d := range f.Program.PlanDelegates(i) {
			if d == nil || !delegate.IsTensorRT(d.ID) {
				continue
			}
			pl, err := f.DelegateData(i, j)
			if err != nil || pl.FileOffset < 0 || pl.Size() < delegate.HeaderSize {
				continue
			}
			hdr := make([]byte, delegate.HeaderSize)
			if _, err := pl.ReadAt(hdr, 0); err != nil {
				continue
			}
			h, _ := delegate.ParseHeader(hdr)
			off, n := int64(h.MetadataOffset), int64(h.MetadataSize)
			if n > 0 && off+n <= pl.Size() {
				out = append(out, [2]int64{pl.FileOffset + off, n})
			}
		}
	}
	return out
}

// invalidUTF8Program returns a program whose first TensorRT blob's
// metadata holds a byte that is not UTF-8 in a binding name: the strict
// reading refuses the blob, the deployed C++ reader accepts it
// (deployed-accepts-invalid), and TensorRT would run with a name nothing
// means.
func invalidUTF8Program(t *testing.T) string {
	t.Helper()
	path := twoEngineProgram(t, 128)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	md := blobMetadataRanges(data)
	require.NotEmpty(t, md)
	region := data[md[0][0] : md[0][0]+md[0][1]]
	i := bytes.Index(region, []byte(`"name":"in"`))
	require.GreaterOrEqual(t, i, 0, "metadata %q", region)
	region[i+len(`"name":"`)] = 0xff
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// TestRebakeRefusesWhatVerifyRejects is issue 21's defect 8: re-bake and
// `pteinspect --verify` decide with one set of checks (check.Program). A
// blob whose metadata is not UTF-8 but which the deployed reader accepts,
// and a delegate with the budget key twice, were re-baked silently (the
// first into an output --verify fails, the second dropping a key); both
// are refused now, naming the method and the delegate.
func TestRebakeRefusesWhatVerifyRejects(t *testing.T) {
	budget := int64(1 << 20)
	for name, path := range map[string]string{
		"metadata not UTF-8": invalidUTF8Program(t),
		"budget key twice": twoEngineProgramEdited(t, 128, func(p *pte.Program) {
			d := p.Plan(0).Delegates[1]
			d.CompileSpecs = append(d.CompileSpecs, &pte.CompileSpec{Key: "weight_streaming_budget", Value: []byte("1")},
				&pte.CompileSpec{Key: "weight_streaming_budget", Value: []byte("2")})
		}),
	} {
		t.Run(name, func(t *testing.T) {
			first, bad := verdict(t, path)
			require.True(t, bad, "the built input fails --verify")
			assert.Contains(t, first.Path, "delegates[")
			out := filepath.Join(t.TempDir(), "out.pte")
			_, err := Rebake(path, out, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)})
			assertRefused(t, err, first, out)
			assert.Contains(t, err.Error(), `method "forward"`)
		})
	}
}

// TestRebakeIffVerifyPasses is the property behind defect 8, over every
// program of the shared tree found at run time and mutants of each (a
// byte of a TensorRT blob's metadata with its top bit flipped, which is
// how most of the campaign's mutants went wrong): a program that opens is
// re-baked exactly when check.Program finds no error in it (and it has a
// TensorRT delegate), and what a re-bake writes has no error either; one
// that does not open is refused.
func TestRebakeIffVerifyPasses(t *testing.T) {
	testkit.SharedDir(t) // the tree is this test's input
	inputs := testkit.SharedPrograms(t, 1<<20)
	require.NotEmpty(t, inputs, "no program in the shared tree")
	root, err := filepath.EvalSymlinks(testkit.SharedDir(t))
	require.NoError(t, err)
	tmp := t.TempDir()
	budget := int64(3 << 20)
	var refused, baked, mutants, unopened int
	try := func(name, path string) {
		out := filepath.Join(tmp, "out.pte")
		os.Remove(out)
		f, err := pte.Open(path)
		if err != nil {
			unopened++
			_, rerr := Rebake(path, out, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)})
			assert.Error(t, rerr, "%s does not open, yet re-bakes", name)
			return
		}
		probs, err := check.Program(f)
		f.Close()
		require.NoError(t, err, name)
		first, _, bad := check.FirstError(probs)
		_, err = Rebake(path, out, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)})
		switch {
		case bad:
			refused++
			if assert.Error(t, err, "%s: --verify finds %s, yet it re-bakes", name, first) {
				assertRefused(t, err, first, out)
			}
		case !hasTensorRT(path):
			assert.ErrorContains(t, err, "nothing to re-bake", name)
		default:
			baked++
			if assert.NoError(t, err, "%s passes --verify, yet is refused", name) {
				if got, bad := verdict(t, out); bad {
					t.Errorf("%s: the re-baked output fails --verify: %s", name, got)
				}
			}
		}
	}
	for _, in := range inputs {
		name, _ := filepath.Rel(root, in)
		try(name, in)
		data, err := os.ReadFile(in)
		require.NoError(t, err)
		for k, r := range blobMetadataRanges(data) {
			if k == 2 {
				break
			}
			for _, at := range []int64{r[1] / 5, r[1] / 2, r[1] - r[1]/3} {
				m := slices.Clone(data)
				m[r[0]+at] ^= 0x80
				mp := filepath.Join(tmp, "mutant.pte")
				require.NoError(t, os.WriteFile(mp, m, 0o644))
				mutants++
				try(fmt.Sprintf("%s with byte %d flipped", name, r[0]+at), mp)
			}
		}
	}
	t.Logf("%d programs, %d mutants: %d re-baked, %d refused, %d not opened", len(inputs), mutants, baked, refused, unopened)
	assert.NotZero(t, baked, "no input passes --verify")
	assert.NotZero(t, refused, "no input fails --verify")
	assert.NotZero(t, mutants, "no blob to mutate")
}
