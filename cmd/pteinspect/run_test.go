package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

type result struct {
	stdout, stderr string
	code           int
}

func runArgs(stdin []byte, args ...string) result {
	var out, errb bytes.Buffer
	code := run(args, bytes.NewReader(stdin), &out, &errb)
	return result{out.String(), errb.String(), code}
}

// TestCorpusJSON: for every corpus program, `pteinspect --json --hash`
// carries the values of the upstream deserializer's view in the members
// file, extended_header, segments, delegates and program.
func TestCorpusJSON(t *testing.T) {
	dir := testkit.SharedDir(t, "corpus")
	for _, path := range testkit.Glob(t, dir, "*.pte") {
		name := strings.TrimSuffix(filepath.Base(path), ".pte")
		t.Run(name, func(t *testing.T) {
			r := runArgs(nil, "--json", "--hash", path)
			require.Equal(t, 0, r.code, r.stderr)
			ref, err := os.ReadFile(filepath.Join(dir, "ref", name+".json"))
			require.NoError(t, err)
			diffs, err := diffUpstream([]byte(r.stdout), ref)
			require.NoError(t, err)
			if len(diffs) > 0 {
				t.Errorf("%d paths differ from the upstream view; first: %s", len(diffs), diffs[0])
			}
		})
	}
}

// diffUpstream compares the members of ours (`pteinspect --json --hash`)
// that promise the upstream deserializer's values with the same members of
// upstream (corpus/ref/NAME.json, whose raw_program is our program). Only we
// have each delegate's tensorrt member; it is left out.
func diffUpstream(ours, upstream []byte) ([]inspect.Difference, error) {
	var a, b map[string]json.RawMessage
	if err := json.Unmarshal(ours, &a); err != nil {
		return nil, fmt.Errorf("our document: %w", err)
	}
	if err := json.Unmarshal(upstream, &b); err != nil {
		return nil, fmt.Errorf("upstream document: %w", err)
	}
	var dels []map[string]json.RawMessage
	if err := json.Unmarshal(a["delegates"], &dels); err != nil {
		return nil, fmt.Errorf("our delegates: %w", err)
	}
	for _, d := range dels {
		delete(d, "tensorrt")
	}
	var err error
	if a["delegates"], err = json.Marshal(dels); err != nil {
		return nil, err
	}
	b["program"] = b["raw_program"]
	pick := func(m map[string]json.RawMessage) map[string]json.RawMessage {
		out := map[string]json.RawMessage{}
		for _, k := range []string{"file", "extended_header", "segments", "delegates", "program"} {
			if v, ok := m[k]; ok {
				out[k] = v
			}
		}
		return out
	}
	return inspect.Diff(pick(a), pick(b))
}

// TestGolden compares the human view with testdata/golden/NAME.txt;
// `go test ./cmd/pteinspect -update` rewrites them.
func TestGolden(t *testing.T) {
	// The TensorRT views are of programs written in the test (trtPrograms,
	// read from standard input), the others of corpus files.
	cases := []struct{ golden, sub, file string }{
		{"trt_aliased_io_tr02", "", "aliased"},
		{"trt_two_methods_prefill_decode", "", "two_methods"},
		{"trt_budget_spec_twice", "", "budget_twice"},
		{"trt_inline", "", "inline"},
		{"trt_inline_hash", "", "inline"},
		{"trt_plan", "", "chain"},
		{"trt_plan_unstated", "", "chain"},
		{"trt_plan_automatic", "", "no_budget"},
		{"trt_plan_not_streaming", "", "segment"},
		{"trt_compile_specs", "", "specs"},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			// Read from standard input, so that the view's file line does
			// not depend on where the shared data is.
			var stdin []byte
			args := []string{"-"}
			if !strings.Contains(c.golden, "_plan") && !strings.HasSuffix(c.golden, "_compile_specs") {
				args = append(args, "--long") // today's full view; summary_*.txt are the default view
			}
			if c.sub != "" {
				var err error
				stdin, err = os.ReadFile(filepath.Join(testkit.SharedDir(t, c.sub), c.file))
				require.NoError(t, err)
			} else {
				stdin = trtPrograms(t)[c.file]
				require.NotEmpty(t, stdin, c.file)
			}
			switch {
			case strings.HasSuffix(c.golden, "_hash"):
				args = append(args, "--hash")
			case strings.HasSuffix(c.golden, "_plan_unstated"), strings.HasSuffix(c.golden, "_plan_not_modelled"):
				args = append(args, "--plan")
			case strings.HasSuffix(c.golden, "_plan_automatic"):
				args = append(args, "--plan", "--streamable-bytes", "1GiB")
			case strings.HasSuffix(c.golden, "_plan_not_streaming"):
				args = append(args, "--plan", "--streamable-bytes", "0", "--automatic-bytes", "1MiB")
			case strings.HasSuffix(c.golden, "_plan"):
				args = append(args, "--plan", "--streamable-bytes", "1MiB", "--scratch-bytes", "4KiB")
			case strings.HasSuffix(c.golden, "_compile_specs"):
				args = append(args, "--compile-specs")
			}
			r := runArgs(stdin, args...)
			wantCode := exitOK
			if c.golden == "trt_budget_spec_twice" {
				wantCode = exitFail // the view is complete, and ends with the problem
			}
			require.Equal(t, wantCode, r.code, r.stderr)
			require.Empty(t, r.stderr)
			testkit.Golden(t, filepath.Join("testdata", "golden", c.golden+".txt"), []byte(r.stdout))
		})
	}
}

