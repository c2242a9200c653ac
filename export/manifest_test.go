package export

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadExampleManifest(t *testing.T) {
	path := filepath.Join("..", "testdata", "examples", "model.json")
	m, err := ReadManifest(path)
	require.NoError(t, err)
	require.Len(t, m.Program.Methods, 2)
	assert.True(t, m.Options.WeightStreamingBudget.IsAuto(), `"auto" means no budget`)
	dec := m.Program.Methods[1]
	assert.Equal(t, "decode", dec.Name)
	require.Len(t, dec.Calls, 1)
	c := dec.Calls[0]
	assert.Equal(t, filepath.Join("..", "testdata", "examples", "decode.engine"), c.Engine.Path)
	assert.Equal(t, SourceEngine, c.Engine.Kind)
	assert.Equal(t, []AliasedIO{{Output: "present_k", Input: "past_k", Kind: "kv_cache_update"}}, c.AliasedIO)
	assert.Equal(t, "k_cache_out", c.Outputs[1].Tensor)

	res, err := WriteFile(filepath.Join(t.TempDir(), "m.pte"), m.Program, &m.Options)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Blobs)
	assert.Empty(t, res.Warnings)
}

func TestParseManifestForms(t *testing.T) {
	m, err := ParseManifest([]byte(`{
		"methods": [{"name": "f", "inputs": [{"name": "x", "dtype": "int32", "shape": []}], "outputs": ["x"],
		  "engines": [{"blob": "/abs/b.bin", "inputs": ["x"], "outputs": [{"tensor": "y", "dtype": "bool", "shape": [1]}]}]}],
		"weight_streaming_budget_per_engine": 8589934592,
		"compile_specs": [{"key": "a", "value": "v"}, {"key": "b", "value_hex": "0001"}],
		"segment_alignment": 4096, "inline_delegate_data": true, "target_device": "cuda:2"}`), "/base")
	require.NoError(t, err)
	assert.Equal(t, budgetOf(8<<30), m.Options.WeightStreamingBudget)
	assert.Equal(t, []byte{0, 1}, m.Options.CompileSpecs[1].Value)
	assert.Equal(t, uint64(4096), m.Options.SegmentAlignment)
	assert.True(t, m.Options.InlineDelegateData)
	assert.Equal(t, "cuda:2", m.Options.TargetDevice)
	c := m.Program.Methods[0].Calls[0]
	assert.Equal(t, BlobFile("/abs/b.bin"), c.Engine)
	assert.Equal(t, "x", c.Inputs[0].Name)
	assert.Equal(t, "b.bin", c.Name)

	m, err = ParseManifest([]byte(`{"methods": [{"name": "f"}], "weight_streaming_budget_per_engine": "512MiB"}`), "")
	require.NoError(t, err)
	assert.Equal(t, budgetOf(512<<20), m.Options.WeightStreamingBudget)
}

