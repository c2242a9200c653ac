package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// decodeJSON decodes a JSON document keeping numbers exact.
func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v), string(b))
	return v
}

// upstreamOnly are members of the upstream Python view of a .ptd that
// describe the Python tooling itself, not the file.
var upstreamOnly = []string{"upstream_extended_header", "upstream_deserialize"}

// agree compares every member of ref with ours at path and reports each
// disagreement; members only we have are not compared.
func agree(t *testing.T, path string, ours, ref any) {
	t.Helper()
	switch r := ref.(type) {
	case map[string]any:
		o, ok := ours.(map[string]any)
		if !ok {
			t.Errorf("%s: ours %v, record an object", path, ours)
			return
		}
		for k, rv := range r {
			if path == "" && slices.Contains(upstreamOnly, k) {
				continue
			}
			ov, ok := o[k]
			if !ok {
				t.Errorf("%s.%s: missing from ours (record %v)", path, k, rv)
				continue
			}
			if k == "flat_tensor_error" {
				// The texts are each tool's own; whether there is one is
				// the fact.
				if (ov == nil) != (rv == nil) {
					t.Errorf("%s.%s: ours %v, record %v", path, k, ov, rv)
				}
				continue
			}
			agree(t, path+"."+k, ov, rv)
		}
	case []any:
		o, ok := ours.([]any)
		if !ok || len(o) != len(r) {
			t.Errorf("%s: ours %v, record %v", path, ours, ref)
			return
		}
		for i := range r {
			agree(t, fmt.Sprintf("%s[%d]", path, i), o[i], r[i])
		}
	default:
		if !reflect.DeepEqual(ours, ref) {
			t.Errorf("%s: ours %v, record %v", path, ours, ref)
		}
	}
}

// TestCorpusPTDJSON: for every corpus .ptd, `pteinspect --json --hash`
// agrees with the upstream Python view ref/NAME.ptd.json member by member.
func TestCorpusPTDJSON(t *testing.T) {
	dir := testkit.SharedDir(t, "corpus")
	for _, path := range testkit.Glob(t, dir, "*.ptd") {
		name := strings.TrimSuffix(filepath.Base(path), ".ptd")
		t.Run(name, func(t *testing.T) {
			ref, err := os.ReadFile(filepath.Join(dir, "ref", name+".ptd.json"))
			require.NoError(t, err)
			r := runArgs(nil, "--json", "--hash", path)
			require.Contains(t, []int{exitOK, exitFail}, r.code, r.stderr)
			agree(t, "", decodeJSON(t, []byte(r.stdout)), decodeJSON(t, ref))
			// The human view and --verify run too.
			h := runArgs(nil, path)
			assert.Equal(t, r.code, h.code, h.stderr)
			assert.Contains(t, h.stdout, "FT01")
		})
	}
}

// verifyFindings runs `pteinspect --verify --json` and returns the
// methods with an error finding and the program-level error codes.
func verifyFindings(t *testing.T, args ...string) (methods []string, program []string, code int) {
	methods, program, _, code = verifyAllFindings(t, args...)
	return methods, program, code
}

