package executor

import (
	"cmp"
	"fmt"
	"reflect"
	"strings"

	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// maxTensorRank is ExecuTorch's kTensorDimensionLimit.
const maxTensorRank = 16

// The checks in this file are the ones ExecuTorch makes when a method is
// loaded (Program::method_meta, then Method::init), in the same order and
// with the same error classes, so that LoadMethod fails exactly where the
// deployed runtime does. Every pointer of the decoded model is guarded: a
// union whose tag is set but whose table is absent decodes as a typed nil
// (for instance a (*pte.FreeCall)(nil) in Instruction.Args).

// methodError returns an InvalidProgram *Error for method at path.
func methodError(method string, code pte.Code, path, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	return &Error{Code: code, Method: method, Delegate: -1, Instruction: -1, Msg: msg}
}

// checkMeta models Program::method_meta, which a caller needs before
// Method::init to size the planned memory: the method's
// non_const_buffer_sizes, inputs and outputs must be present.
func checkMeta(method string, ep *pte.ExecutionPlan) *Error {
	switch {
	case ep.NonConstBufferSizes == nil:
		return methodError(method, CodeInvalidProgram, "non_const_buffer_sizes", "field is missing (method_meta)")
	case ep.Inputs == nil:
		return methodError(method, CodeInvalidProgram, "inputs", "field is missing (method_meta)")
	case ep.Outputs == nil:
		return methodError(method, CodeInvalidProgram, "outputs", "field is missing (method_meta)")
	}
	return nil
}

// checkValues models Method::parse_values: the values table is present,
// every entry has a known union tag and its table, lists refer to values
// that exist, and tensors have what tensor_parser requires. Tensor data
// (constant buffers, planned arenas) is not resolved here: this runtime
// does not plan memory.
func checkValues(method string, ep *pte.ExecutionPlan, data *ptd.MethodResult) *Error {
	if ep.Values == nil {
		return methodError(method, CodeInvalidProgram, "values", "field is missing")
	}
	if err := checkValuesPresent(method, ep); err != nil {
		return err
	}
	// Second pass (parse_external_constants): constants stored outside the
	// program are looked up in the data map (ptd.Resolve decided how).
	if st := data.Constants; !st.OK() {
		return dataMethodError(method, constantPath(data), st)
	}
	planned := map[int]ptd.Status{} // value index -> memory-planned EXTERNAL tensor
	for _, row := range data.Tensors {
		if row.Planned {
			planned[row.Value] = row.Status
		}
	}
	for i, ev := range ep.Values {
		if err := checkValue(method, ep, i, ev, planned); err != nil {
			return err
		}
	}
	return nil
}

// checkValuesPresent is the first pass (get_num_external_constants): every
// entry is present and has its table, unless it is a Null.
func checkValuesPresent(method string, ep *pte.ExecutionPlan) *Error {
	for i, ev := range ep.Values {
		path := fmt.Sprintf("values[%d]", i)
		switch {
		case ev == nil:
			return methodError(method, CodeInvalidProgram, path, "value is missing")
		case ev.Val == nil:
			return methodError(method, CodeInvalidProgram, path, "value has union tag NONE")
		}
		if _, null := ev.Val.(*pte.Null); !null && isNil(ev.Val) {
			return methodError(method, CodeInvalidProgram, path, "%s has no table (union tag set, table absent)", valueTypeName(ev.Val))
		}
	}
	return nil
}

// checkValue parses value i as the method loader does: list items in
// range, tensors valid, and a memory-planned EXTERNAL tensor's data found
// (planned holds their status by value index).
func checkValue(method string, ep *pte.ExecutionPlan, i int, ev *pte.EValue, planned map[int]ptd.Status) *Error {
	n := len(ep.Values)
	path := fmt.Sprintf("values[%d]", i)
	bad := func(format string, args ...any) *Error {
		return methodError(method, CodeInvalidProgram, path, format, args...)
	}
	switch x := ev.Val.(type) {
	case *pte.Null, *pte.Int, *pte.Bool, *pte.Double, *pte.String:
	case *pte.UnknownValue:
		return bad("unknown KernelTypes union tag %d", uint8(x.Tag))
	case *pte.IntList:
		if x.Items == nil {
			return bad("IntList has no items")
		}
		for j, it := range x.Items {
			if it < 0 || it >= int64(n) {
				return bad("IntList item %d is value %d, out of range (%d values)", j, it, n)
			}
		}
	case *pte.BoolList:
		if x.Items == nil {
			return bad("BoolList has no items")
		}
	case *pte.DoubleList:
		if x.Items == nil {
			return bad("DoubleList has no items")
		}
	case *pte.Tensor:
		if code, err := checkTensor(x); err != "" {
			return methodError(method, code, path, "%s", err)
		}
		// The tensor parser then copies a memory-planned EXTERNAL
		// tensor's bytes from the data map.
		if st, ok := planned[i]; ok && !st.OK() {
			return dataMethodError(method, path, st)
		}
	case *pte.TensorList:
		if x.Items == nil {
			return bad("TensorList has no items")
		}
		if err := checkTensorItems(ep, i, x.Items, false); err != "" {
			return bad("TensorList %s", err)
		}
	case *pte.OptionalTensorList:
		if x.Items == nil {
			return bad("OptionalTensorList has no items")
		}
		if err := checkTensorItems(ep, i, x.Items, true); err != "" {
			return bad("OptionalTensorList %s", err)
		}
	default:
		return bad("unknown value type %T", x)
	}
	return nil
}

// dataMethodError is a method load error decided by external data.
func dataMethodError(method, path string, st ptd.Status) *Error {
	msg := st.String()
	if st.Err != nil {
		msg = strings.TrimPrefix(st.Err.Error(), "ptd: ")
	}
	if st.Undefined {
		msg += " (ExecuTorch has no check for this and crashes)"
	}
	// The ptd error's text is the message (Err would repeat it).
	return methodError(method, st.Code, path, "%s", msg)
}

// constantPath names the value of the first external constant whose
// status is not Ok, "" when the failure is not about one.
func constantPath(data *ptd.MethodResult) string {
	for _, row := range data.Tensors {
		if !row.Planned && !row.Status.OK() && row.Status.Code == data.Constants.Code {
			return fmt.Sprintf("values[%d]", row.Value)
		}
	}
	return ""
}

// valueTypeName names the Go type of v as the schema does ("Tensor").
func valueTypeName(v pte.Value) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", v), "*pte.")
}

