package inspect

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/pte"
)

// TestNewProgramNilUnionMembers: a union tag whose member table is absent
// (package pte decodes it as a nil pointer of the member type) is written
// as the tag with a null member, never dereferenced.
func TestNewProgramNilUnionMembers(t *testing.T) {
	values := []pte.Value{
		(*pte.Null)(nil), (*pte.Int)(nil), (*pte.Bool)(nil), (*pte.Double)(nil), (*pte.Tensor)(nil),
		(*pte.String)(nil), (*pte.IntList)(nil), (*pte.DoubleList)(nil), (*pte.BoolList)(nil),
		(*pte.TensorList)(nil), (*pte.OptionalTensorList)(nil), (*pte.UnknownValue)(nil),
	}
	wantValues := []string{"Null", "Int", "Bool", "Double", "Tensor", "String", "IntList", "DoubleList",
		"BoolList", "TensorList", "OptionalTensorList", "NONE"}
	args := []pte.InstructionArgs{
		(*pte.KernelCall)(nil), (*pte.DelegateCall)(nil), (*pte.MoveCall)(nil), (*pte.JumpFalseCall)(nil),
		(*pte.FreeCall)(nil), (*pte.UnknownInstruction)(nil),
	}
	wantArgs := []string{"KernelCall", "DelegateCall", "MoveCall", "JumpFalseCall", "FreeCall", "NONE"}

	ep := &pte.ExecutionPlan{Name: "forward", Chains: []*pte.Chain{{}}}
	for _, v := range values {
		ep.Values = append(ep.Values, &pte.EValue{Val: v})
	}
	for _, a := range args {
		ep.Chains[0].Instructions = append(ep.Chains[0].Instructions, &pte.Instruction{Args: a})
	}
	var got *Program
	require.NotPanics(t, func() { got = NewProgram(&pte.Program{ExecutionPlan: []*pte.ExecutionPlan{ep}}, true) })
	plan := got.ExecutionPlan[0]
	for i, want := range wantValues {
		assert.Equal(t, want, plan.Values[i].ValType.String(), "values[%d]", i)
		assert.Nil(t, plan.Values[i].Val, "values[%d]", i)
	}
	for i, want := range wantArgs {
		in := plan.Chains[0].Instructions[i]
		assert.Equal(t, want, in.InstrArgsType.String(), "instructions[%d]", i)
		assert.Nil(t, in.InstrArgs, "instructions[%d]", i)
	}
	b, err := Marshal(got)
	require.NoError(t, err)
	var decoded struct {
		ExecutionPlan []struct {
			Values []map[string]any `json:"values"`
		} `json:"execution_plan"`
	}
	require.NoError(t, json.Unmarshal(b, &decoded))
	assert.Equal(t, map[string]any{"val_type": "Double", "val": nil}, decoded.ExecutionPlan[0].Values[3])
}
