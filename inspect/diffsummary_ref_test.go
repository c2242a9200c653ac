package inspect

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

// TestDiffSummaryAgreesWithUpstream: for every pair of
// reference/diff_pte/PAIRS.tsv, every fact ExecuTorch's diff_pte.py
// recorded appears in SummarizeDiff's result with the same value: the
// verdict and sizes, the methods that differ (by index), their operators,
// delegates, buffer sizes and counts, the set of differing tensors with
// their metadata changes, uses, byte sizes and element statistics, the
// differing non-tensor values, and the tensors and methods found on one
// side only. The pairs and records are read from the tree, so the test
// holds on pairs it has never seen.
func TestDiffSummaryAgreesWithUpstream(t *testing.T) {
	dir := testkit.SharedDir(t, "reference", "diff_pte")
	root := filepath.Dir(filepath.Dir(dir))
	for _, row := range testkit.TSV(t, filepath.Join(dir, "PAIRS.tsv")) {
		a, b := row["a"], row["b"]
		t.Run(filepath.Base(a)+"+"+filepath.Base(b), func(t *testing.T) {
			rec := readDiffRecord(t, dir, a, b)
			var files [2]*pte.File
			var reads [2]*testkit.RangeReaderAt
			for i, p := range []string{a, b} {
				data, err := os.ReadFile(filepath.Join(root, p))
				require.NoError(t, err)
				files[i], reads[i] = openRecording(t, data)
			}
			s, err := SummarizeDiff(files[0], files[1], nil)
			require.NoError(t, err)
			// One pass over each file: no byte read twice, heads of
			// delegate payloads and constants included.
			for i, f := range files {
				assertReadOnce(t, fmt.Sprintf("side %d", i), reads[i], f.Size)
			}
			got := asJSON(t, s)
			checkAgreement(t, rec, got)
		})
	}
}

// readDiffRecord reads the record of pair a, b: the JSON file whose name
// ends in "A+B.json" (base names without extension).
func readDiffRecord(t *testing.T, dir, a, b string) map[string]any {
	t.Helper()
	stem := func(p string) string { return strings.TrimSuffix(filepath.Base(p), filepath.Ext(p)) }
	suffix := stem(a) + "+" + stem(b) + ".json"
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var found []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), suffix) && (e.Name() == suffix || strings.HasSuffix(e.Name(), "_"+suffix)) {
			found = append(found, e.Name())
		}
	}
	require.Len(t, found, 1, "one record for %s", suffix)
	data, err := os.ReadFile(filepath.Join(dir, found[0]))
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(data, &rec))
	require.Nil(t, rec["error"], "upstream failed on this pair")
	return rec
}

// asJSON returns v's JSON form decoded as generic values.
func asJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(data, &out))
	return out
}

// statTolerance is the relative tolerance of the element statistics.
// Upstream decodes with numpy in the tensor's own type: the difference of
// two float32 elements may be rounded to float32 (relative error at most
// 2^-24 each), and numpy's pairwise sum of n of them adds at most
// log2(n) such errors; ours works in float64. 1e-6 covers 2^-24 times
// sixteen doublings (65,536 differing elements) with room to spare, while
// a wrong element or a mean over the wrong count is off by far more.
const statTolerance = 1e-6

