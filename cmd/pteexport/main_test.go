package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/check"
	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/export"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const examplesDir = "../../testdata/examples"

// exampleEngines are the placeholder engine files of the bundled example:
// deterministic bytes, NOT TensorRT engines (they only stand in for them;
// the runtime would fail to deserialize them).
var exampleEngines = map[string]int{"prefill.engine": 4096, "decode.engine": 3072}

func exampleEngine(name string, size int) []byte {
	out := []byte(fmt.Sprintf("NOT A TENSORRT ENGINE: deterministic placeholder bytes for the ptekit example %q\n", name))
	seed := sha256.Sum256([]byte(name))
	for len(out) < size {
		seed = sha256.Sum256(seed[:])
		out = append(out, seed[:]...)
	}
	return out[:size]
}

// TestExampleEngines checks the bundled example engine files against their
// generator; run with -update to (re)write them.
func TestExampleEngines(t *testing.T) {
	for name, size := range exampleEngines {
		testkit.Golden(t, filepath.Join(examplesDir, name), exampleEngine(name, size))
	}
}

type cmdResult struct {
	code           int
	stdout, stderr string
}

func runCmd(args ...string) cmdResult {
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errb)
	return cmdResult{code, out.String(), errb.String()}
}

// openVerified opens a written program and fails on any Error finding.
func openVerified(t *testing.T, path string) *pte.File {
	t.Helper()
	f, err := pte.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	probs, err := check.Program(f)
	require.NoError(t, err)
	first, _, bad := check.FirstError(probs)
	require.False(t, bad, "verify: %v", first)
	return f
}

// specsOf returns key=value strings of every delegate's compile specs.
func specsOf(f *pte.File) [][]string {
	var out [][]string
	for _, ep := range f.Program.Plans() {
		for _, d := range ep.Delegates {
			var s []string
			for _, cs := range d.CompileSpecs {
				s = append(s, cs.Key+"="+string(cs.Value))
			}
			out = append(out, s)
		}
	}
	return out
}

func decodeSummary(t *testing.T, s string) export.Summary {
	t.Helper()
	var sum export.Summary
	require.NoError(t, json.Unmarshal([]byte(s), &sum), s)
	return sum
}

func TestExampleManifest(t *testing.T) {
	out := filepath.Join(t.TempDir(), "model.pte")
	r := runCmd("--manifest", filepath.Join(examplesDir, "model.json"), "-o", out, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	sum := decodeSummary(t, r.stdout)
	assert.Equal(t, out, sum.Output)
	f := openVerified(t, out)
	// Planned bytes as written in the file (prefill: tokens 1x128 int64,
	// logits 1x128x256 float32, k_cache 1x2x128x16 float16).
	require.Equal(t, 2, f.Program.NumPlans())
	assert.Equal(t, []int64{0, 1024 + 131072 + 8192}, f.Program.Plan(0).NonConstBufferSizes)
	cuda0 := "cuda:0"
	engine := []export.SummaryEngine{{Budget: nil, TargetDevice: &cuda0}}
	assert.Equal(t, []export.SummaryMethod{
		{Name: "prefill", Delegates: 1, PlannedBytes: 1024 + 131072 + 8192, Engines: engine},
		{Name: "decode", Delegates: 1, PlannedBytes: plannedBytes(f.Program.Plan(1)), Engines: engine},
	}, sum.Methods)
	assert.Equal(t, 2, sum.Delegates)
	assert.Nil(t, sum.Budget)
	assert.False(t, sum.BudgetsDiffer)
	assert.Equal(t, &cuda0, sum.TargetDevice)
	assert.Equal(t, [][]string{{"target_device=cuda:0"}, {"target_device=cuda:0"}}, specsOf(f))
	st, err := os.Stat(out)
	require.NoError(t, err)
	assert.Equal(t, st.Size(), sum.Size)

	// -o refuses to overwrite without --force.
	r = runCmd("--manifest", filepath.Join(examplesDir, "model.json"), "-o", out)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "--force")
	r = runCmd("--manifest", filepath.Join(examplesDir, "model.json"), "-o", out, "--force",
		"--weight-streaming-budget-per-engine", "1.5GiB")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "weight streaming budget 1.5 GiB per engine")
	f = openVerified(t, out)
	assert.Equal(t, [][]string{
		{"weight_streaming_budget=1610612736", "target_device=cuda:0"},
		{"weight_streaming_budget=1610612736", "target_device=cuda:0"},
	}, specsOf(f))
}

