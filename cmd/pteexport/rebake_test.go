package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/export"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// document returns the hashed JSON form of a program, shaped like the
// reference NAME.json beside the vectors, and the weight_streaming_budget
// values taken out of it, per delegate.
func document(t *testing.T, f *pte.File) (map[string]any, [][]string) {
	t.Helper()
	doc, err := inspect.Build(f, &inspect.Options{Hash: true})
	require.NoError(t, err)
	data, err := inspect.Marshal(doc)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	// No error finding; warnings (an upstream-written target_device that
	// pins another GPU than the blob's device_id, say) are allowed, as
	// export's documentOf allows them.
	if probs, ok := m["problems"].([]any); ok {
		for _, p := range probs {
			assert.NotEqual(t, "error", p.(map[string]any)["severity"], "problem: %v", p)
		}
	}
	delete(m, "problems")
	m["raw_program"] = m["program"]
	delete(m, "program")
	for _, d := range m["delegates"].([]any) {
		delete(d.(map[string]any), "tensorrt")
	}
	return stripBudgets(m)
}

// stripBudgets removes every weight_streaming_budget compile spec from a
// document, returning the values removed per entry of "delegates".
func stripBudgets(m map[string]any) (map[string]any, [][]string) {
	var budgets [][]string
	strip := func(d any) []string {
		dm := d.(map[string]any)
		kept := []any{}
		var removed []string
		for _, s := range dm["compile_specs"].([]any) {
			sm := s.(map[string]any)
			if k, _ := sm["key"].(string); compilespec.CKeyEqual(k, compilespec.KeyWeightStreamingBudget) {
				v, _ := sm["value_utf8"].(string)
				removed = append(removed, v)
				continue
			}
			kept = append(kept, s)
		}
		dm["compile_specs"] = kept
		return removed
	}
	for _, d := range m["delegates"].([]any) {
		budgets = append(budgets, strip(d))
	}
	for _, ep := range m["raw_program"].(map[string]any)["execution_plan"].([]any) {
		for _, d := range ep.(map[string]any)["delegates"].([]any) {
			strip(d)
		}
	}
	return m, budgets
}

// layout matches the paths where two writers of one program may differ:
// file sizes, offsets and digests of the whole file.
var layout = regexp.MustCompile(`^(file\..*|extended_header\.(program_size|segment_base_offset)|segments\[\d+\]\.file_offset)$`)

// TestRebakeCLIMatchesReference re-bakes every upstream-written program
// through run and compares the result with the reference JSON beside it:
// with the budget specs taken out, only the file layout differs, and every
// delegate holds exactly the new budget.
func TestRebakeCLIMatchesReference(t *testing.T) {
	dir := testkit.SharedDir(t, "vectors", "pte")
	refs, err := filepath.Glob(filepath.Join(dir, "*.input.json"))
	require.NoError(t, err)
	require.NotEmpty(t, refs)
	sort.Strings(refs)
	for _, ref := range refs {
		name := strings.TrimSuffix(filepath.Base(ref), ".input.json")
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "o.pte")
			r := runCmd("--from", filepath.Join(dir, name+".pte"), "-o", out, "--weight-streaming-budget-per-engine", "4GiB", "--json")
			if r.code != 0 && (upstreamRefuses(t, filepath.Join(dir, name+".cpp.jsonl")) || verifyFails(t, filepath.Join(dir, name+".pte"))) {
				assert.Contains(t, r.stderr, "not re-baked") // a program ExecuTorch refuses, or --verify fails
				return
			}
			require.Equal(t, 0, r.code, r.stderr)
			sum := decodeSummary(t, r.stdout)
			require.NotNil(t, sum.Budget)
			assert.Equal(t, int64(4<<30), *sum.Budget)

			var want map[string]any
			data, err := os.ReadFile(filepath.Join(dir, name+".json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &want))
			wantRest, wantBudgets := stripBudgets(want)
			gotRest, budgets := document(t, openVerified(t, out))
			diffs, err := inspect.Diff(gotRest, wantRest)
			require.NoError(t, err)
			for _, d := range diffs {
				if !layout.MatchString(d.Path) {
					t.Error(d)
				}
			}
			require.NotEmpty(t, budgets)
			for i, b := range budgets {
				id, _ := gotRest["delegates"].([]any)[i].(map[string]any)["id"].(string)
				if compilespec.CKeyEqual(id, delegate.BackendID) {
					assert.Equal(t, []string{"4294967296"}, b, "delegate %d", i)
				} else {
					assert.Equal(t, wantBudgets[i], b, "delegate %d (%q) is not re-baked", i, id)
				}
			}
		})
	}
}

