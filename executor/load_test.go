package executor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/pte"
)

// openBytes decodes a program file held in memory.
func openBytes(t testing.TB, data []byte) *pte.File {
	t.Helper()
	f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// loadSeed loads seedProgram after mutate changed it, with accepting
// backends, and returns LoadMethod's outcome.
func loadSeed(t *testing.T, mutate func(ep *pte.ExecutionPlan)) (*Method, error) {
	t.Helper()
	f := openBytes(t, writeProgram(t, seedProgram(t, seedMetadata()), seedMetadata()))
	if mutate != nil {
		mutate(f.Program.Plan(0))
	}
	reg := &Registry{}
	reg.RegisterBackend(TensorRTBackendID, acceptingBackend{})
	prog, err := Load(f, Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	m, err := prog.LoadMethod("forward", nil)
	if m != nil {
		t.Cleanup(func() { m.Close() })
	}
	return m, err
}

// TestLoadMethodChecks covers Method::init's checks one by one, including
// every union member decoded as a typed nil (tag set, table absent), which
// used to panic.
func TestLoadMethodChecks(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(ep *pte.ExecutionPlan)
		code   pte.Code // CodeOk: loads
		errSub string
		instr  int // Error.Instruction when it fails, -1 otherwise
	}{
		{"seed loads", nil, pte.CodeOk, "", -1},
		{"no non_const_buffer_sizes", func(ep *pte.ExecutionPlan) { ep.NonConstBufferSizes = nil }, CodeInvalidProgram, "non_const_buffer_sizes", -1},
		{"no inputs", func(ep *pte.ExecutionPlan) { ep.Inputs = nil }, CodeInvalidProgram, "inputs: field is missing", -1},
		{"no outputs", func(ep *pte.ExecutionPlan) { ep.Outputs = nil }, CodeInvalidProgram, "outputs: field is missing", -1},
		{"no values", func(ep *pte.ExecutionPlan) { ep.Values = nil }, CodeInvalidProgram, "values: field is missing", -1},
		{"nil value", func(ep *pte.ExecutionPlan) { ep.Values[2] = nil }, CodeInvalidProgram, "values[2]: value is missing", -1},
		{"value tag NONE", func(ep *pte.ExecutionPlan) { ep.Values[2].Val = nil }, CodeInvalidProgram, "values[2]: value has union tag NONE", -1},
		{"unknown value tag", func(ep *pte.ExecutionPlan) { ep.Values[0].Val = &pte.UnknownValue{Tag: 99} }, CodeInvalidProgram, "unknown KernelTypes union tag 99", -1},
		{"typed nil Tensor", func(ep *pte.ExecutionPlan) { ep.Values[0].Val = (*pte.Tensor)(nil) }, CodeInvalidProgram, "values[0]: Tensor has no table", -1},
		{"typed nil Int", func(ep *pte.ExecutionPlan) { ep.Values[2].Val = (*pte.Int)(nil) }, CodeInvalidProgram, "Int has no table", -1},
		{"typed nil unknown", func(ep *pte.ExecutionPlan) { ep.Values[2].Val = (*pte.UnknownValue)(nil) }, CodeInvalidProgram, "UnknownValue has no table", -1},
		{"typed nil Null is a None", func(ep *pte.ExecutionPlan) { ep.Values[5].Val = (*pte.Null)(nil) }, pte.CodeOk, "", -1},
		{"IntList out of range", func(ep *pte.ExecutionPlan) { ep.Values[6].Val = &pte.IntList{Items: []int64{9}} }, CodeInvalidProgram, "IntList item 0 is value 9", -1},
		{"IntList without items", func(ep *pte.ExecutionPlan) { ep.Values[6].Val = &pte.IntList{} }, CodeInvalidProgram, "IntList has no items", -1},
		{"TensorList refers forward", func(ep *pte.ExecutionPlan) { ep.Values[4].Val = &pte.TensorList{Items: []int32{8}} }, CodeInvalidProgram, "not an earlier value", -1},
		{"TensorList of a non-tensor", func(ep *pte.ExecutionPlan) { ep.Values[4].Val = &pte.TensorList{Items: []int32{2}} }, CodeInvalidProgram, "which is not a Tensor", -1},
		{"OptionalTensorList of an Int", func(ep *pte.ExecutionPlan) { ep.Values[7].Val = &pte.OptionalTensorList{Items: []int32{2}} }, CodeInvalidProgram, "which is not a Tensor", -1},
		{"tensor without dim_order", func(ep *pte.ExecutionPlan) { ep.Values[0].Val.(*pte.Tensor).DimOrder = nil }, CodeInvalidProgram, "tensor has no dim_order", -1},
		{"tensor storage offset", func(ep *pte.ExecutionPlan) { ep.Values[0].Val.(*pte.Tensor).StorageOffset = 4 }, CodeNotSupported, "storage_offset", -1},
		{"external constant", func(ep *pte.ExecutionPlan) {
			ep.Values[0].Val.(*pte.Tensor).ExtraTensorInfo = &pte.ExtraTensorInfo{FullyQualifiedName: "w", Location: 1}
		}, CodeInvalidState, `tensor "w" is an external constant`, -1},
		{"no delegates field", func(ep *pte.ExecutionPlan) { ep.Delegates = nil }, CodeInvalidProgram, "delegates: field is missing", -1},
		{"no compile specs field", func(ep *pte.ExecutionPlan) { ep.Delegates[0].CompileSpecs = nil }, CodeInvalidProgram, "delegates[0].compile_specs: field is missing", -1},
		{"no chains", func(ep *pte.ExecutionPlan) { ep.Chains = []*pte.Chain{} }, CodeInvalidProgram, "method has no chains", -1},
		{"chain without instructions", func(ep *pte.ExecutionPlan) { ep.Chains[0].Instructions = nil }, CodeInvalidProgram, "chains[0].instructions: field is missing", -1},
		{"instruction tag NONE", func(ep *pte.ExecutionPlan) { ep.Chains[0].Instructions[2].Args = nil }, CodeInvalidProgram, "chains[0].instructions[2]: instruction or its arguments are missing", 2},
		{"typed nil KernelCall", func(ep *pte.ExecutionPlan) { ep.Chains[0].Instructions[3].Args = (*pte.KernelCall)(nil) }, CodeInvalidProgram, "instructions[3]: instruction or its arguments are missing", 3},
		{"typed nil DelegateCall", func(ep *pte.ExecutionPlan) { ep.Chains[0].Instructions[0].Args = (*pte.DelegateCall)(nil) }, CodeInvalidProgram, "instructions[0]: instruction", 0},
		{"typed nil JumpFalseCall", func(ep *pte.ExecutionPlan) { ep.Chains[0].Instructions[1].Args = (*pte.JumpFalseCall)(nil) }, CodeInvalidProgram, "instructions[1]: instruction", 1},
		{"typed nil MoveCall", func(ep *pte.ExecutionPlan) { ep.Chains[0].Instructions[2].Args = (*pte.MoveCall)(nil) }, CodeInvalidProgram, "instructions[2]: instruction", 2},
		{"typed nil FreeCall", func(ep *pte.ExecutionPlan) { ep.Chains[0].Instructions[4].Args = (*pte.FreeCall)(nil) }, CodeInvalidProgram, "instructions[4]: instruction", 4},
		{"typed nil unknown instruction", func(ep *pte.ExecutionPlan) { ep.Chains[0].Instructions[4].Args = (*pte.UnknownInstruction)(nil) }, CodeInvalidProgram, "instructions[4]", 4},
		{"unknown instruction", func(ep *pte.ExecutionPlan) { ep.Chains[0].Instructions[4].Args = &pte.UnknownInstruction{Tag: 42} }, CodeInvalidProgram, "unknown instruction type 42", 4},
		{"kernel args missing", func(ep *pte.ExecutionPlan) { ep.Chains[0].Instructions[3].Args.(*pte.KernelCall).Args = nil }, CodeInvalidProgram, "KernelCall args missing", 3},
		{"kernel arg out of range", func(ep *pte.ExecutionPlan) { ep.Chains[0].Instructions[3].Args.(*pte.KernelCall).Args[1] = 99 }, CodeInvalidProgram, "args[1] = 99 is not a value index", 3},
		{"operator index out of range", func(ep *pte.ExecutionPlan) { ep.Chains[0].Instructions[3].Args.(*pte.KernelCall).OpIndex = 5 }, CodeInvalidProgram, "operator index 5 out of range", 3},
		{"delegate arg out of range", func(ep *pte.ExecutionPlan) { ep.Chains[0].Instructions[0].Args.(*pte.DelegateCall).Args[0] = -1 }, CodeInvalidProgram, "args[0] = -1", 0},
		{"move out of range", func(ep *pte.ExecutionPlan) { ep.Chains[0].Instructions[2].Args.(*pte.MoveCall).MoveTo = 9 }, CodeInvalidProgram, "move_to[0] = 9", 2},
		{"free out of range", func(ep *pte.ExecutionPlan) { ep.Chains[0].Instructions[4].Args.(*pte.FreeCall).ValueIndex = 9 }, CodeInvalidProgram, "value_index[0] = 9", 4},
		{"jump condition out of range", func(ep *pte.ExecutionPlan) { ep.Chains[0].Instructions[1].Args.(*pte.JumpFalseCall).CondValueIndex = 9 }, CodeInvalidProgram, "cond_value_index[0] = 9", 1},
		// As upstream, these are checked only when the method executes.
		{"delegate index out of range loads", func(ep *pte.ExecutionPlan) { ep.Chains[0].Instructions[0].Args.(*pte.DelegateCall).DelegateIndex = 7 }, pte.CodeOk, "", -1},
		{"input index out of range loads", func(ep *pte.ExecutionPlan) { ep.Inputs[0] = 1000 }, pte.CodeOk, "", -1},
		{"jump outside the chain loads", func(ep *pte.ExecutionPlan) {
			ep.Chains[0].Instructions[1].Args.(*pte.JumpFalseCall).DestinationInstruction = 99
		}, pte.CodeOk, "", -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := loadSeed(t, tc.mutate)
			if tc.code == pte.CodeOk {
				if err != nil || m == nil {
					t.Fatalf("LoadMethod: %v", err)
				}
				return
			}
			var re *Error
			if !errors.As(err, &re) || re.Code != tc.code || !strings.Contains(err.Error(), tc.errSub) {
				t.Fatalf("error = %v; want %v containing %q", err, tc.code, tc.errSub)
			}
			if m != nil || re.Method != "forward" || re.Instruction != tc.instr {
				t.Errorf("method %v, error location %q instruction %d", m, re.Method, re.Instruction)
			}
		})
	}
}

