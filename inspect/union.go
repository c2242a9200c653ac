package inspect

import (
	"reflect"

	"github.com/ptekit/ptekit/pte"
)

// A damaged file can set a union tag and leave the member table out (its
// offset is 0). Package pte keeps that apart from a NONE tag: the union
// field then holds a nil pointer of the member's type, e.g.
// (*pte.Double)(nil), rather than a nil interface. The JSON form writes
// such a member as its tag with a null table, so that the damage shows and
// nothing dereferences the missing table.

// isNil reports whether a union member is absent: a nil interface or a nil
// pointer of a member type.
func isNil(member any) bool {
	if member == nil {
		return true
	}
	v := reflect.ValueOf(member)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// nilEValue is the JSON form of an EValue whose member is absent: the NONE
// tag, or the stored tag with a null val.
func nilEValue(member pte.Value) *EValue {
	switch x := member.(type) {
	case nil:
		return &EValue{ValType: Enum{Name: "NONE"}}
	case *pte.UnknownValue:
		// A nil *UnknownValue has lost its tag: NONE is all that is known.
		return &EValue{ValType: Enum{Name: "NONE"}}
	default:
		tag := x.KernelType() // the member types' methods do not read their receiver
		return &EValue{ValType: enum(tag, int64(tag))}
	}
}

// nilInstruction is the JSON form of an Instruction whose member is absent:
// the NONE tag, or the stored tag with null instr_args.
func nilInstruction(member pte.InstructionArgs) *Instruction {
	switch x := member.(type) {
	case nil, *pte.UnknownInstruction:
		return &Instruction{InstrArgsType: Enum{Name: "NONE"}}
	default:
		tag := x.InstructionType()
		return &Instruction{InstrArgsType: enum(tag, int64(tag))}
	}
}