func TestParseManifestErrors(t *testing.T) {
	for _, c := range []struct{ in, field, msg string }{
		{``, "", "empty manifest"},
		{`{"methods": [}`, "", "invalid JSON"},
		{`{"methods": [`, "", "unexpected end"},
		{`{"methods": []} x`, "", "after the JSON object"},
		{`[]`, "", "want an object, found an array"},
		{`{"methods": []}`, "methods", "at least one"},
		{`{"methods": [null]}`, "methods[0]", "want an object, found null"},
		{`{"methods": [{"name": "f", "bogus": 1}]}`, "methods[0].bogus", `unknown member "bogus"`},
		{`{"methods": [{"name": "f", "name": "g"}]}`, "", `member "name" is given twice`},
		{`{"methods": [{"name": "f", "inputs": [{"name": "x", "dtype": "float32", "shape": [], "extra": 1}]}]}`, "methods[0].inputs[0].extra", `unknown member "extra"`},
		{`{"methods": [{"name": "f", "engines": [{"engine": "e", "outputs": [{"binding": "y", "bogus": 1}]}]}]}`, "methods[0].engines[0].outputs[0].bogus", `unknown member "bogus"`},
		{`{"methods": [{"name": "f", "engines": [{"engine": "e", "outputs": [{"binding": "y", "dtype": "float"}]}]}]}`, "methods[0].engines[0].outputs[0].dtype", "unknown dtype"},
		{`{"methods": [{"name": ""}]}`, "methods[0].name", "required"},
		{`{"methods": [{"name": 3}]}`, "methods[0].name", "want a string, found a number"},
		{`{"methods": [{"name": "f", "inputs": [{"name": "x"}]}]}`, "methods[0].inputs[0]", "dtype"},
		{`{"methods": [{"name": "f", "inputs": [{"name": "x", "dtype": "int8", "shape": [1.5]}]}]}`, "methods[0].inputs[0].shape[0]", "not a whole number"},
		{`{"methods": [{"name": "f", "engines": [{}]}]}`, "methods[0].engines[0]", "required"},
		{`{"methods": [{"name": "f", "engines": [{"engine": "a", "blob": "b"}]}]}`, "methods[0].engines[0]", "not both"},
		{`{"methods": [{"name": "f", "engines": [{"blob": "b", "device_id": 1}]}]}`, "methods[0].engines[0].device_id", "own device_id"},
		{`{"methods": [{"name": "f", "engines": [{"engine": "e", "device_id": 200}]}]}`, "methods[0].engines[0].device_id", "[0, 127]"},
		{`{"methods": [{"name": "f", "engines": [{"engine": "e", "aliased_io": [{"output": "y", "in": "x"}]}]}]}`, "methods[0].engines[0].aliased_io[0].in", "unknown member"},
		{`{"methods": [{"name": "f"}], "compile_specs": [{"key": "k"}]}`, "compile_specs[0]", "value"},
		{`{"methods": [{"name": "f", "compile_specs": [{"key": "k", "value": 1}]}]}`, "methods[0].compile_specs[0].value", "want a string"},
		{`{"methods": [{"name": "f"}], "compile_specs": [{"key": "k", "value_hex": "zz"}]}`, "compile_specs[0].value_hex", "hex"},
		{`{"methods": [{"name": "f"}], "weight_streaming_budget_per_engine": 1.5}`, "weight_streaming_budget_per_engine", "whole number"},
		{`{"methods": [{"name": "f"}], "weight_streaming_budget_per_engine": "-1"}`, "weight_streaming_budget_per_engine", "negative"},
		{`{"methods": [{"name": "f"}], "weight_streaming_budget_per_engine": true}`, "weight_streaming_budget_per_engine", "byte count"},
		{`{"methods": [{"name": "f"}], "target_device": "banana"}`, "target_device", "bad target device"},
		{`{"methods": [{"name": "f"}], "segment_alignment": 1073741824}`, "segment_alignment", "[1, 1048576]"},
		{`{"methods": [{"name": "f", "inputs": [{"name": "x", "dtype": "int8", "shape": "big"}]}]}`, "methods[0].inputs[0].shape", "wrong JSON type"},
		{strings.Repeat("[", 100), "", "nested deeper"},
	} {
		_, err := ParseManifest([]byte(c.in), "")
		require.Error(t, err, c.in)
		var me *ManifestError
		require.True(t, errors.As(err, &me), "%T %v", err, err)
		assert.Equal(t, c.field, me.Field, c.in)
		assert.Contains(t, err.Error(), c.msg, c.in)
	}
}