// TestLoadMethodDestroysOnChainFailure checks that a chain error found
// after the delegates were initialized destroys their handles.
func TestLoadMethodDestroysOnChainFailure(t *testing.T) {
	f := openBytes(t, writeProgram(t, seedProgram(t, seedMetadata()), seedMetadata()))
	f.Program.Plan(0).Chains[0].Instructions[2].Args = (*pte.MoveCall)(nil)
	cb := &countingBackend{Backend: acceptingBackend{}}
	reg := &Registry{}
	reg.RegisterBackend(TensorRTBackendID, cb)
	prog, err := Load(f, Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prog.LoadMethod("forward", nil); CodeOf(err) != CodeInvalidProgram {
		t.Fatalf("error = %v", err)
	}
	if cb.inits.Load() != 1 || cb.destroys.Load() != 1 {
		t.Errorf("inits %d destroys %d", cb.inits.Load(), cb.destroys.Load())
	}
}

// TestTypedNilFromFile decodes a program whose FreeCall instruction has its
// union tag set while its table is absent (a file, not a model, can say
// that), which used to panic pteinspect --plan. The file is seedProgram
// with that instruction patched: its vtable is replaced by one that lists
// only the tag field.
func TestTypedNilFromFile(t *testing.T) {
	const marker = 0x1eadbeef // FreeCall value index, to find its table
	p := seedProgram(t, seedMetadata())
	p.Plan(0).Chains[0].Instructions[4].Args = &pte.FreeCall{ValueIndex: marker}
	data := writeProgram(t, p, seedMetadata())
	le := binary.LittleEndian
	u16 := func(at int) int { return int(le.Uint16(data[at:])) }
	vtable := func(table int) int { return table - int(int32(le.Uint32(data[table:]))) }
	inRange := func(at, n int) bool { return at >= 0 && at+n <= len(data) }

	m := bytes.Index(data, le.AppendUint32(nil, marker))
	require.GreaterOrEqual(t, m, 0, "marker not found")
	require.Equal(t, -1, bytes.Index(data[m+1:], le.AppendUint32(nil, marker)), "marker found twice")
	freeCall, instr := -1, -1
	for table := m - 4; table >= m-16 && freeCall < 0; table -= 4 {
		if vt := vtable(table); inRange(vt, 6) && u16(vt+4) == m-table {
			freeCall = table
		}
	}
	require.GreaterOrEqual(t, freeCall, 0, "FreeCall table not found")
	// The Instruction's instr_args field is the uoffset that lands on the
	// FreeCall table; its table starts a few bytes before that field.
	for field := freeCall - 4; field >= 0 && instr < 0; field -= 4 {
		if int(le.Uint32(data[field:])) != freeCall-field {
			continue
		}
		for k := 4; k <= 16 && instr < 0; k += 2 {
			table := field - k
			if !inRange(table, 4) {
				continue
			}
			vt := vtable(table)
			if inRange(vt, 8) && u16(vt) >= 8 && u16(vt+6) == k && inRange(table+u16(vt+4), 1) &&
				pte.InstructionArguments(data[table+u16(vt+4)]) == pte.InstructionArgumentsFreeCall {
				instr = table
			}
		}
	}
	require.GreaterOrEqual(t, instr, 0, "Instruction table not found")
	// The FreeCall table's 8 bytes become the Instruction's own vtable:
	// size 6 (the tag field only), the same table size and tag offset.
	vt := vtable(instr)
	tableSize, tagOff := u16(vt+2), u16(vt+4)
	le.PutUint16(data[freeCall:], 6)
	le.PutUint16(data[freeCall+2:], uint16(tableSize))
	le.PutUint16(data[freeCall+4:], uint16(tagOff))
	le.PutUint32(data[instr:], uint32(int32(instr-freeCall)))

	f := openBytes(t, data)
	args := f.Program.Plan(0).Chains[0].Instructions[4].Args
	require.IsType(t, (*pte.FreeCall)(nil), args)
	require.Nil(t, args.(*pte.FreeCall), "the decoded FreeCall is not a typed nil")
	pp, err := PlanProgram(f, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, mp := range pp.Methods {
		if !mp.OK {
			failed++
			if mp.Error.Kind != "invalid_program" || !strings.Contains(mp.Error.Message, "instruction or its arguments are missing") {
				t.Errorf("%s: %+v", mp.Name, mp.Error)
			}
		}
	}
	if failed == 0 {
		t.Errorf("no method failed: %+v", pp.Methods)
	}
}

// TestLoadDefersExecutionChecks: what upstream checks only when the
// method runs (a DelegateCall's delegate index, the method's input and
// output indices, a FreeCall of a non-tensor) does not fail the load.
func TestLoadDefersExecutionChecks(t *testing.T) {
	for name, mutate := range map[string]func(ep *pte.ExecutionPlan){
		"delegate index": func(ep *pte.ExecutionPlan) { ep.Chains[0].Instructions[0].Args.(*pte.DelegateCall).DelegateIndex = 7 },
		"input index":    func(ep *pte.ExecutionPlan) { ep.Inputs[1] = 1000 },
		"output index":   func(ep *pte.ExecutionPlan) { ep.Outputs[0] = -3 },
		"free non-tensor": func(ep *pte.ExecutionPlan) {
			ep.Chains[0].Instructions[4].Args.(*pte.FreeCall).ValueIndex = 2
		},
	} {
		if _, err := loadSeed(t, mutate); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