// isNil reports whether v, a decoded union member (pte.Value or
// pte.InstructionArgs), is nil or a typed nil pointer.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// checkTensor applies tensor_parser's structural checks; it returns "" when
// the tensor passes, else the error class and message.
func checkTensor(t *pte.Tensor) (pte.Code, string) {
	switch {
	case t.StorageOffset != 0:
		return CodeNotSupported, fmt.Sprintf("tensor storage_offset %d is not supported", t.StorageOffset)
	case t.ShapeDynamism == pte.TensorShapeDynamismDYNAMIC_UNBOUND:
		return CodeNotSupported, "DYNAMIC_UNBOUND tensors are not supported"
	case t.Sizes == nil:
		return CodeInvalidProgram, "tensor has no sizes"
	case len(t.Sizes) > maxTensorRank:
		return CodeInvalidProgram, fmt.Sprintf("tensor rank %d exceeds %d", len(t.Sizes), maxTensorRank)
	case t.DimOrder == nil:
		return CodeInvalidProgram, "tensor has no dim_order"
	case len(t.DimOrder) != len(t.Sizes):
		return CodeInvalidProgram, fmt.Sprintf("tensor dim_order has %d entries for rank %d", len(t.DimOrder), len(t.Sizes))
	}
	for d, s := range t.Sizes {
		if s < 0 {
			return CodeInvalidProgram, fmt.Sprintf("tensor sizes[%d] is negative (%d)", d, s)
		}
	}
	for d, o := range t.DimOrder {
		if int(o) >= len(t.Sizes) {
			return CodeInvalidProgram, fmt.Sprintf("tensor dim_order[%d] = %d is not a dimension (rank %d)", d, o, len(t.Sizes))
		}
	}
	return pte.CodeOk, ""
}