// verifyAllFindings is verifyFindings that also returns the codes of the
// program-level warnings.
func verifyAllFindings(t *testing.T, args ...string) (methods, program, programWarnings []string, code int) {
	t.Helper()
	r := runArgs(nil, append([]string{"--verify", "--json"}, args...)...)
	var out struct {
		OK       bool `json:"ok"`
		Findings []struct {
			Severity, Method, Code string
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout+r.stderr)
	for _, f := range out.Findings {
		if f.Severity != "error" {
			if f.Method == "" {
				programWarnings = append(programWarnings, f.Code)
			}
			continue
		}
		if f.Method == "" {
			program = append(program, f.Code)
		} else if !slices.Contains(methods, f.Method) {
			methods = append(methods, f.Method)
		}
	}
	sort.Strings(methods)
	return methods, program, programWarnings, r.code
}

// TestVerifyDataPairs: for every run of corpus/PAIRS.tsv, `pteinspect
// --verify --data ...` reports exactly the methods whose load the C++
// record shows failing, and a data file or merge error exactly when
// Module::load failed (with its code). A run without data files is
// verified without --data: its methods that need data carry findings,
// none of them an error the record does not show.
func TestVerifyDataPairs(t *testing.T) {
	dir := testkit.SharedDir(t, "corpus")
	for _, run := range testkit.Pairs(t, dir) {
		t.Run(run.Run, func(t *testing.T) { checkVerifyRun(t, run.Program, run.DataFiles, run.Record) })
	}
}

// TestVerifyDataVectors does the same for the runs of vectors/ptd
// (damaged and altered data files with a corpus program, VECTORS.tsv and
// RUN.cpp.jsonl): a method the C++ runtime crashed on must be an error too.
func TestVerifyDataVectors(t *testing.T) {
	dir := testkit.SharedDir(t, "vectors", "ptd")
	for _, run := range testkit.DataVectors(t, dir, testkit.SharedDir(t, "corpus")) {
		t.Run(run.Run, func(t *testing.T) {
			if run.Missing != "" {
				t.Skipf("data file %s is missing but the C++ record loaded it", run.Missing)
			}
			checkVerifyRun(t, run.Program, run.DataFiles, run.Record)
		})
	}
}

// checkVerifyRun runs `pteinspect --verify --data ...` for one recorded
// run and compares it with the record: exactly the methods whose load
// failed (or crashed) have error findings, and a data file or merge error
// is reported exactly when Module::load failed, with its code. A run
// without data files is verified without --data: none of its methods has
// an error the record does not show.
func checkVerifyRun(t *testing.T, program string, dataFiles []string, rec *testkit.DataRecord) {
	t.Helper()
	var failing []string
	unreached := rec.Unreached()
	for _, m := range rec.Methods {
		if c, ok := rec.Loads[m]; (!ok || c != "Ok") && !unreached[m] {
			failing = append(failing, m)
		}
	}
	sort.Strings(failing)
	args := []string{program}
	for _, d := range dataFiles {
		args = append(args, "--data", d)
	}
	methods, programErrs, programWarnings, code := verifyAllFindings(t, args...)
	if rec.ProgramRefused() {
		// The recording runtime refused the program at Program::load
		// (pteinspect verifies for ExecuTorch's default build, which may
		// load it): the refusal must be reported, as an error or a
		// warning, and no method has a verdict to compare.
		assert.Contains(t, append(programErrs, programWarnings...), rec.Program, "Program::load fails with %s", rec.Program)
	}
	// A method the runtime never reached may have findings or not.
	methods = slices.DeleteFunc(methods, func(m string) bool { return unreached[m] })
	if len(dataFiles) == 0 {
		for _, m := range methods {
			assert.Contains(t, failing, m, "method %s has an error finding; the record loads it", m)
		}
		return
	}
	switch {
	case rec.ProgramRefused():
	case rec.Crashed && len(rec.Methods) == 0:
		// The runtime died before listing the methods: none of them loads.
		assert.NotEmpty(t, methods, "the C++ runtime crashed before loading any method")
	default:
		assert.Equal(t, failing, methods, "methods with error findings")
	}
	want := rec.DataCode()
	switch {
	case rec.Crashed && len(rec.Files) < len(dataFiles):
		// The loader crashed on a data file before reporting it.
		assert.NotEmpty(t, programErrs, "the C++ loader crashed on a data file")
	case want != "Ok":
		assert.Contains(t, programErrs, want, "Module::load fails with %s", want)
	case !rec.ProgramRefused():
		assert.Empty(t, programErrs)
	}
	if len(failing) > 0 || want != "Ok" || len(programErrs) > 0 {
		assert.Equal(t, exitFail, code)
	} else {
		assert.Equal(t, exitOK, code)
	}
	// Every other view takes --data too and exits alike.
	for _, view := range [][]string{nil, {"--json"}, {"--plan"}, {"--plan", "--json"}} {
		r := runArgs(nil, append(view, args...)...)
		assert.Equal(t, code, r.code, "%v: %s", view, r.stderr)
	}
}

// externalProgram writes a program built here whose method forward has an
// external constant "w.const" and a memory-planned external tensor
// "w.planned", both FLOAT [2,2].
func externalProgram(t *testing.T) string {
	t.Helper()
	data := testprog.Rewrite(t, trtPrograms(t)["segment"], func(p *pte.Program) {
		ep := p.Plan(0)
		for _, x := range []struct {
			key     string
			planned bool
		}{{"w.const", false}, {"w.planned", true}} {
			tn := &pte.Tensor{ScalarType: pte.ScalarTypeFLOAT, Sizes: []int32{2, 2}, DimOrder: []uint8{0, 1},
				ExtraTensorInfo: &pte.ExtraTensorInfo{FullyQualifiedName: x.key, Location: pte.TensorDataLocationEXTERNAL}}
			if x.planned {
				tn.AllocationInfo = &pte.AllocationDetails{MemoryID: 1}
			}
			ep.Values = append(ep.Values, &pte.EValue{Val: tn})
		}
	})
	path := filepath.Join(t.TempDir(), "external.pte")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// writePTD writes a .ptd with a FLOAT [2,2] key per name, its bytes
// filled with fill, and returns its path.
func writePTD(t *testing.T, name string, fill byte, keys ...string) string {
	t.Helper()
	d := &ptd.Data{}
	for i, k := range keys {
		d.NamedData = append(d.NamedData, ptd.NamedData{Key: k, SegmentIndex: uint32(i),
			Layout: &ptd.TensorLayout{ScalarType: pte.ScalarTypeFLOAT, Sizes: []int32{2, 2}, DimOrder: []uint8{0, 1}}})
		d.Segments = append(d.Segments, io.NewSectionReader(bytes.NewReader(bytes.Repeat([]byte{fill}, 16)), 0, 16))
	}
	path := filepath.Join(t.TempDir(), name)
	_, err := ptd.WriteFile(path, d)
	require.NoError(t, err)
	return path
}

// TestDataViews: a program built here with external tensors, alone and
// with data files, in every view.
func TestDataViews(t *testing.T) {
	prog := externalProgram(t)
	both := writePTD(t, "both.ptd", 1, "w.const", "w.planned")
	onlyConst := writePTD(t, "const.ptd", 1, "w.const")

	// Alone: the views say which keys it needs; --plan fails the method.
	r := runArgs(nil, prog)
	assert.Contains(t, r.stdout, `needs 2 key(s)`)
	assert.Contains(t, r.stdout, `"w.const", "w.planned"`)
	r = runArgs(nil, "--plan", "--json", prog)
	assert.Equal(t, exitFail, r.code)
	assert.Contains(t, r.stdout, `"invalid_state"`)
	assert.NotContains(t, r.stdout, `"external_data"`, "no --data, no external_data member")

	// With the file that has both keys: loads, and each tensor's source.
	for _, view := range [][]string{nil, {"--json"}, {"--verify"}, {"--plan"}, {"--plan", "--json"}} {
		r := runArgs(nil, append(view, prog, "--data", both)...)
		assert.Equal(t, exitOK, r.code, "%v: %s%s", view, r.stdout, r.stderr)
	}
	r = runArgs(nil, "--json", prog, "--data", both)
	var doc struct {
		Problems     []map[string]any `json:"problems"`
		ExternalData struct {
			Files   []struct{ Name string }
			Methods []struct {
				Name    string
				OK      bool
				Tensors []struct {
					Key     string
					Planned bool
					File    *string
					Offset  *int64
				}
			}
			Missing []string
		} `json:"external_data"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.Len(t, doc.ExternalData.Methods, 1)
	m := doc.ExternalData.Methods[0]
	assert.True(t, m.OK)
	require.Len(t, m.Tensors, 2)
	for _, x := range m.Tensors {
		require.NotNil(t, x.File, x.Key)
		assert.Equal(t, both, *x.File)
		assert.NotNil(t, x.Offset)
	}
	assert.Empty(t, doc.ExternalData.Missing)
	for _, p := range doc.Problems {
		path, _ := p["path"].(string)
		assert.NotEqual(t, ".extra_tensor_info", filepath.Ext(path), "the notice that data is external is replaced: %v", p)
	}

	// Only the constant given: the planned tensor is missing (NotFound).
	r = runArgs(nil, "--verify", prog, "--data", onlyConst)
	assert.Equal(t, exitFail, r.code)
	assert.Contains(t, r.stdout, `w.planned`)
	assert.Contains(t, r.stdout, `[NotFound]`)
	r = runArgs(nil, prog, "--data", onlyConst)
	assert.Contains(t, r.stdout, "missing keys: [\"w.planned\"]")

	// The same key in two files: the merge fails (InvalidArgument) and
	// the method fares as without data.
	methods, program, code := verifyFindings(t, prog, "--data", both, "--data", both)
	assert.Equal(t, exitFail, code)
	assert.Equal(t, []string{"forward"}, methods)
	assert.Equal(t, []string{"InvalidArgument"}, program)

	// Flags that do not take --data.
	assert.Equal(t, exitUsage, runArgs(nil, "--compile-specs", prog, "--data", both).code)
	assert.Equal(t, exitUsage, runArgs(nil, both, "--data", both).code)
	assert.Equal(t, exitUsage, runArgs(nil, "--plan", both).code)
}

// TestPTDDiff compares .ptd files built here.
func TestPTDDiff(t *testing.T) {
	a := writePTD(t, "a.ptd", 1, "x", "y")
	same := writePTD(t, "same.ptd", 1, "x", "y")
	content := writePTD(t, "content.ptd", 2, "x", "y")
	keys := writePTD(t, "keys.ptd", 1, "x", "z")

	assert.Equal(t, exitOK, runArgs(nil, "diff", a, same).code)
	r := runArgs(nil, "diff", a, content)
	assert.Equal(t, exitFail, r.code)
	assert.Contains(t, r.stdout, "named_data[x].sha256")
	assert.Contains(t, r.stdout, "named_data[y].sha256")

	r = runArgs(nil, "diff", "--json", a, keys)
	assert.Equal(t, exitFail, r.code)
	var out struct {
		Equal       bool
		Differences []struct{ Path, Kind string }
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	assert.False(t, out.Equal)
	var got []string
	for _, d := range out.Differences {
		got = append(got, d.Kind+" "+d.Path)
	}
	assert.Contains(t, got, "removed named_data[y]")
	assert.Contains(t, got, "added named_data[z]")

	// A .ptd against a program is a usage error, and so is --summary, which
	// is for programs; --paths prints what the default view prints.
	assert.Equal(t, exitUsage, runArgs(nil, "diff", a, trtPath(t, "segment")).code)
	assert.Equal(t, exitUsage, runArgs(nil, "diff", "--json", "--summary", a, keys).code)
	assert.Equal(t, runArgs(nil, "diff", a, content), runArgs(nil, "diff", "--paths", a, content))
}

// TestPTDViewFlags: a program-only flag on a .ptd is a usage error whose
// message lists every flag that does apply, each of which works.
func TestPTDViewFlags(t *testing.T) {
	a := writePTD(t, "a.ptd", 1, "x", "y")
	r := runArgs(nil, "--plan", a)
	require.Equal(t, exitUsage, r.code, r.stderr)
	const applies = "only --json, --hash, --verify, --long and --size apply"
	assert.Contains(t, r.stderr, applies)
	for _, flag := range []string{"--json", "--hash", "--verify", "--long", "--size"} {
		assert.Contains(t, applies, flag)
		got := runArgs(nil, flag, a)
		assert.Equal(t, exitOK, got.code, "%s: %s", flag, got.stderr)
	}
}

// TestVerifyDataPairsOverHTTP: the same runs with the program and every
// data file served over HTTP (--data takes URLs through the one input
// opener) give the same verdicts as the local files.
func TestVerifyDataPairsOverHTTP(t *testing.T) {
	dir := testkit.SharedDir(t, "corpus")
	srv, _ := serveDir(t, dir)
	rel := func(p string) string {
		r, err := filepath.Rel(dir, p)
		require.NoError(t, err)
		return srv.URL + "/" + filepath.ToSlash(r)
	}
	for _, run := range testkit.Pairs(t, dir) {
		t.Run(run.Run, func(t *testing.T) {
			var files []string
			for _, d := range run.DataFiles {
				files = append(files, rel(d))
			}
			checkVerifyRun(t, rel(run.Program), files, run.Record)
		})
	}
}