func plannedBytes(ep *pte.ExecutionPlan) int64 {
	var n int64
	for _, b := range ep.NonConstBufferSizes {
		n += b
	}
	return n
}

// writeManifest writes a manifest and engine files into a temp dir.
func writeManifest(t *testing.T, manifest string, engines map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range engines {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	path := filepath.Join(dir, "m.json")
	require.NoError(t, os.WriteFile(path, []byte(manifest), 0o644))
	return path
}

// twoEngines is a manifest whose "forward" calls two engines (device 1 then
// device 0) and whose "aux" calls the first engine again with identical
// bindings, so its blob is stored once.
const twoEngines = `{
  "methods": [
    {"name": "forward",
     "inputs": [{"name": "x", "dtype": "float32", "shape": [2, 2]}],
     "outputs": ["y"],
     "engines": [
       {"engine": "a.engine", "device_id": 1, "inputs": ["x"], "outputs": [{"binding": "h", "dtype": "float32", "shape": [2, 2]}]},
       {"engine": "b.engine", "inputs": [{"binding": "x", "tensor": "h"}], "outputs": [{"binding": "y", "dtype": "float32", "shape": [2, 2]}]}
     ]},
    {"name": "aux",
     "inputs": [{"name": "x", "dtype": "float32", "shape": [2, 2]}],
     "outputs": ["h"],
     "engines": [
       {"engine": "a.engine", "device_id": 1, "inputs": ["x"], "outputs": [{"binding": "h", "dtype": "float32", "shape": [2, 2]}]}
     ]}
  ]
}`

func TestTwoEnginesWarningsBudgetDevicesDedup(t *testing.T) {
	m := writeManifest(t, twoEngines, map[string]string{"a.engine": "engine A bytes", "b.engine": "engine B bytes!"})
	out := filepath.Join(t.TempDir(), "o.pte")
	r := runCmd("--manifest", m, "-o", out, "--weight-streaming-budget-per-engine", "4GiB", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, `method "forward": 2 TensorRT engine calls; each becomes its own delegate`)
	assert.Contains(t, r.stderr, "applies to each of the 2 engines separately")
	assert.Equal(t, 2, strings.Count(r.stderr, "\n"), r.stderr)
	sum := decodeSummary(t, r.stdout)
	require.Len(t, sum.Warnings, 2)
	assert.Equal(t, "multiple-engines", sum.Warnings[0].Kind)
	assert.Equal(t, "budget-per-engine", sum.Warnings[1].Kind)
	assert.Equal(t, int64(4<<30), *sum.Budget)
	assert.Equal(t, 3, sum.Delegates)
	assert.Equal(t, 2, sum.Blobs, "the same engine with the same bindings is stored once")

	f := openVerified(t, out)
	// Budget on every delegate of every method; device derived per engine.
	assert.Equal(t, [][]string{
		{"weight_streaming_budget=4294967296", "target_device=cuda:1"},
		{"weight_streaming_budget=4294967296", "target_device=cuda:0"},
		{"weight_streaming_budget=4294967296", "target_device=cuda:1"},
	}, specsOf(f))
	fw, aux := f.Program.Plan(0), f.Program.Plan(1)
	assert.Equal(t, fw.Delegates[0].Processed.Index, aux.Delegates[0].Processed.Index)
	assert.NotEqual(t, fw.Delegates[0].Processed.Index, fw.Delegates[1].Processed.Index)
	assert.Len(t, f.Program.Segments, 3, "constant segment + 2 distinct blobs")

	// Pinned device: verbatim on every delegate, after the budget; a
	// mismatch with an engine's device is warned about.
	r = runCmd("--manifest", m, "-o", out, "--force", "--target-device", "cuda:0")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "cuda:1")
	assert.NotContains(t, r.stderr, "applies to each")
	f = openVerified(t, out)
	assert.Equal(t, [][]string{{"target_device=cuda:0"}, {"target_device=cuda:0"}, {"target_device=cuda:0"}}, specsOf(f))

	// auto: no budget key.
	r = runCmd("--manifest", m, "-o", out, "--force", "--weight-streaming-budget-per-engine", "auto")
	require.Equal(t, 0, r.code, r.stderr)
	f = openVerified(t, out)
	assert.Equal(t, [][]string{{"target_device=cuda:1"}, {"target_device=cuda:0"}, {"target_device=cuda:1"}}, specsOf(f))
}