// TestVerifyDamaged: every damaged vector that upstream refuses (its
// index.tsv verdict) gets an error and exit status 1, never a panic; the
// first error carries the error class the upstream C++ runtime reported
// and says where the damage is. A vector upstream loads is judged
// consistently (human and JSON agree), not required to fail.
func TestVerifyDamaged(t *testing.T) {
	dir := testkit.SharedDir(t, "vectors", "pte-bad")
	verdicts := readVerdicts(t, filepath.Join(dir, "index.tsv"))
	for _, path := range testkit.Glob(t, dir, "*.pte") {
		name := strings.TrimSuffix(filepath.Base(path), ".pte")
		t.Run(name, func(t *testing.T) {
			verdict, ok := verdicts[name]
			require.True(t, ok, "%s is not in index.tsv", name)
			r := runArgs(nil, "--verify", path)
			if upstreamError(verdict) == "" {
				// Upstream loads it (its damage shows, if at all, when a
				// method runs): ptekit may find an error there or not, but
				// the human and JSON forms must agree.
				checkVerifyAgrees(t, path, r)
				return
			}
			assert.Equal(t, 1, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			assert.Contains(t, "\n"+r.stdout, "\nerror: ")

			// The JSON form says the same.
			r = runArgs(nil, "--verify", "--json", path)
			assert.Equal(t, 1, r.code)
			var v struct {
				OK       bool              `json:"ok"`
				Errors   int               `json:"errors"`
				Findings []inspect.Problem `json:"findings"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &v), r.stdout)
			assert.False(t, v.OK)
			assert.Positive(t, v.Errors)
			require.NotEmpty(t, v.Findings)
			first := v.Findings[0]
			assert.Equal(t, "error", first.Severity)
			assert.NotEmpty(t, first.Message)
			if code := upstreamError(verdict); code != "" {
				assert.Equal(t, code, first.Code, "verdict %q", verdict)
			} else {
				assert.NotEmpty(t, first.Code) // upstream loads it; ours says what fails later
			}
			// The reader may name no field for damage to the file as a
			// whole (a truncation, the root offset): then the byte offset
			// says where it is. Damage to a field is located by its path.
			if fileLevelDamage(t, filepath.Join(dir, name+".meta.json")) {
				assert.True(t, first.Offset != nil || first.Path != "", "%s", first)
			} else {
				assert.NotEmpty(t, first.Path, "%s", first)
			}
		})
	}
}

// checkVerifyAgrees checks that --verify's exit status, its human lines and
// its JSON form say the same of a program whichever way it is judged.
func checkVerifyAgrees(t *testing.T, path string, human result) {
	t.Helper()
	j := runArgs(nil, "--verify", "--json", path)
	var v struct {
		OK     bool `json:"ok"`
		Errors int  `json:"errors"`
	}
	require.NoError(t, json.Unmarshal([]byte(j.stdout), &v), j.stdout)
	assert.Equal(t, human.code, j.code)
	assert.Equal(t, v.Errors == 0, v.OK)
	assert.Equal(t, v.Errors > 0, strings.Contains("\n"+human.stdout, "\nerror: "))
	if v.Errors > 0 {
		assert.Equal(t, 1, human.code)
	} else {
		assert.Equal(t, 0, human.code)
	}
}

// fileLevelDamage reports whether a damaged vector's NAME.meta.json
// describes damage to the file as a whole: a truncation, or an edit of the
// root offset or of FlatBuffers plumbing (a vtable or soffset) rather than
// of a program field.
func fileLevelDamage(t *testing.T, metaPath string) bool {
	t.Helper()
	var meta struct {
		TruncateTo *int64 `json:"truncate_to"`
		Edits      []struct {
			Field string `json:"field"`
		} `json:"edits"`
	}
	raw, err := os.ReadFile(metaPath)
	if err != nil {
		t.Logf("no %s: judging the damage as file-level", metaPath)
		return true
	}
	require.NoError(t, json.Unmarshal(raw, &meta), metaPath)
	if meta.TruncateTo != nil {
		return true
	}
	for _, e := range meta.Edits {
		if e.Field == "root_offset" || strings.Contains(e.Field, "vtable") || strings.Contains(e.Field, "soffset") {
			return true
		}
	}
	return false
}

// readVerdicts reads the InternalConsistency verdict column of
// vectors/pte-bad/index.tsv.
func readVerdicts(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]string{}
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		cols := strings.Split(line, "\t")
		require.GreaterOrEqual(t, len(cols), 3, "index.tsv line %d", i+1)
		if i > 0 {
			out[cols[0]] = cols[2]
		}
	}
	return out
}

// upstreamError returns the first error class of a verdict such as
// "load:ok method[forward]:InvalidProgram", or "" when it has none.
func upstreamError(verdict string) string {
	for _, tok := range strings.Fields(verdict) {
		if _, code, ok := strings.Cut(tok, ":"); ok && code != "ok" {
			return code
		}
	}
	return ""
}

// TestVerifyVectors: a vector program verifies clean unless its upstream
// load report (NAME.cpp.jsonl) shows what the TensorRT delegate refuses at
// init: a method that fails to load, a blob the deployed reader rejects,
// or a weight_streaming_budget compile spec that is duplicated (keys
// compared as C strings) or malformed; then --verify finds an error.
func TestVerifyVectors(t *testing.T) {
	dir := testkit.SharedDir(t, "vectors", "pte")
	for _, path := range testkit.Glob(t, dir, "*.pte") {
		name := strings.TrimSuffix(filepath.Base(path), ".pte")
		t.Run(name, func(t *testing.T) {
			// A vector without its record fails (ReadDataRecord).
			rec := testkit.ReadDataRecord(t, filepath.Join(dir, name+".cpp.jsonl"))
			r := runArgs(nil, "--verify", path)
			if rec.InitRefused() {
				assert.Equal(t, 1, r.code, r.stdout)
				assert.Contains(t, "\n"+r.stdout, "\nerror: ")
				return
			}
			assert.Equal(t, 0, r.code, r.stdout+r.stderr)
			assert.Contains(t, r.stdout, " 0 error(s)")
		})
	}
}

func TestExtract(t *testing.T) {
	path := trtPath(t, "chain")
	f, err := pte.Open(path)
	require.NoError(t, err)
	defer f.Close()
	pl, err := f.DelegateData(0, 1)
	require.NoError(t, err)
	want, err := pl.Data()
	require.NoError(t, err)
	blob, err := delegate.Decode(pl, pl.Size())
	require.NoError(t, err)
	engine := make([]byte, blob.Header.EngineSize)
	_, err = blob.Engine().ReadAt(engine, 0)
	require.NoError(t, err)

	out := t.TempDir()
	r := runArgs(nil, "--extract", "forward:1", "-o", filepath.Join(out, "payload.bin"), path)
	require.Equal(t, 0, r.code, r.stderr)
	got, err := os.ReadFile(filepath.Join(out, "payload.bin"))
	require.NoError(t, err)
	assert.Equal(t, want, got)

	r = runArgs(nil, "--extract", "0:1", "--engine", "-o", filepath.Join(out, "engine.bin"), path)
	require.Equal(t, 0, r.code, r.stderr)
	got, err = os.ReadFile(filepath.Join(out, "engine.bin"))
	require.NoError(t, err)
	assert.Equal(t, engine, got)

	r = runArgs(nil, "--extract", "forward:1", "--engine", "-o", "-", path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, engine, []byte(r.stdout))

	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary files left behind")

	for _, bad := range []string{"forward:2", "decode:0", "forward", "forward:x"} {
		r = runArgs(nil, "--extract", bad, "-o", filepath.Join(out, "x.bin"), path)
		assert.Equal(t, 2, r.code, bad)
		assert.Contains(t, r.stderr, "--extract")
	}
	_, err = os.Stat(filepath.Join(out, "x.bin"))
	assert.True(t, os.IsNotExist(err))

	// --engine on a delegate that is not TensorRT, or an output directory
	// that does not exist: failures, no file.
	r = runArgs(nil, "--extract", "forward:0", "-o", filepath.Join(out, "no", "such", "dir"), path)
	assert.Equal(t, 1, r.code)
	r = runArgs(nil, "--extract", "forward:0", "--engine", "-o", filepath.Join(out, "x.bin"), otherBackendPath(t))
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "XnnpackBackend")
}

func TestPlanJSON(t *testing.T) {
	path := trtPath(t, "segment")
	r := runArgs(nil, "--plan", "--json", path)
	require.Equal(t, 0, r.code, r.stderr)
	var v struct {
		Methods []struct {
			Name      string `json:"name"`
			OK        bool   `json:"ok"`
			Error     *struct{ Kind string }
			Delegates []struct {
				Budget struct {
					Source    string `json:"source"`
					Requested *int64 `json:"requested"`
					Applied   *int64 `json:"applied"`
				} `json:"budget"`
			} `json:"delegates"`
		} `json:"methods"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v))
	require.Len(t, v.Methods, 1)
	m := v.Methods[0]
	assert.True(t, m.OK)
	require.Len(t, m.Delegates, 1)
	assert.Equal(t, "compile_spec", m.Delegates[0].Budget.Source)
	assert.EqualValues(t, 1048576, *m.Delegates[0].Budget.Requested)
	assert.Nil(t, m.Delegates[0].Budget.Applied, "depends on the unstated streamable size")

	r = runArgs(nil, "--plan", "--json", "--backend-option", "TensorRTBackend:weight_streaming_budget=2048", "--streamable-bytes", "1GiB", path)
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v))
	assert.Equal(t, "load_option", v.Methods[0].Delegates[0].Budget.Source)
	assert.EqualValues(t, 2048, *v.Methods[0].Delegates[0].Budget.Applied)

	r = runArgs(nil, "--plan", "--json", "--backend-option", "TensorRTBackend:weight_streaming_budget=true", path)
	assert.Equal(t, 1, r.code)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v))
	assert.False(t, v.Methods[0].OK)
	assert.Equal(t, "invalid_program", v.Methods[0].Error.Kind)
}