// checkTensorItems checks the items of a tensor list at values[self]: each
// must be an earlier Tensor value (the runtime reads them while parsing the
// list), or -1 (None) in an optional list.
func checkTensorItems(ep *pte.ExecutionPlan, self int, items []int32, optional bool) string {
	for j, it := range items {
		if optional && it == -1 {
			continue
		}
		if it < 0 || int(it) >= self {
			return fmt.Sprintf("item %d is value %d, which is not an earlier value (list is value %d)", j, it, self)
		}
		ev := ep.Values[it]
		if t, ok := ev.Val.(*pte.Tensor); !ok || t == nil {
			return fmt.Sprintf("item %d is value %d, which is not a Tensor", j, it)
		}
	}
	return ""
}

// checkDelegateEntry checks what Method::init reads of a delegate before
// handing it to its backend. The payload reference is checked by
// pte.File.DelegateData.
func checkDelegateEntry(method string, di int, d *pte.BackendDelegate) *Error {
	path := fmt.Sprintf("delegates[%d]", di)
	if d == nil {
		return methodError(method, CodeInvalidProgram, path, "delegate is missing")
	}
	if d.CompileSpecs == nil {
		return methodError(method, CodeInvalidProgram, path+".compile_specs", "field is missing")
	}
	for j, s := range d.CompileSpecs {
		if s == nil {
			return methodError(method, CodeInvalidProgram, fmt.Sprintf("%s.compile_specs[%d]", path, j), "compile spec is missing")
		}
		if s.Value == nil {
			return methodError(method, CodeInvalidProgram, fmt.Sprintf("%s.compile_specs[%d].value", path, j), "field is missing")
		}
	}
	return nil
}

// checkChains models the chain part of Method::init: there is at least one
// chain, every instruction has a known type and its table, and the value
// indices each type uses are in range. As upstream, a DelegateCall's
// delegate_index and a JumpFalseCall's destination are not checked here:
// the first fails when it executes (Internal), the second ends the chain.
// An out-of-range operator index is reported after every other instruction
// has been checked, as upstream delays it.
func checkChains(method string, ep *pte.ExecutionPlan) *Error {
	if len(ep.Chains) == 0 {
		return methodError(method, CodeInvalidProgram, "chains", "method has no chains")
	}
	nv := len(ep.Values)
	var delayed *Error
	for ci, ch := range ep.Chains {
		cpath := fmt.Sprintf("chains[%d]", ci)
		if ch == nil {
			return methodError(method, CodeInvalidProgram, cpath, "chain is missing")
		}
		if ch.Instructions == nil {
			return methodError(method, CodeInvalidProgram, cpath+".instructions", "field is missing")
		}
		for ii, ins := range ch.Instructions {
			path := fmt.Sprintf("%s.instructions[%d]", cpath, ii)
			bad := func(format string, args ...any) *Error {
				e := methodError(method, CodeInvalidProgram, path, format, args...)
				e.Instruction = ii
				return e
			}
			values := func(what string, idx ...int32) *Error {
				for j, v := range idx {
					if v < 0 || int(v) >= nv {
						return bad("%s[%d] = %d is not a value index (%d values)", what, j, v, nv)
					}
				}
				return nil
			}
			if ins == nil || isNil(ins.Args) {
				return bad("instruction or its arguments are missing")
			}
			var err *Error
			switch a := ins.Args.(type) {
			case *pte.KernelCall:
				if a.Args == nil {
					return bad("KernelCall args missing")
				}
				err = values("args", a.Args...)
				switch {
				case err != nil:
				case a.OpIndex < 0 || int(a.OpIndex) >= len(ep.Operators):
					delayed = bad("operator index %d out of range (%d operators)", a.OpIndex, len(ep.Operators))
				case ep.Operators[a.OpIndex] == nil:
					delayed = bad("operators[%d] is missing", a.OpIndex)
				}
			case *pte.DelegateCall:
				if a.Args == nil {
					return bad("DelegateCall args missing")
				}
				err = values("args", a.Args...)
			case *pte.JumpFalseCall:
				err = values("cond_value_index", a.CondValueIndex)
			case *pte.MoveCall:
				err = cmp.Or(values("move_from", a.MoveFrom), values("move_to", a.MoveTo))
			case *pte.FreeCall:
				err = values("value_index", a.ValueIndex)
			case *pte.UnknownInstruction:
				return bad("unknown instruction type %d", uint8(a.Tag))
			default:
				return bad("unknown instruction type %T", a)
			}
			if err != nil {
				return err
			}
		}
	}
	return delayed
}
