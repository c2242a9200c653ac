package export

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, data, 0o644))
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return sha256.Sum256(data)
}

// budgetPaths are the JSON paths where a budget compile spec may change.
func budgetPaths() []string {
	return []string{
		`delegates\[\d+\]\.compile_specs\[\d+\]\.(key|value_hex|value_utf8)`,
		`delegates\[\d+\]\.compile_specs\[\d+\]`,
		`raw_program\.execution_plan\[\d+\]\.delegates\[\d+\]\.compile_specs\[\d+\](\..*)?`,
	}
}

// TestRebakeUpstreamPrograms re-bakes every upstream-written program with a
// 4 GiB budget and checks against the reference JSON beside it: only
// budget specs change; every segment keeps its sha256; the result carries
// exactly one budget per TensorRT delegate, before target_device.
func TestRebakeUpstreamPrograms(t *testing.T) {
	dir, names := vectorCases(t)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.pte")
			budget := int64(4 << 30)
			res, err := Rebake(filepath.Join(dir, name+".pte"), out, &RebakeOptions{WeightStreamingBudget: &budget})
			require.NoError(t, err)
			require.NotNil(t, res.Budget)
			var want map[string]any
			readJSON(t, filepath.Join(dir, name+".json"), &want)
			got := documentOf(t, out)
			for _, d := range diffExcept(t, got, want, append(budgetPaths(), layoutPaths...)...) {
				t.Error(d)
			}
			assert.Equal(t, len(want["segments"].([]any)), len(got["segments"].([]any)))
			for _, d := range got["delegates"].([]any) {
				specs := d.(map[string]any)["compile_specs"].([]any)
				var keys, budgets []string
				for _, s := range specs {
					sm := s.(map[string]any)
					keys = append(keys, sm["key"].(string))
					if sm["key"] == "weight_streaming_budget" {
						budgets = append(budgets, sm["value_utf8"].(string))
					}
				}
				assert.Equal(t, []string{"4294967296"}, budgets, "keys %v", keys)
				assert.Equal(t, "weight_streaming_budget", keys[0], "budget first, as upstream writes it: %v", keys)
			}

			// Clearing ("auto") removes every budget key and nothing else.
			out2 := filepath.Join(t.TempDir(), "auto.pte")
			_, err = Rebake(out, out2, &RebakeOptions{ClearBudget: true})
			require.NoError(t, err)
			got2 := documentOf(t, out2)
			for _, d := range got2["delegates"].([]any) {
				for _, s := range d.(map[string]any)["compile_specs"].([]any) {
					assert.NotEqual(t, "weight_streaming_budget", s.(map[string]any)["key"])
				}
			}
			for _, d := range diffExcept(t, got2, want, append(budgetPaths(), layoutPaths...)...) {
				t.Error(d)
			}
		})
	}
}

func TestRebakeInPlaceAndTargetDevice(t *testing.T) {
	dir := sharedDir(t, "vectors/pte")
	path := filepath.Join(t.TempDir(), "m.pte")
	copyFile(t, filepath.Join(dir, "trt_two_engines_chain.pte"), path)
	budget := int64(1 << 30)
	res, err := Rebake(path, path, &RebakeOptions{WeightStreamingBudget: &budget, TargetDevice: "cuda:1"})
	require.NoError(t, err)
	assert.Equal(t, 2, res.Delegates)
	kinds := map[WarningKind]bool{}
	for _, w := range res.Warnings {
		kinds[w.Kind] = true
	}
	assert.True(t, kinds[WarnMultipleEngines] && kinds[WarnBudgetPerEngine], "%v", res.Warnings)
	doc := documentOf(t, path)
	for _, d := range doc["delegates"].([]any) {
		specs := d.(map[string]any)["compile_specs"].([]any)
		require.Len(t, specs, 2)
		assert.Equal(t, "1073741824", specs[0].(map[string]any)["value_utf8"])
		assert.Equal(t, "cuda:1", specs[1].(map[string]any)["value_utf8"])
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")
}

// failingReaderAt fails once a read reaches limit.
type failingReaderAt struct {
	r     io.ReaderAt
	limit int64
}

var errInjected = errors.New("injected failure")

func (f *failingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.limit {
		n := max(0, int(f.limit-off))
		if n > 0 {
			n, _ = f.r.ReadAt(p[:n], off)
		}
		return n, errInjected
	}
	return f.r.ReadAt(p, off)
}

// TestRebakeInterruptedKeepsInput makes a segment source fail half way
// through the write, with the output being the input itself: the input
// must be byte-for-byte intact and no temporary file left.
func TestRebakeInterruptedKeepsInput(t *testing.T) {
	dir := sharedDir(t, "vectors/pte")
	tmp := t.TempDir()
	path := filepath.Join(tmp, "big.pte")
	copyFile(t, filepath.Join(dir, "trt_large_engine_1mib.pte"), path)
	before := fileSum(t, path)
	budget := int64(123)
	wrap := func(segs []*io.SectionReader) []*io.SectionReader {
		out := make([]*io.SectionReader, len(segs))
		for i, s := range segs {
			out[i] = io.NewSectionReader(&failingReaderAt{r: s, limit: s.Size() / 2}, 0, s.Size())
		}
		return out
	}
	_, err := rebake(path, path, &RebakeOptions{WeightStreamingBudget: &budget}, wrap)
	require.Error(t, err)
	assert.ErrorIs(t, err, errInjected)
	assert.Equal(t, before, fileSum(t, path), "input changed")
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "temporary file left behind")

	// The same to a new output: it must not appear.
	out := filepath.Join(tmp, "new.pte")
	_, err = rebake(path, out, &RebakeOptions{WeightStreamingBudget: &budget}, wrap)
	require.Error(t, err)
	_, statErr := os.Stat(out)
	assert.True(t, os.IsNotExist(statErr))
}

func TestRebakeErrors(t *testing.T) {
	dir := sharedDir(t, "vectors/pte")
	in := filepath.Join(dir, "trt_segment.pte")
	out := filepath.Join(t.TempDir(), "o.pte")
	b := int64(1)
	neg := int64(-1)
	for _, c := range []struct {
		opts *RebakeOptions
		msg  string
	}{
		{&RebakeOptions{}, "nothing to change"},
		{&RebakeOptions{WeightStreamingBudget: &b, ClearBudget: true}, "not both"},
		{&RebakeOptions{WeightStreamingBudget: &neg}, "budget"},
		{&RebakeOptions{TargetDevice: "tpu:0"}, "target device"},
	} {
		_, err := Rebake(in, out, c.opts)
		assert.ErrorContains(t, err, c.msg)
	}
	_, err := Rebake(filepath.Join(dir, "missing.pte"), out, &RebakeOptions{ClearBudget: true})
	assert.Error(t, err)
	// A non-TensorRT program has nothing to re-bake.
	corpus := sharedDir(t, "corpus")
	matches, _ := filepath.Glob(filepath.Join(corpus, "djl__add__*.pte"))
	if len(matches) > 0 {
		_, err = Rebake(matches[0], out, &RebakeOptions{ClearBudget: true})
		assert.ErrorContains(t, err, "no TensorRTBackend delegate")
	}
	_, statErr := os.Stat(out)
	assert.True(t, os.IsNotExist(statErr), fmt.Sprint(statErr))
	assert.False(t, strings.Contains(out, "tmp-"))
}