func checkAgreement(t *testing.T, rec, got map[string]any) {
	assert.Equal(t, rec["bitwise_equal"], got["bitwise_equal"], "bitwise_equal")
	assert.Equal(t, rec["size_a"], got["size_a"], "size_a")
	assert.Equal(t, rec["size_b"], got["size_b"], "size_b")
	assert.Equal(t, rec["extra_plans_in_a"], got["extra_methods_in_a"], "extra_plans_in_a")
	assert.Equal(t, rec["extra_plans_in_b"], got["extra_methods_in_b"], "extra_plans_in_b")
	ours := map[float64]map[string]any{}
	for _, m := range got["methods"].([]any) {
		m := m.(map[string]any)
		ours[m["index"].(float64)] = m
	}
	theirs := map[float64]bool{}
	for _, p := range rec["plan_diffs"].([]any) {
		p := p.(map[string]any)
		i := p["plan_index"].(float64)
		theirs[i] = true
		m, ok := ours[i]
		if !assert.True(t, ok, "plan %v differs upstream, not in ours", i) {
			continue
		}
		checkPlan(t, fmt.Sprintf("plan %v", i), p, m)
	}
	for i := range ours {
		assert.True(t, theirs[i], "method %v differs in ours only", i)
	}
	// Upstream's named_data_diffs name a key each; ours must list it.
	nd := got["named_data"].(map[string]any)
	var keys []any
	for _, k := range []string{"only_in_a", "only_in_b", "changed"} {
		keys = append(keys, nd[k].([]any)...)
	}
	for _, d := range rec["named_data_diffs"].([]any) {
		assert.Contains(t, keys, d.(map[string]any)["key"], "named data")
	}
}

// pairOf returns the [a, b] form of upstream's X_a/X_b members, nil when
// both are null.
func pairOf(p map[string]any, name string) any {
	if p[name+"_a"] == nil && p[name+"_b"] == nil {
		return nil
	}
	return []any{p[name+"_a"], p[name+"_b"]}
}

func checkPlan(t *testing.T, where string, p, m map[string]any) {
	assert.Equal(t, p["name_a"], m["name_a"], "%s: name_a", where)
	assert.Equal(t, p["name_b"], m["name_b"], "%s: name_b", where)
	for _, k := range []string{"operators_only_in_a", "operators_only_in_b", "delegates_only_in_a", "delegates_only_in_b"} {
		assert.Equal(t, p[k], m[k], "%s: %s", where, k)
	}
	for _, k := range []string{"non_const_buffer_sizes", "value_count", "instruction_count"} {
		assert.Equal(t, pairOf(p, k), m[k], "%s: %s", where, k)
	}
	// Differing tensors: the same set, each with the same facts.
	tensors := map[float64]map[string]any{}
	for _, x := range m["tensors"].([]any) {
		x := x.(map[string]any)
		tensors[x["a"].(map[string]any)["index"].(float64)] = x
	}
	var want []float64
	for _, x := range p["tensor_diffs"].([]any) {
		x := x.(map[string]any)
		i := x["tensor_a"].(map[string]any)["evalue_index"].(float64)
		want = append(want, i)
		if d, ok := tensors[i]; assert.True(t, ok, "%s: tensor %v differs upstream only", where, i) {
			checkTensor(t, fmt.Sprintf("%s tensor %v", where, i), x, d)
		}
	}
	assert.Len(t, tensors, len(want), "%s: differing tensors %v", where, want)
	// Differing values that are not both tensors.
	values := map[float64]map[string]any{}
	for _, x := range m["values"].([]any) {
		x := x.(map[string]any)
		values[x["index"].(float64)] = x
	}
	evs := p["evalue_diffs"].([]any)
	assert.Len(t, values, len(evs), "%s: differing values", where)
	for _, x := range evs {
		x := x.(map[string]any)
		i := x["evalue_index"].(float64)
		d, ok := values[i]
		if !assert.True(t, ok, "%s: value %v differs upstream only", where, i) {
			continue
		}
		w := fmt.Sprintf("%s value %v", where, i)
		assert.Equal(t, x["type_a"], d["type_a"], w)
		assert.Equal(t, x["type_b"], d["type_b"], w)
		assert.Equal(t, x["type_mismatch"], d["type_a"] != d["type_b"], w)
		checkFields(t, w, x["field_diffs"].([]any), d["fields"].([]any))
		checkUsages(t, w+" in A", x["operator_usages_a"], d["used_by_a"])
		checkUsages(t, w+" in B", x["operator_usages_b"], d["used_by_b"])
	}
	for _, side := range []string{"a", "b"} {
		up, us := p["tensors_only_in_"+side].([]any), m["tensors_only_in_"+side].([]any)
		if assert.Len(t, us, len(up), "%s: tensors only in %s", where, side) {
			for i := range up {
				checkRef(t, fmt.Sprintf("%s only in %s #%d", where, side, i), up[i], us[i])
			}
		}
	}
}

