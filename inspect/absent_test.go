package inspect

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/pte"
)

// absentProgram has one absent string in every table kind that has
// strings, next to present empty and present non-empty strings.
func absentProgram() *pte.Program {
	p := &pte.Program{
		NamedData: []*pte.NamedData{{SegmentIndex: 2, Absent: []string{"key"}}},
	}
	p.SetPlans([]*pte.ExecutionPlan{{
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
	}})
	return p
}

// TestAbsentStringsJSON: absent strings are null, present empty ones are
// "".
func TestAbsentStringsJSON(t *testing.T) {
	out, err := Marshal(&Program{Program: absentProgram(), Hash: false})
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

	// A listed field with a value is present (the value wins).
	p := absentProgram()
	p.Plan(0).Name = "forward"
	out, err = Marshal(&Program{Program: p, Hash: false})
	require.NoError(t, err)
	assert.Contains(t, string(out), `"name": "forward"`)
	assert.Equal(t, 1, strings.Count(string(out), `"name": null`), "operator name only: %s", out)
}
