package pte

import (
	"math"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/ptekit/ptekit/internal/fbs/program"
)

// -0.0 compares equal to the schema default 0, so a writer that omits
// defaults by comparison loses its sign (found by FuzzRoundTrip).
func TestEncodeKeepsNegativeZeroDouble(t *testing.T) {
	p := sampleProgram()
	const idx = 5
	if _, ok := p.Plan(0).Values[idx].Val.(*Double); !ok {
		t.Fatalf("sampleProgram value %d is not a Double", idx)
	}
	for _, x := range []float64{math.Copysign(0, -1), 0, 0.5} {
		p.Plan(0).Values[idx] = &EValue{Val: &Double{DoubleVal: x}}
		buf, err := encodeProgram(p, identityRefs(p), 0)
		if err != nil {
			t.Fatal(err)
		}
		root := program.GetRootAsProgram(buf, 0)
		var ep program.ExecutionPlan
		root.ExecutionPlan(&ep, 0)
		var ev program.EValue
		ep.Values(&ev, idx)
		var u flatbuffers.Table
		if !ev.Val(&u) {
			t.Fatalf("%v: value has no table", x)
		}
		var tab program.Double
		tab.Init(u.Bytes, u.Pos)
		got := tab.DoubleVal()
		if got != x || math.Signbit(got) != math.Signbit(x) {
			t.Errorf("wrote %v, read back %v", x, got)
		}
	}
}