// TestRebakeCLIReportsKeptBudget: a re-bake that only pins the device
// reports the budget the output keeps, and warns that the blob was built
// for another device.
func TestRebakeCLIReportsKeptBudget(t *testing.T) {
	budget := int64(1 << 20)
	in := carrier(t, &export.Options{WeightStreamingBudget: testprog.Budget(budget)}, 300)
	out := filepath.Join(t.TempDir(), "r1.pte")
	r := runCmd("--from", in, "-o", out, "--target-device", "cuda:1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "weight streaming budget 1 MiB per engine")
	assert.Contains(t, r.stderr, "cuda:1")
	assert.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
	r = runCmd("--from", in, "-o", out, "--force", "--target-device", "cuda:1", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	sum := decodeSummary(t, r.stdout)
	require.NotNil(t, sum.Budget)
	assert.Equal(t, int64(1048576), *sum.Budget)
	require.NotNil(t, sum.TargetDevice)
	assert.Equal(t, "cuda:1", *sum.TargetDevice)
	require.Len(t, sum.Warnings, 1)
	assert.Equal(t, "device-mismatch", sum.Warnings[0].Kind)
	// --json says what standard error says, in the same words.
	assert.Equal(t, fmt.Sprintf("pteexport: warning: method %q: %s\n", sum.Warnings[0].Method, sum.Warnings[0].Message), r.stderr)

	// Budgets that differ per delegate are kept and said to differ.
	mixed := carrier(t, &export.Options{WeightStreamingBudget: testprog.Budget(budget)}, 300, 333)
	f, err := pte.Open(mixed)
	require.NoError(t, err)
	segs, err := f.SegmentReaders()
	require.NoError(t, err)
	prog := f.Program
	for _, s := range prog.Plan(0).Delegates[1].CompileSpecs {
		if s.Key == compilespec.KeyWeightStreamingBudget {
			s.Value = []byte("524288")
		}
	}
	mixed = filepath.Join(t.TempDir(), "mixed.pte")
	w, err := os.Create(mixed)
	require.NoError(t, err)
	_, err = pte.Write(w, prog, segs, nil)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	f.Close()
	r = runCmd("--from", mixed, "-o", out, "--force", "--target-device", "cuda:0")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "weight streaming budget differs between delegates")
}

// TestRebakeCLIRefusesBrokenInput: a program that fails verification is
// not re-baked (exit 1, one line, no output file).
func TestRebakeCLIRefusesBrokenInput(t *testing.T) {
	// The first vector the reader opens and its verifier finds an error in.
	bad := ""
	for _, path := range testkit.Glob(t, testkit.SharedDir(t, "vectors", "pte-bad"), "*.pte") {
		f, err := pte.Open(path)
		if err != nil {
			continue
		}
		if slices.ContainsFunc(f.Verify(), func(fd pte.Finding) bool { return fd.Severity == pte.SeverityError }) {
			bad = path
		}
		f.Close()
		if bad != "" {
			break
		}
	}
	require.NotEmpty(t, bad, "no vector the verifier refuses")
	out := filepath.Join(t.TempDir(), "o.pte")
	r := runCmd("--from", bad, "-o", out, "--weight-streaming-budget-per-engine", "1MiB")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "not re-baked")
	assert.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
	_, err := os.Stat(out)
	assert.True(t, os.IsNotExist(err))
}

// TestRebakeCLIInterrupted delivers SIGINT to the process while run is
// writing the output over its own input: the write stops, the input is
// byte for byte intact, no temporary file is left, and the exit status is
// 130, as a shell reports a command that SIGINT ended.
func TestRebakeCLIInterrupted(t *testing.T) {
	tmp := t.TempDir()
	path := filepath.Join(tmp, "m.pte")
	data, err := os.ReadFile(carrier(t, nil, 1<<20, 1<<20))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))

	midWrite := false
	progressHook = func(ctx context.Context, written, total int64) {
		if ctx.Err() != nil {
			return
		}
		midWrite = written < total
		assert.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Error("SIGINT did not cancel the run")
		}
	}
	defer func() { progressHook = nil }()
	r := runCmd("--from", path, "-o", path, "--force", "--weight-streaming-budget-per-engine", "4GiB")
	assert.Equal(t, 130, r.code, r.stderr)
	assert.Contains(t, r.stderr, "interrupted")
	assert.True(t, midWrite, "interrupted while the output was being written")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, data, after, "the input changed")
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "a temporary file was left behind")
}