func TestHandWrittenBudgetSpecRefused(t *testing.T) {
	for _, withBudget := range []bool{false, true} {
		manifest := strings.Replace(twoEngines, `{"name": "aux",`,
			`{"name": "aux", "compile_specs": [{"key": "weight_streaming_budget", "value": "1024"}],`, 1)
		m := writeManifest(t, manifest, map[string]string{"a.engine": "A", "b.engine": "B"})
		out := filepath.Join(t.TempDir(), "o.pte")
		args := []string{"--manifest", m, "-o", out}
		if withBudget {
			args = append(args, "--weight-streaming-budget-per-engine", "4096")
		}
		r := runCmd(args...)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, `method "aux"`)
		assert.Contains(t, r.stderr, "--weight-streaming-budget-per-engine")
		assert.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
		_, err := os.Stat(out)
		assert.True(t, os.IsNotExist(err))
	}
}

// TestHandWrittenTopLevelBudgetRefused: a budget in the top-level
// compile_specs is blamed on them, not on a method.
func TestHandWrittenTopLevelBudgetRefused(t *testing.T) {
	manifest := strings.Replace(twoEngines, `"methods": [`,
		`"compile_specs": [{"key": "weight_streaming_budget", "value": "1"}], "methods": [`, 1)
	m := writeManifest(t, manifest, map[string]string{"a.engine": "A", "b.engine": "B"})
	r := runCmd("--manifest", m, "-o", filepath.Join(t.TempDir(), "o.pte"))
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "top-level compile_specs[0]")
	assert.Contains(t, r.stderr, "--weight-streaming-budget-per-engine")
	assert.NotContains(t, r.stderr, "method")
}

func TestCallerSpecsKeptInOrder(t *testing.T) {
	manifest := strings.Replace(twoEngines, `"methods": [`,
		`"compile_specs": [{"key": "a", "value_hex": "00ff"}], "methods": [`, 1)
	m := writeManifest(t, manifest, map[string]string{"a.engine": "A", "b.engine": "B"})
	out := filepath.Join(t.TempDir(), "o.pte")
	r := runCmd("--manifest", m, "-o", out, "--weight-streaming-budget-per-engine", "4096")
	require.Equal(t, 0, r.code, r.stderr)
	f := openVerified(t, out)
	assert.Equal(t, []string{"a=\x00\xff", "weight_streaming_budget=4096", "target_device=cuda:1"}, specsOf(f)[0])
}

func TestRebakeCLI(t *testing.T) {
	dir := testkit.SharedDir(t, "vectors", "pte")
	for _, path := range testkit.Glob(t, dir, "*.pte") {
		name := filepath.Base(path)
		in := path
		out := filepath.Join(t.TempDir(), "o.pte")
		r := runCmd("--from", in, "-o", out, "--weight-streaming-budget-per-engine", "4GiB", "--json")
		if r.code != 0 && strings.Contains(r.stderr, "no TensorRTBackend delegate") {
			t.Logf("%s: nothing to re-bake", name)
			continue
		}
		if r.code != 0 && (upstreamRefuses(t, strings.TrimSuffix(path, ".pte")+".cpp.jsonl") || verifyFails(t, path)) {
			// A program ExecuTorch refuses, or --verify fails, is not re-baked.
			assert.Contains(t, r.stderr, "not re-baked", name)
			continue
		}
		require.Equal(t, 0, r.code, r.stderr)
		sum := decodeSummary(t, r.stdout)
		assert.Equal(t, int64(4<<30), *sum.Budget)
		fin := openVerified(t, in)
		fout := openVerified(t, out)
		for _, specs := range specsOf(fout) {
			assert.Contains(t, specs, "weight_streaming_budget=4294967296")
		}
		require.Equal(t, len(fin.Program.Segments), len(fout.Program.Segments))
		for i := range fin.Program.Segments {
			if fin.Program.Segments[i].Size == 0 {
				continue
			}
			a, err := fin.Segment(i)
			require.NoError(t, err)
			b, err := fout.Segment(i)
			require.NoError(t, err)
			da, _ := a.Data()
			db, _ := b.Data()
			assert.Equal(t, sha256.Sum256(da), sha256.Sum256(db), "%s segment %d", name, i)
		}
		assert.Equal(t, len(fin.Program.BackendDelegateData), len(fout.Program.BackendDelegateData), "inline stays inline")
		for i, s := range fin.Program.Segments {
			assert.Equal(t, *s, *fout.Program.Segments[i], "%s: segment %d keeps its offset from the base", name, i)
		}

		r = runCmd("--from", out, "-o", out, "--force", "--weight-streaming-budget-per-engine", "auto")
		require.Equal(t, 0, r.code, r.stderr)
		for _, specs := range specsOf(openVerified(t, out)) {
			for _, s := range specs {
				assert.False(t, strings.HasPrefix(s, "weight_streaming_budget="), s)
			}
		}
	}
}

