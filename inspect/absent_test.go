package inspect

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/pte"
)

// absentProgram has one absent string in every table kind that has
// strings, next to present empty and present non-empty strings.
func absentProgram() *pte.Program {
	return &pte.Program{
		ExecutionPlan: []*pte.ExecutionPlan{{
			Absent:            []string{"name"},
			ContainerMetaType: &pte.ContainerMetadata{EncodedOutStr: "<$>", Absent: []string{"encoded_inp_str"}},
			Values: []*pte.EValue{
				{Val: &pte.String{Absent: []string{"string_val"}}},
				{Val: &pte.Tensor{Sizes: []int32{}, ExtraTensorInfo: &pte.ExtraTensorInfo{
					Location: pte.TensorDataLocationEXTERNAL, Absent: []string{"fully_qualified_name"}}}},
			},
			Chains: []*pte.Chain{{Stacktrace: []*pte.FrameList{{Items: []*pte.Frame{
				{Name: "", Lineno: 1, Absent: []string{"filename", "context"}}}}}}},
			Operators: []*pte.Operator{{Overload: "", Absent: []string{"name"}}},
			Delegates: []*pte.BackendDelegate{{Absent: []string{"id"},
				CompileSpecs: []*pte.CompileSpec{{Value: []byte{}, Absent: []string{"key"}}}}},
		}},
		NamedData: []*pte.NamedData{{SegmentIndex: 2, Absent: []string{"key"}}},
	}
}

// TestAbsentStringsJSON: absent strings are null, present empty ones are
// "", and reading the JSON back recovers which were absent.
func TestAbsentStringsJSON(t *testing.T) {
	out, err := Marshal(NewProgram(absentProgram(), false))
	require.NoError(t, err)
	text := string(out)
	for _, want := range []string{
		`"name": null`, `"encoded_inp_str": null`, `"encoded_out_str": "<$>"`, `"string_val": null`,
		`"fully_qualified_name": null`, `"filename": null`, `"context": null`, `"name": ""`,
		`"overload": ""`, `"id": null`, `"key": null`,
	} {
		assert.Contains(t, text, want)
	}
	assert.NotContains(t, text, "Absent")
	assert.Equal(t, 2, strings.Count(text, `"name": null`), "plan and operator name: %s", text)
	assert.Equal(t, 2, strings.Count(text, `"key": null`), "compile spec and named data key: %s", text)

	var back Program
	require.NoError(t, json.Unmarshal(out, &back))
	ep := back.ExecutionPlan[0]
	assert.Equal(t, []string{"name"}, ep.Absent)
	assert.Equal(t, []string{"encoded_inp_str"}, ep.ContainerMetaType.Absent)
	assert.Equal(t, "<$>", ep.ContainerMetaType.EncodedOutStr)
	assert.Equal(t, []string{"filename", "context"}, ep.Chains[0].Stacktrace[0].Items[0].Absent)
	assert.Equal(t, []string{"name"}, ep.Operators[0].Absent)
	assert.Equal(t, []string{"id"}, ep.Delegates[0].Absent)
	assert.Equal(t, []string{"key"}, ep.Delegates[0].CompileSpecs[0].Absent)
	assert.Equal(t, []string{"key"}, back.NamedData[0].Absent)
	// Union members read back untyped; the String member type itself
	// round-trips.
	var sv StringVal
	require.NoError(t, json.Unmarshal([]byte(`{"string_val": null}`), &sv))
	assert.Equal(t, []string{"string_val"}, sv.Absent)
	require.NoError(t, json.Unmarshal([]byte(`{"string_val": ""}`), &sv))
	assert.Nil(t, sv.Absent)
	want, err := Marshal(NewProgram(absentProgram(), false).ExecutionPlan[0].Chains)
	require.NoError(t, err)
	again, err := Marshal(ep.Chains)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(again))

	// A listed field with a value is present (the value wins), and nothing
	// absent means no Absent list.
	p := absentProgram()
	p.ExecutionPlan[0].Name = "forward"
	jp := NewProgram(p, false)
	assert.Nil(t, jp.ExecutionPlan[0].Absent)
	out, err = Marshal(jp.ExecutionPlan[0])
	require.NoError(t, err)
	assert.Contains(t, string(out), `"name": "forward"`)
}