// TestManifestErrorLocations: every error points at the offending value
// (absolute line and column, whatever its nesting) and names its path.
func TestManifestErrorLocations(t *testing.T) {
	doc := func(tensor, binding string) string {
		return "{\n" +
			"  \"methods\": [{\n" +
			"    \"name\": \"f\",\n" +
			"    \"inputs\": [{\"name\": \"x\", \"dtype\": \"int8\",\n" +
			"      " + tensor + "}],\n" +
			"    \"engines\": [{\"engine\": \"e\", \"inputs\": [\"x\"],\n" +
			"      \"outputs\": [\"a\", {\"binding\": \"y\",\n" +
			"        " + binding + "}]}]\n" +
			"  }]\n" +
			"}\n"
	}
	for _, c := range []struct {
		tensor, binding string
		field           string
		line, col       int
	}{
		{`"shape": "abc"`, `"dtype": "int8"`, "methods[0].inputs[0].shape", 5, 16},
		{`"shape": [1], "bogus": 2`, `"dtype": "int8"`, "methods[0].inputs[0].bogus", 5, 21},
		{`"shape": [1]`, `"dtype": "nope"`, "methods[0].engines[0].outputs[1].dtype", 8, 18},
		{`"shape": [1]`, `"dtype": "int8", "shape": [1, true]`, "methods[0].engines[0].outputs[1].shape[1]", 8, 39},
	} {
		in := doc(c.tensor, c.binding)
		_, err := ParseManifest([]byte(in), "")
		var me *ManifestError
		require.True(t, errors.As(err, &me), "%v\n%s", err, in)
		assert.Equal(t, c.field, me.Field, in)
		assert.Equal(t, [2]int{c.line, c.col}, [2]int{me.Line, me.Col}, "%v\n%s", err, in)
		assert.Contains(t, err.Error(), fmt.Sprintf(":%d:%d: %s: ", c.line, c.col, c.field))
	}
	_, err := ParseManifest([]byte("{\n  \"methods\": [\n    {,}\n  ]\n}"), "")
	var me *ManifestError
	require.True(t, errors.As(err, &me))
	assert.Equal(t, [2]int{3, 6}, [2]int{me.Line, me.Col}, "%v", err)

	_, err = ReadManifest(filepath.Join(t.TempDir(), "none.json"))
	assert.ErrorContains(t, err, "none.json")
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"methods": 1}`), 0o644))
	_, err = ReadManifest(bad)
	assert.ErrorContains(t, err, "bad.json:1:13: methods: wrong JSON type")
}

// FuzzParseManifest checks that no manifest makes the parser, the validator
// or the writer panic, that refusals are typed errors, that the memory plan
// never overlaps live tensors, and that every program written from an
// accepted manifest loads and verifies without an Error finding.
func FuzzParseManifest(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("..", "testdata", "examples", "model.json")); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"methods": [{"name": "f", "inputs": ["x"], "outputs": [{"name": "y", "shape": [-1], "max_shape": [3]}],
		"engines": [{"engine": "e", "inputs": ["x"], "outputs": [{"binding": "y", "dtype": "float16", "shape": [-1], "max_shape": [4]}],
		"aliased_io": [{"output": "y", "input": "x"}]}]}], "weight_streaming_budget_per_engine": "1.5GiB"}`))
	f.Add([]byte(`{"methods": [{"name": "f", "inputs": [{"name": "x", "dtype": "int64", "shape": [2147483648]}]}]}`))
	f.Add([]byte(`{"methods": [{"name": "forward"}]}`))
	f.Add([]byte(`{"methods": [{"name": "id", "inputs": [{"name": "x", "dtype": "bool", "shape": []}], "outputs": ["x"]},
		{"name": "g", "compile_specs": [{"key": "target_device", "value": "cuda:1"}], "inputs": [{"name": "x", "dtype": "int8", "shape": [3]}],
		"outputs": ["z"], "engines": [{"engine": "e", "inputs": ["x"], "outputs": [{"binding": "z", "dtype": "int8", "shape": [3]}]}]}],
		"segment_alignment": 4096, "inline_delegate_data": false}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data, "")
		if err != nil {
			var me *ManifestError
			if !errors.As(err, &me) {
				t.Fatalf("error is %T, not *ManifestError: %v", err, err)
			}
			return
		}
		// Every engine source becomes a one-byte engine.
		for _, meth := range m.Program.Methods {
			for _, c := range meth.Calls {
				c.Engine = EngineReader(strings.NewReader("e"), 1)
			}
		}
		mds, err := resolve(m.Program, nil)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is %T, not *Error: %v", err, err)
			}
			return
		}
		for _, md := range mds {
			if err := planMemory(md); err != nil {
				return
			}
			for _, tt := range md.tensors {
				if tt.offset%planAlign != 0 || tt.offset < 0 || tt.offset+tt.nbytes > md.arena {
					t.Fatalf("tensor %q placed at %d+%d outside arena %d", tt.name, tt.offset, tt.nbytes, md.arena)
				}
			}
			for i, a := range md.tensors {
				for _, b := range md.tensors[:i] {
					live := a.produced <= b.lastUse && b.produced <= a.lastUse
					space := a.nbytes > 0 && b.nbytes > 0 && a.offset < b.offset+b.nbytes && b.offset < a.offset+a.nbytes
					if live && space {
						t.Fatalf("tensors %q and %q are alive together and overlap", a.name, b.name)
					}
				}
			}
		}
		// Build and write it: what is accepted must load, and verify without
		// an Error finding.
		var buf bytes.Buffer
		if _, err := Write(&buf, m.Program, &m.Options); err != nil {
			var e *Error
			if !errors.As(err, &e) && !strings.Contains(err.Error(), "writing the program") {
				t.Fatalf("error is %T, not *Error: %v", err, err)
			}
			return
		}
		verifyClean(t, buf.Bytes())
	})
}

// TestManifestPath: a path is formatted as the member names joined by
// dots, each element's index in brackets, however deep.
func TestManifestPath(t *testing.T) {
	p := mpath{}.key("methods").elem(3).key("engines").elem(0).key("inputs").elem(12).key("dtype")
	if got, want := p.String(), "methods[3].engines[0].inputs[12].dtype"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := (mpath{}).key("segment_alignment").String(); got != "segment_alignment" {
		t.Errorf("top-level member: %q", got)
	}
	deep, want := mpath{}, ""
	for i := range 9 {
		deep = deep.key("a").elem(i)
		if i > 0 {
			want += "."
		}
		want += fmt.Sprintf("a[%d]", i)
	}
	deep = deep.elem(7) // an array in an array
	want += "[7]"
	if got := deep.String(); got != want {
		t.Errorf("deep path %q, want %q", got, want)
	}
}