func TestUsageErrors(t *testing.T) {
	tmp := t.TempDir()
	for _, args := range [][]string{
		{"--bogus"},
		{},
		{"--manifest", "m.json"},
		{"--manifest", "m.json", "--from", "a.pte", "-o", "x"},
		{"--manifest", "m.json", "-o", "x", "--weight-streaming-budget-per-engine", "lots"},
		{"--manifest", "m.json", "-o", "x", "--weight-streaming-budget-per-engine", "-1"},
		{"--manifest", "m.json", "-o", "x", "--target-device", "tpu:0"},
		{"--manifest", "m.json", "-o", "x", "--segment-alignment", "0"},
		{"--manifest", "m.json", "-o", "x", "--segment-alignment", "abc"},
		{"--manifest", "m.json", "-o", "x", "--segment-alignment", "2097152"},
		{"--manifest", "m.json", "-o", "x", "--target-device", "cuda:128"},
		{"--from", "a.pte", "-o", "x"},
		{"--from", "a.pte", "-o", "x", "--weight-streaming-budget-per-engine", "1", "--inline-delegate-data"},
		{"--manifest", "m.json", "-o", "x", "extra"},
	} {
		r := runCmd(args...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "%v: %q", args, r.stderr)
		assert.Contains(t, r.stderr, "pteexport --help", "%v", args)
	}
	// The device range is compilespec's, said once.
	r := runCmd("--manifest", "m.json", "-o", "x", "--target-device", "cuda:128")
	assert.Contains(t, r.stderr, fmt.Sprintf("outside [0, %d]", compilespec.MaxDeviceIndex))
	r = runCmd("--help")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "--weight-streaming-budget-per-engine")

	// Failures are exit 1 with one line.
	bad := filepath.Join(tmp, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"methods": [{"name": "m", "bogus": 1}]}`), 0o644))
	r = runCmd("--manifest", bad, "-o", filepath.Join(tmp, "o.pte"))
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "bogus")
	assert.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
	r = runCmd("--from", filepath.Join(tmp, "missing.pte"), "-o", filepath.Join(tmp, "o.pte"), "--weight-streaming-budget-per-engine", "1")
	assert.Equal(t, 1, r.code)
}

// verifyFails reports whether `pteinspect --verify` (check.Program) finds an
// error in the program at path, which a re-bake then refuses.
func verifyFails(t *testing.T, path string) bool {
	t.Helper()
	f, err := pte.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	probs, err := check.Program(f)
	require.NoError(t, err)
	_, _, bad := check.FirstError(probs)
	return bad
}

// upstreamRefuses reads the C++ runtime's record of a vector program
// (NAME.cpp.jsonl) and reports whether ExecuTorch refuses the program or
// one of its methods: the record shows program_load or load_method failing,
// or a TensorRT blob the real backend's init refuses (its
// upstream_trt_blob_parse failed). Such a program may be refused by the
// re-bake.
func upstreamRefuses(t *testing.T, path string) bool {
	t.Helper()
	rec := testkit.ReadDataRecord(t, path)
	if rec.ProgramRefused() || len(rec.BlobRejected) > 0 {
		return true
	}
	for _, c := range rec.Loads {
		if c != "Ok" {
			return true
		}
	}
	return false
}