func checkRef(t *testing.T, where string, up, us any) {
	x, y := up.(map[string]any), us.(map[string]any)
	assert.Equal(t, x["evalue_index"], y["index"], "%s: index", where)
	assert.Equal(t, x["scalar_type"], y["scalar_type"], "%s: scalar_type", where)
	assert.Equal(t, x["sizes"], y["sizes"], "%s: sizes", where)
	assert.Equal(t, x["fqn"], y["fqn"], "%s: fqn", where)
	assert.Equal(t, x["data_buffer_idx"], y["data_buffer_idx"], "%s: data_buffer_idx", where)
	checkUsages(t, where, x["operator_usages"], y["used_by"])
}

func checkUsages(t *testing.T, where string, up, us any) {
	var want []any
	for _, u := range up.([]any) {
		u := u.(map[string]any)
		want = append(want, map[string]any{"name": u["name"], "arg": u["arg_index"]})
	}
	got := us.([]any)
	if want == nil {
		want = []any{}
	}
	assert.Equal(t, want, got, "%s: uses", where)
}

func checkFields(t *testing.T, where string, up, us []any) {
	var want, got []any
	for _, f := range up {
		f := f.(map[string]any)
		want = append(want, []any{f["field_name"], f["value_a"], f["value_b"]})
	}
	for _, f := range us {
		f := f.(map[string]any)
		got = append(got, []any{f["field"], f["a"], f["b"]})
	}
	assert.Equal(t, want, got, "%s: fields", where)
}

func checkTensor(t *testing.T, where string, up, us map[string]any) {
	checkRef(t, where+" A", up["tensor_a"], us["a"])
	checkRef(t, where+" B", up["tensor_b"], us["b"])
	checkFields(t, where, up["metadata_diffs"].([]any), us["fields"].([]any))
	assert.Equal(t, up["byte_size_a"], us["byte_size_a"], "%s: byte_size_a", where)
	assert.Equal(t, up["byte_size_b"], us["byte_size_b"], "%s: byte_size_b", where)
	assert.Equal(t, up["bytes_differ"], us["bytes_differ"], "%s: bytes_differ", where)
	data, _ := us["data"].(map[string]any)
	if data == nil {
		// Upstream writes zero statistics when the bytes agree.
		for _, k := range []string{"num_elements", "num_differing", "max_abs_diff", "mean_abs_diff"} {
			assert.Zero(t, up[k], "%s: %s with no data compared", where, k)
		}
		assert.Empty(t, up["element_diffs"], where)
		return
	}
	assert.Equal(t, up["num_elements"], data["elements"], "%s: num_elements", where)
	assert.Equal(t, up["num_differing"], data["differing"], "%s: num_differing", where)
	closeTo(t, up["max_abs_diff"], data["max_abs_diff"], where+": max_abs_diff")
	closeTo(t, up["mean_abs_diff"], data["mean_abs_diff"], where+": mean_abs_diff")
	var want, got []any
	for _, e := range up["element_diffs"].([]any) {
		e := e.(map[string]any)
		want = append(want, []any{e["flat_index"], e["multi_index"], e["value_a"], e["value_b"]})
	}
	for _, e := range data["samples"].([]any) {
		e := e.(map[string]any)
		got = append(got, []any{e["flat"], e["index"], e["a"], e["b"]})
	}
	assert.Equal(t, want, got, "%s: sample elements", where)
}

// closeTo compares two statistics within statTolerance (relative), NaN
// equal to NaN.
func closeTo(t *testing.T, want, got any, where string) {
	w, ok1 := want.(float64)
	g, ok2 := got.(float64)
	if !ok1 || !ok2 {
		assert.Equal(t, want, got, where)
		return
	}
	if math.IsNaN(w) && math.IsNaN(g) {
		return
	}
	assert.LessOrEqual(t, math.Abs(w-g), statTolerance*math.Max(math.Abs(w), math.Abs(g)), "%s: %v vs %v", where, want, got)
}