func TestUsageAndFailures(t *testing.T) {
	path := trtPath(t, "segment")
	usage := [][]string{
		{},
		{path, path},
		{"--bogus", path},
		{"--verify", "--plan", path},
		{"--extract", "forward:0", path},
		{"-o", "x", path},
		{"--engine", path},
		{"--streamable-bytes", "1GiB", path},
		{"--plan", "--streamable-bytes", "lots", path},
		{"--plan", "--backend-option", "nocolon", path},
		{"--extract", "forward:0", "-o", "x", "--json", path},
		{"--extract", "forward:0", "-o", "x", "--method", "forward", path},
		{"--extract", "forward:0", "-o", "x", "--delegate", "TensorRTBackend", path},
		{"--hash", "--plan", path},
		{"--hash", "--verify", path},
		{"--hash", "--compile-specs", path},
		{"--verify", "--delegate", "TensorRTBackend", path},
		{"--plan", "--json", "--backend-option", "nocolon", path},
		{"--json", "--bogus", path},
		{"--json", "--long", path},
	}
	for _, args := range usage {
		r := runArgs(nil, args...)
		assert.Equal(t, 2, r.code, "%v", args)
		if slices.Contains(args, "--json") {
			// JSON on failure, always (issue 11 item 11): the failure
			// object, with the plan's members for --plan.
			var obj struct {
				Error   *inspect.Failure `json:"error"`
				Methods []any            `json:"methods"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &obj), "%v: %q", args, r.stdout)
			require.NotNil(t, obj.Error, "%v", args)
			assert.Equal(t, "usage", obj.Error.Kind)
			assert.Equal(t, slices.Contains(args, "--plan"), obj.Methods != nil, "%v: plan members", args)
		} else {
			assert.Empty(t, r.stdout, "%v", args)
		}
		assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
		assert.Contains(t, r.stderr, "--help")
	}

	r := runArgs(nil, "--help")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "--extract")

	// A bundled program is refused by its identifier (a .ptd file is
	// shown: TestCorpusPTDJSON). Built here, not taken from the shared
	// tree by name.
	bundled := slices.Clone(trtPrograms(t)["segment"])
	copy(bundled[4:8], "BP08")
	bundledPath := filepath.Join(t.TempDir(), "bundled.bpte")
	require.NoError(t, os.WriteFile(bundledPath, bundled, 0o644))
	failures := map[string]string{
		bundledPath:    "bundled program",
		rootPastEnd(t): "--verify",
		filepath.Join(t.TempDir(), "does_not_exist.pte"): "does_not_exist.pte does not exist (hint: check the path)",
		// A directory given for a file: named, with a hint.
		t.TempDir(): "is a directory (hint: give a program file, not a directory)",
	}
	for file, want := range failures {
		r := runArgs(nil, file)
		assert.Equal(t, 1, r.code, file)
		assert.Empty(t, r.stdout)
		assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
		assert.Contains(t, r.stderr, want)
	}

	r = runArgs(nil, "--method", "nope", path)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, `no such method "nope" (methods: forward)`)
}

func TestStdinAndFilters(t *testing.T) {
	path := trtPath(t, "two_methods")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	fromFile := runArgs(nil, "--json", "--hash", path)
	fromStdin := runArgs(data, "--json", "--hash", "-")
	require.Equal(t, 0, fromStdin.code, fromStdin.stderr)
	assert.Equal(t, fromFile.stdout, fromStdin.stdout)

	r := runArgs(nil, "--long", "--method", "decode", path)
	require.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "method decode")
	assert.NotContains(t, r.stdout, "method prefill")

	r = runArgs(nil, "--json", "--delegate", "TensorRTBackend", "--method", "prefill", path)
	require.Equal(t, 0, r.code)
	var doc inspect.Document
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &struct {
		Delegates *[]*inspect.Delegate `json:"delegates"`
	}{&doc.Delegates}))
	require.Len(t, doc.Delegates, 1)
	assert.Equal(t, "prefill", doc.Delegates[0].Plan)
}

// TestFiltersThatMatchNothing: --method and --delegate must name something
// in the file, in every view; the error lists what there is.
func TestFiltersThatMatchNothing(t *testing.T) {
	path := trtPath(t, "two_methods")
	for _, view := range [][]string{{}, {"--json"}, {"--verify"}, {"--verify", "--json"}, {"--compile-specs"},
		{"--compile-specs", "--json"}, {"--plan"}, {"--plan", "--json"}} {
		asJSON := slices.Contains(view, "--json")
		r := runArgs(nil, append(view, "--method", "nope", path)...)
		assert.Equal(t, exitFail, r.code, "%v", view)
		assert.Contains(t, r.stderr, `no such method "nope" (methods: prefill, decode)`, "%v", view)
		if asJSON {
			assertFailureJSON(t, r.stdout, "not_found", view)
		} else {
			assert.Empty(t, r.stdout, "%v", view)
		}
		if slices.Contains(view, "--verify") {
			continue // --delegate does not apply
		}
		r = runArgs(nil, append(view, "--delegate", "XnnpackBackend", path)...)
		assert.Equal(t, exitFail, r.code, "%v", view)
		assert.Contains(t, r.stderr, `no delegate of backend "XnnpackBackend" (backends: TensorRTBackend)`, "%v", view)
		if asJSON {
			assertFailureJSON(t, r.stdout, "not_found", view)
		}
	}

	// Narrowing works in --verify and --plan too.
	r := runArgs(nil, "--plan", "--json", "--method", "decode", "--delegate", "TensorRTBackend", path)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"name": "decode"`)
	assert.NotContains(t, r.stdout, `"name": "prefill"`)
	r = runArgs(nil, "--verify", "--method", "decode", path)
	assert.Equal(t, exitOK, r.code, r.stdout)
}
