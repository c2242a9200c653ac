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
	var b []byte
	require.NotPanics(t, func() {
		var err error
		b, err = Marshal(&Program{Program: programOf([]*pte.ExecutionPlan{ep}), Hash: true})
		require.NoError(t, err)
	})
	var decoded struct {
		ExecutionPlan []struct {
			Values []map[string]any `json:"values"`
			Chains []struct {
				Instructions []map[string]any `json:"instructions"`
			} `json:"chains"`
		} `json:"execution_plan"`
	}
	require.NoError(t, json.Unmarshal(b, &decoded))
	plan := decoded.ExecutionPlan[0]
	for i, want := range wantValues {
		assert.Equal(t, map[string]any{"val_type": want, "val": nil}, plan.Values[i], "values[%d]", i)
	}
	for i, want := range wantArgs {
		assert.Equal(t, map[string]any{"instr_args_type": want, "instr_args": nil}, plan.Chains[0].Instructions[i], "instructions[%d]", i)
	}
}
