package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/inspect"
)

// keysOf returns the member names of a JSON object, sorted.
func keysOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m), "%s", raw)
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// assertFailureJSON checks that stdout is the failure object of a --json
// run: {"error": {"kind", "message", "offset", "path"}}, with the plan's
// members (empty) for --plan.
func assertFailureJSON(t *testing.T, stdout, kind string, view []string) {
	t.Helper()
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), "%v: stdout %q", view, stdout)
	want := []string{"error"}
	if slices.Contains(view, "--plan") {
		want = []string{"assumed", "error", "methods", "scratch_memory", "stated"}
		assert.JSONEq(t, `[]`, string(doc["methods"]), "%v", view)
	}
	assert.Equal(t, want, keysOf(t, json.RawMessage(stdout)), "%v", view)
	assert.Equal(t, []string{"kind", "message", "offset", "path"}, keysOf(t, doc["error"]), "%v", view)
	var e inspect.Failure
	require.NoError(t, json.Unmarshal(doc["error"], &e))
	assert.Equal(t, kind, e.Kind, "%v", view)
	assert.NotEmpty(t, e.Message, "%v", view)
}

// TestJSONWhenTheFileCannotBeOpened: every --json view prints the failure
// object on standard output, with the offset and path of the damage, and
// exits 1; standard error has the reason too.
func TestJSONWhenTheFileCannotBeOpened(t *testing.T) {
	files := unreadableFiles(t)
	var identPath string
	type fileCase struct {
		path, kind string
		offset     bool
	}
	var cases []fileCase
	for path, kind := range files {
		cases = append(cases, fileCase{path, kind, kind != "access_failed"})
		if strings.HasSuffix(path, "ident.pte") {
			identPath = path
		}
	}
	require.NotEmpty(t, identPath)
	for _, c := range cases {
		for _, view := range [][]string{{"--json"}, {"--json", "--hash"}, {"--compile-specs", "--json"}, {"--plan", "--json"}} {
			r := runArgs(nil, append(view, c.path)...)
			assert.Equal(t, exitFail, r.code, "%v %s", view, c.path)
			assert.NotEmpty(t, r.stderr)
			assertFailureJSON(t, r.stdout, c.kind, view)
			var doc struct {
				Error inspect.Failure `json:"error"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
			assert.Equal(t, c.offset, doc.Error.Offset != nil, "%v %s: offset %v", view, c.path, doc.Error.Offset)
		}
	}
	// The path names the damaged field when the reader knows it.
	r := runArgs(nil, "--json", identPath)
	var doc struct {
		Error inspect.Failure `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	assert.Equal(t, "file_identifier", doc.Error.Path)
	if assert.NotNil(t, doc.Error.Offset) {
		assert.EqualValues(t, 4, *doc.Error.Offset)
	}
}

// TestPlanJSONMembers: --plan --json has exactly the documented snake_case
// members at every level, lists always present, whatever package executor's
// Go structs look like.
func TestPlanJSONMembers(t *testing.T) {
	path := writeSeed(t, "chain_budget")
	r := runArgs(nil, "--plan", "--json", "--streamable-bytes", "1MiB", "--scratch-bytes", "4KiB", path)
	require.Equal(t, exitOK, r.code, r.stderr)
	var doc struct {
		Methods []struct {
			Delegates []struct {
				Budget json.RawMessage `json:"budget"`
			} `json:"delegates"`
		} `json:"methods"`
		Stated        []string        `json:"stated"`
		ScratchMemory json.RawMessage `json:"scratch_memory"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	assert.Equal(t, []string{"assumed", "methods", "scratch_memory", "stated"}, keysOf(t, json.RawMessage(r.stdout)))
	var raw struct {
		Methods []json.RawMessage `json:"methods"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &raw))
	require.Len(t, raw.Methods, 1)
	assert.Equal(t, []string{"delegates", "error", "missing_operators", "name", "not_modelled", "ok"}, keysOf(t, raw.Methods[0]))
	var m struct {
		Delegates []json.RawMessage `json:"delegates"`
	}
	require.NoError(t, json.Unmarshal(raw.Methods[0], &m))
	require.Len(t, m.Delegates, 2)
	assert.Equal(t, []string{"backend", "budget", "device", "index", "inputs", "modelled", "notes", "outputs", "scratch", "shared_scratch"},
		keysOf(t, m.Delegates[0]))
	assert.Equal(t, []string{"applied", "reason", "requested", "source", "streamable", "streaming"}, keysOf(t, doc.Methods[0].Delegates[0].Budget))
	assert.Equal(t, []string{"streamable", "scratch"}, doc.Stated)
	// The two engines run on cuda:0 and cuda:1: a shared pool per device
	// saves nothing.
	assert.JSONEq(t, `{"without_pool": 8192, "with_pool": 8192, "current": 8192, "pool_per_device": {}}`, string(doc.ScratchMemory))
}

// TestPlanFacts: what the plan rests on is said fact by fact, in both
// forms: stated facts, unknown ones, an engine with nothing streamable and
// a delegate the planner does not model.
func TestPlanFacts(t *testing.T) {
	budgeted := writeSeed(t, "chain_budget") // a weight_streaming_budget compile spec
	noSpec := writeSeed(t, "segment")        // no budget compile spec
	type budget struct {
		Source    string `json:"source"`
		Applied   *int64 `json:"applied"`
		Streaming *bool  `json:"streaming"`
	}
	type plan struct {
		Methods []struct {
			NotModelled []string `json:"not_modelled"`
			Delegates   []struct {
				Backend  string   `json:"backend"`
				Modelled bool     `json:"modelled"`
				Budget   *budget  `json:"budget"`
				Notes    []string `json:"notes"`
			} `json:"delegates"`
		} `json:"methods"`
		Assumed []string `json:"assumed"`
		Stated  []string `json:"stated"`
	}
	both := func(t *testing.T, args ...string) (string, plan) {
		t.Helper()
		h := runArgs(nil, append([]string{"--plan"}, args...)...)
		require.Equal(t, exitOK, h.code, h.stderr)
		j := runArgs(nil, append([]string{"--plan", "--json"}, args...)...)
		require.Equal(t, exitOK, j.code, j.stderr)
		var p plan
		require.NoError(t, json.Unmarshal([]byte(j.stdout), &p))
		return h.stdout, p
	}

	// Nothing stated: the streamable size is what the applied budget needs.
	out, p := both(t, budgeted)
	assert.Equal(t, []string{"streamable", "scratch"}, p.Assumed)
	assert.Empty(t, p.Stated)
	assert.Nil(t, p.Methods[0].Delegates[0].Budget.Streaming)
	assert.Contains(t, out, "streamable weight size   unknown, so applied budgets are open; state it with --streamable-bytes")
	assert.Contains(t, out, "applied        unknown: depends on the streamable weight size")

	// Nothing streamable: no budget applies, which is not unknown.
	out, p = both(t, "--streamable-bytes", "0", budgeted)
	b := p.Methods[0].Delegates[0].Budget
	require.NotNil(t, b.Streaming)
	assert.False(t, *b.Streaming)
	assert.Nil(t, b.Applied)
	assert.Contains(t, out, "applied        none: no budget applies (nothing streamable)")
	assert.Contains(t, out, "streamable weight size   0 (0 B), stated with --streamable-bytes")
	assert.NotContains(t, out, "applied        unknown")

	// The automatic budget is TensorRT's, unless --automatic-bytes states it.
	out, p = both(t, "--streamable-bytes", "1GiB", noSpec)
	assert.Equal(t, "automatic", p.Methods[0].Delegates[0].Budget.Source)
	assert.Contains(t, p.Assumed, "automatic")
	assert.Contains(t, out, "automatic budget         TensorRT computes it on the device, so it is open; state it with --automatic-bytes")
	assert.Contains(t, out, "applied        unknown: TensorRT computes the automatic budget on the device")
	out, p = both(t, "--streamable-bytes", "1GiB", "--automatic-bytes", "256MiB", noSpec)
	assert.Equal(t, []string{"streamable", "automatic"}, p.Stated)
	assert.NotContains(t, p.Assumed, "automatic")
	assert.EqualValues(t, 256<<20, *p.Methods[0].Delegates[0].Budget.Applied)
	assert.Contains(t, out, "automatic budget         268435456 (256.0 MiB), stated with --automatic-bytes")

	// A backend the planner does not model.
	out, p = both(t, otherBackendPath(t))
	assert.Equal(t, []string{"XnnpackBackend"}, p.Methods[0].NotModelled)
	require.NotEmpty(t, p.Methods[0].Delegates)
	assert.False(t, p.Methods[0].Delegates[0].Modelled)
	assert.Contains(t, out, "method forward: loads (if its XnnpackBackend delegates do: not modelled here)")
	assert.Contains(t, out, "[0] XnnpackBackend  (not modelled)")
	assert.False(t, strings.Contains(out, "engine facts"), "no TensorRT engine needs a fact")

	r := runArgs(nil, "--plan", "--automatic-bytes", "auto", noSpec)
	assert.Equal(t, exitUsage, r.code)
	r = runArgs(nil, "--automatic-bytes", "1MiB", noSpec)
	assert.Equal(t, exitUsage, r.code, "goes with --plan")
}

// writeSeed writes seedPrograms' program name to a temporary file and
// returns its path.
func writeSeed(t *testing.T, name string) string {
	t.Helper()
	data, ok := seedPrograms(t)[name]
	require.True(t, ok, name)
	path := filepath.Join(t.TempDir(), name+".pte")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// TestPlanScratchSaturates: scratch sizes too large to add up saturate
// (issue 11 #5): --plan --json never reports a negative total, and the
// human view keeps its scratch line.
func TestPlanScratchSaturates(t *testing.T) {
	path := writeSeed(t, "chain_budget")
	r := runArgs(nil, "--plan", "--json", "--streamable-bytes", "1MiB", "--scratch-bytes", "5000000000000000000", path)
	require.Equal(t, exitOK, r.code, r.stderr)
	var doc struct {
		ScratchMemory map[string]json.RawMessage `json:"scratch_memory"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	for _, k := range []string{"without_pool", "current"} {
		var n int64
		require.NoError(t, json.Unmarshal(doc.ScratchMemory[k], &n), k)
		assert.Equal(t, int64(math.MaxInt64), n, "%s saturates", k)
	}
	r = runArgs(nil, "--plan", "--streamable-bytes", "1MiB", "--scratch-bytes", "5000000000000000000", path)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "scratch memory: 8.0 EiB with a context each")
}
