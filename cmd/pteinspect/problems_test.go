package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/testkit"
)

// TestDamagedMethodViews: a file that opens but whose methods cannot load
// (the damaged vectors upstream loads as a program: verdict "load:ok ...")
// gets complete default and --json views that end with the verifier's
// errors (path, byte offset, the code upstream reports), and exit status 1.
func TestDamagedMethodViews(t *testing.T) {
	dir := testkit.SharedDir(t, "vectors", "pte-bad")
	verdicts := readVerdicts(t, filepath.Join(dir, "index.tsv"))
	n := 0
	for _, path := range testkit.Glob(t, dir, "*.pte") {
		name := strings.TrimSuffix(filepath.Base(path), ".pte")
		verdict := verdicts[name]
		code := upstreamError(verdict)
		if !strings.HasPrefix(verdict, "load:ok") || code == "" {
			continue // the file does not open, or upstream loads it all
		}
		n++
		t.Run(name, func(t *testing.T) {
			r := runArgs(nil, "--long", path)
			assert.Equal(t, exitFail, r.code, r.stderr)
			assert.Empty(t, r.stderr)
			assert.Contains(t, r.stdout, "\nmethod ", "the view is complete")
			_, tail, found := strings.Cut(r.stdout, "\nproblems: ")
			require.True(t, found, r.stdout)
			assert.Contains(t, tail, "\n  error: ")
			assert.Contains(t, tail, "["+code+"]")

			r = runArgs(nil, "--json", path)
			assert.Equal(t, exitFail, r.code, r.stderr)
			var doc struct {
				Program  json.RawMessage   `json:"program"`
				Problems []inspect.Problem `json:"problems"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), "stdout is complete JSON")
			assert.NotEqual(t, "null", string(doc.Program))
			require.NotEmpty(t, doc.Problems)
			p := doc.Problems[0]
			assert.Equal(t, "error", p.Severity)
			assert.Equal(t, code, p.Code)
			assert.NotEmpty(t, p.Path)
			assert.NotNil(t, p.Offset)
		})
	}
	if n == 0 {
		t.Logf("no damaged vector that opens and fails a method")
	}
}

// TestVerifyAliasedIOThatInitRefuses: an aliased_io entry with an unknown
// kind and an input that is no binding is read alike by both readers, but
// TensorRTBackend init fails on it: --verify reports errors and the human
// view shows hazards and problems.
func TestVerifyAliasedIOThatInitRefuses(t *testing.T) {
	m := &delegate.Metadata{
		IOBindings: []delegate.Binding{{Name: "x", IsInput: true}, {Name: "y"}},
		AliasedIO:  []delegate.AliasedIO{{Output: "y", Input: "no_such_input", Kind: "bogus"}},
	}
	data := withMetadata(t, m)
	r := runArgs(data, "--verify", "-")
	assert.Equal(t, exitFail, r.code)
	assert.Contains(t, r.stdout, `has kind "bogus"`)
	assert.Contains(t, r.stdout, `input "no_such_input" is not an input binding`)
	assert.Contains(t, r.stdout, "-: 2 error(s)")

	r = runArgs(data, "--long", "-")
	assert.Equal(t, exitFail, r.code)
	assert.Contains(t, r.stdout, `HAZARD: aliased_io entry "y" <- "no_such_input" has kind "bogus"`)
	assert.NotContains(t, r.stdout, "hazards     none")
	assert.Contains(t, r.stdout, "\nproblems: 2 error(s)")
}

// TestPlanJSONWhenTheProgramCannotBeRead: pipelines reading --plan --json
// get a JSON object on stdout even when there is nothing to plan.
func TestPlanJSONWhenTheProgramCannotBeRead(t *testing.T) {
	cases := unreadableFiles(t)
	for path, kind := range cases {
		r := runArgs(nil, "--plan", "--json", path)
		assert.Equal(t, exitFail, r.code, path)
		var v struct {
			Error *struct {
				Kind    string `json:"kind"`
				Message string `json:"message"`
			} `json:"error"`
			Methods []json.RawMessage `json:"methods"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &v), "%s: %q", path, r.stdout)
		require.NotNil(t, v.Error, path)
		assert.Equal(t, kind, v.Error.Kind, path)
		assert.NotEmpty(t, v.Error.Message)
		assert.NotNil(t, v.Methods)
		assert.Empty(t, v.Methods)
		assert.NotEmpty(t, r.stderr, "the reason also goes to stderr")
	}
}

// TestUnionTagWithoutTable: a file whose Double value and FreeCall keep
// their union tags but lost their member tables (the FuzzBuild seed package inspect
// generates) gets every view, no panic, and the verifier's errors.
func TestUnionTagWithoutTable(t *testing.T) {
	seed, err := os.ReadFile(filepath.Join("..", "..", "inspect", "testdata", "fuzz", "FuzzBuild", "seed_nil_members"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(seed)), "\n")
	require.Len(t, lines, 2)
	quoted := strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")")
	text, err := strconv.Unquote(quoted)
	require.NoError(t, err)
	data := []byte(text)

	for _, args := range [][]string{{"--long", "-"}, {"--json", "-"}, {"--verify", "-"}} {
		r := runArgs(data, args...)
		assert.Equal(t, exitFail, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stdout, "FreeCall has no table", "%v", args)
		assert.Contains(t, r.stdout, "Double value has no Double table", "%v", args)
	}
	r := runArgs(data, "-") // the summary counts them and lists the first
	assert.Equal(t, exitFail, r.code, r.stderr)
	assert.Regexp(t, `problems +8 errors, 1 warning`, r.stdout)
	assert.Contains(t, r.stdout, "Double value has no Double table")
	r = runArgs(data, "--plan", "-") // the runtime fails the method on the first damage it meets
	assert.Equal(t, exitFail, r.code, r.stderr)
	assert.Contains(t, r.stdout, "FAILS to load: invalid_program")

	r = runArgs(data, "--json", "-")
	assert.Regexp(t, `"instr_args_type": "FreeCall",\s+"instr_args": null`, r.stdout)
	assert.Regexp(t, `"val_type": "Double",\s+"val": null`, r.stdout)
}
