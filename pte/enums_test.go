package pte

import (
	"testing"

	"github.com/ptekit/ptekit/internal/fbs/program"
)

// sameNames checks that pte's enum type E names exactly the values the
// generated code names, with the same wire values and names.
func sameNames[G ~int8 | ~uint8, E interface {
	~int8 | ~uint8
	Known() bool
	String() string
}](t *testing.T, gen map[G]string, own map[E]string) {
	t.Helper()
	if len(gen) != len(own) {
		t.Errorf("%T: %d names, the schema has %d", E(0), len(own), len(gen))
	}
	for v, name := range gen {
		e := E(v)
		if !e.Known() || e.String() != name {
			t.Errorf("%T(%d) = %q (known %v), the schema says %q", e, v, e.String(), e.Known(), name)
		}
	}
	for v := range 256 {
		e := E(v)
		if _, ok := gen[G(e)]; !ok && e.Known() {
			t.Errorf("%T(%d) is known but the schema does not name it", e, e)
		}
	}
}

// TestEnumsMatchSchema keeps pte's enum types in step with schema/program.fbs.
func TestEnumsMatchSchema(t *testing.T) {
	sameNames(t, program.EnumNamesScalarType, namesScalarType)
	sameNames(t, program.EnumNamesTensorShapeDynamism, namesTensorShapeDynamism)
	sameNames(t, program.EnumNamesTensorDataLocation, namesTensorDataLocation)
	sameNames(t, program.EnumNamesDeviceType, namesDeviceType)
	sameNames(t, program.EnumNamesKernelTypes, namesKernelTypes)
	sameNames(t, program.EnumNamesInstructionArguments, namesInstructionArguments)
	sameNames(t, program.EnumNamesDataLocation, namesDataLocation)
}

// TestEnumStringUnknown: a value the schema does not name prints as Type(n),
// as the generated code's String did.
func TestEnumStringUnknown(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{ScalarType(99).String(), program.ScalarType(99).String()},
		{ScalarType(-1).String(), program.ScalarType(-1).String()},
		{KernelTypes(200).String(), program.KernelTypes(200).String()},
		{DataLocation(7).String(), program.DataLocation(7).String()},
	} {
		if c.got != c.want {
			t.Errorf("String() = %q, want %q", c.got, c.want)
		}
	}
	if ScalarType(99).Known() || !ScalarTypeFLOAT.Known() {
		t.Error("Known is wrong for ScalarType 99 or FLOAT")
	}
}