// TestFIFOsRefused: a FIFO as --from, --manifest or engine file fails at
// once (exit 1) instead of blocking.
func TestFIFOsRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "x.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	manifest := writeManifest(t, `{"methods": [{"name": "f", "inputs": [{"name": "x", "dtype": "int8", "shape": [1]}], "outputs": ["y"],
		"engines": [{"engine": "`+fifo+`", "inputs": ["x"], "outputs": [{"binding": "y", "dtype": "int8", "shape": [1]}]}]}]}`, nil)
	for _, args := range [][]string{
		{"--from", fifo, "--weight-streaming-budget-per-engine", "1"},
		{"--manifest", fifo},
		{"--manifest", manifest},
	} {
		done := make(chan cmdResult, 1)
		go func() { done <- runCmd(append(args, "-o", filepath.Join(dir, "o.pte"))...) }()
		select {
		case r := <-done:
			assert.Equal(t, 1, r.code, "%v", args)
			assert.Contains(t, r.stderr, "not a regular file", "%v", args)
		case <-time.After(5 * time.Second):
			if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				w.Close()
			}
			t.Fatalf("%v blocked on the FIFO", args)
		}
	}
}

// TestJSONSummaryFromManifestPins: a device pinned in the manifest (not by
// the flag) shows in --json, as does an empty method, which verifies.
func TestJSONSummaryFromManifestPins(t *testing.T) {
	m := writeManifest(t, strings.Replace(twoEngines, `"methods": [`,
		`"target_device": "cuda:1", "methods": [{"name": "nothing"}, `, 1), map[string]string{"a.engine": "A", "b.engine": "B"})
	out := filepath.Join(t.TempDir(), "o.pte")
	r := runCmd("--manifest", m, "-o", out, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	sum := decodeSummary(t, r.stdout)
	require.NotNil(t, sum.TargetDevice)
	assert.Equal(t, "cuda:1", *sum.TargetDevice)
	require.Len(t, sum.Methods, 3)
	assert.Equal(t, "nothing", sum.Methods[0].Name)
	assert.Empty(t, sum.Methods[0].Engines)
	f := openVerified(t, out)
	assert.Empty(t, f.Program.Plan(0).Delegates)
	// b.engine was built for device 0: warned about.
	require.NotEmpty(t, sum.Warnings)
	kinds := map[string]bool{}
	for _, w := range sum.Warnings {
		kinds[w.Kind] = true
	}
	assert.True(t, kinds["device-mismatch"], "%v", sum.Warnings)
}

// carrier writes a TensorRT program with one engine call per size (a
// chain over float32 [2,2] tensors, distinct engine bytes of that size)
// with opts, and returns its path.
func carrier(t *testing.T, opts *export.Options, sizes ...int) string {
	t.Helper()
	m := &export.Method{Name: "forward", Inputs: []*export.Tensor{{Name: "x", DType: export.Float32, Shape: []int64{2, 2}}}}
	prev := "x"
	for i, n := range sizes {
		next := fmt.Sprintf("t%d", i)
		e := bytes.Repeat([]byte{byte('a' + i)}, n)
		m.Calls = append(m.Calls, &export.EngineCall{
			Engine:  export.EngineReader(bytes.NewReader(e), int64(n)),
			Inputs:  []*export.Binding{{Name: "in", Tensor: prev}},
			Outputs: []*export.Binding{{Name: "out", Tensor: next, DType: export.Float32, Shape: []int64{2, 2}}},
		})
		prev = next
	}
	m.Outputs = []*export.Tensor{{Name: prev}}
	path := filepath.Join(t.TempDir(), "carrier.pte")
	_, err := export.WriteFile(path, &export.Program{Methods: []*export.Method{m}}, opts)
	require.NoError(t, err)
	return path
}
