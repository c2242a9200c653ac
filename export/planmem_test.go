package export

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// planMemoryRef is the planner planMemory replaced, kept as the reference
// its placements must equal: for each tensor in value order, it scans
// every placed tensor still alive, by offset, for the lowest aligned gap.
// It is quadratic when many tensors stay alive (a method of many
// outputs). It returns the live tensors it visited.
func planMemoryRef(md *methodDef) (int, error) {
	steps := 0
	var live []*tensorDef // placed tensors still alive, by offset
	inOrder := slices.IsSortedFunc(md.tensors, func(a, b *tensorDef) int { return a.produced - b.produced })
	for _, t := range md.tensors {
		start := t.produced
		var busy []*tensorDef
		kept := live[:0]
		for _, p := range live {
			steps++
			if inOrder && p.lastUse < start {
				continue
			}
			kept = append(kept, p)
			if p.produced <= t.lastUse && start <= p.lastUse {
				busy = append(busy, p)
			}
		}
		live = kept
		off := int64(0)
		for _, p := range busy {
			if t.nbytes == 0 || off+t.nbytes <= p.offset {
				break
			}
			if p.nbytes == 0 || p.offset+p.nbytes <= off {
				continue
			}
			end, err := alignUp(p.offset + p.nbytes)
			if err != nil {
				return steps, newError(md.m.Name, t.name, "planned memory overflows", err)
			}
			off = end
		}
		t.offset = off
		if off > math.MaxInt64-t.nbytes {
			return steps, newError(md.m.Name, t.name, "planned memory overflows int64", nil)
		}
		if e := off + t.nbytes; e > md.arena {
			md.arena = e
		}
		i := sort.Search(len(live), func(i int) bool { return live[i].offset > t.offset })
		live = slices.Insert(live, i, t)
	}
	a, err := alignUp(md.arena)
	if err != nil {
		return steps, newError(md.m.Name, "", "planned memory overflows", err)
	}
	md.arena = a
	return steps, nil
}

// clonePlan returns a copy of md's tensors and arena, for a second planner.
func clonePlan(md *methodDef) *methodDef {
	c := &methodDef{m: md.m, arena: md.arena}
	for _, t := range md.tensors {
		tc := *t
		c.tensors = append(c.tensors, &tc)
	}
	return c
}

// checkPlanAgainstRef plans md with planMemory and the reference and
// requires the same outcome: both fail, or the same offsets and arena.
func checkPlanAgainstRef(t *testing.T, md *methodDef) {
	t.Helper()
	ref := clonePlan(md)
	_, refErr := planMemoryRef(ref)
	err := planMemory(md)
	if refErr != nil || err != nil {
		require.Error(t, err, "the reference failed: %v", refErr)
		require.Error(t, refErr, "planMemory failed: %v", err)
		return
	}
	require.Equal(t, ref.arena, md.arena, "arena")
	for i, tt := range md.tensors {
		require.Equal(t, ref.tensors[i].offset, tt.offset, "tensor %d (%s, %d bytes, live %d..%d)", i, tt.name, tt.nbytes, tt.produced, tt.lastUse)
	}
}

// planShapes builds a program of n engines of each shape a manifest
// commonly has; rng varies the tensor sizes.
var planShapes = map[string]func(n int, rng *rand.Rand) *Program{
	// One method calling the engines in turn.
	"chain": func(n int, rng *rand.Rand) *Program {
		m := &Method{Name: "forward", Inputs: []*Tensor{randTensor(rng, "t0")}}
		for i := range n {
			m.Calls = append(m.Calls, planCall(rng, []string{fmt.Sprintf("t%d", i)}, fmt.Sprintf("t%d", i+1)))
		}
		m.Outputs = []*Tensor{{Name: fmt.Sprintf("t%d", n)}}
		return &Program{Methods: []*Method{m}}
	},
	// Every engine reads the method input; the last one's output is the
	// method's.
	"fanout": func(n int, rng *rand.Rand) *Program {
		m := &Method{Name: "forward", Inputs: []*Tensor{randTensor(rng, "x")}}
		for i := range n {
			m.Calls = append(m.Calls, planCall(rng, []string{"x"}, fmt.Sprintf("h%d", i)))
		}
		m.Outputs = []*Tensor{{Name: fmt.Sprintf("h%d", n-1)}}
		return &Program{Methods: []*Method{m}}
	},
	// Every engine reads the method input and produces a method output.
	"outputs": func(n int, rng *rand.Rand) *Program {
		m := &Method{Name: "forward", Inputs: []*Tensor{randTensor(rng, "x")}}
		for i := range n {
			out := fmt.Sprintf("y%d", i)
			m.Calls = append(m.Calls, planCall(rng, []string{"x"}, out))
			m.Outputs = append(m.Outputs, &Tensor{Name: out})
		}
		return &Program{Methods: []*Method{m}}
	},
	// One method per engine.
	"methods": func(n int, rng *rand.Rand) *Program {
		p := &Program{}
		for i := range n {
			p.Methods = append(p.Methods, &Method{Name: fmt.Sprintf("m%d", i), Inputs: []*Tensor{randTensor(rng, "x")},
				Calls: []*EngineCall{planCall(rng, []string{"x"}, "y")}, Outputs: []*Tensor{{Name: "y"}}})
		}
		return p
	},
	// Every engine reads one to three earlier tensors at random and
	// produces one or two; some intermediates are method outputs too.
	"dag": func(n int, rng *rand.Rand) *Program {
		m := &Method{Name: "forward", Inputs: []*Tensor{randTensor(rng, "x0"), randTensor(rng, "x1")}}
		names := []string{"x0", "x1"}
		for i := range n {
			var ins []string
			for range 1 + rng.IntN(3) {
				if in := names[rng.IntN(len(names))]; !slices.Contains(ins, in) {
					ins = append(ins, in)
				}
			}
			c := planCall(rng, ins, fmt.Sprintf("a%d", i))
			if rng.IntN(2) == 0 {
				c.Outputs = append(c.Outputs, &Binding{Name: "z", Tensor: fmt.Sprintf("b%d", i), DType: Float32, Shape: []int64{int64(rng.IntN(9))}})
			}
			for _, o := range c.Outputs {
				names = append(names, o.Tensor)
				if rng.IntN(4) == 0 {
					m.Outputs = append(m.Outputs, &Tensor{Name: o.Tensor})
				}
			}
			m.Calls = append(m.Calls, c)
		}
		if last := names[len(names)-1]; !slices.ContainsFunc(m.Outputs, func(o *Tensor) bool { return o.Name == last }) {
			m.Outputs = append(m.Outputs, &Tensor{Name: last})
		}
		return &Program{Methods: []*Method{m}}
	},
}

func init() {
	// Many methods sharing engines: method i calls engines i and i+1 (of
	// n), so that each engine serves two methods.
	planShapes["shared"] = func(n int, rng *rand.Rand) *Program {
		engines := make([]Source, n)
		for i := range engines {
			engines[i] = EngineReader(strings.NewReader(fmt.Sprintf("engine%d", i)), int64(len(fmt.Sprintf("engine%d", i))))
		}
		p := &Program{}
		for i := range n {
			a, b := planCall(rng, []string{"x"}, "h"), planCall(rng, []string{"h"}, "y")
			a.Engine, b.Engine = engines[i], engines[(i+1)%n]
			p.Methods = append(p.Methods, &Method{Name: fmt.Sprintf("m%d", i), Inputs: []*Tensor{randTensor(rng, "x")},
				Calls: []*EngineCall{a, b}, Outputs: []*Tensor{{Name: "y"}}})
		}
		return p
	}
}

// randTensor is a method input of a random dtype and shape (some empty).
func randTensor(rng *rand.Rand, name string) *Tensor {
	dts := []DType{Float32, Float16, Int8, Bool, Int64}
	return &Tensor{Name: name, DType: dts[rng.IntN(len(dts))], Shape: []int64{int64(rng.IntN(5)), int64(1 + rng.IntN(40))}}
}

// planCall is an engine call reading ins and producing out, of a random
// dtype and shape.
func planCall(rng *rand.Rand, ins []string, out string) *EngineCall {
	o := randTensor(rng, out)
	c := &EngineCall{Engine: EngineReader(strings.NewReader("engine"), 6),
		Outputs: []*Binding{{Name: "y", Tensor: out, DType: o.DType, Shape: o.Shape}}}
	for i, in := range ins {
		c.Inputs = append(c.Inputs, &Binding{Name: fmt.Sprintf("x%d", i), Tensor: in})
	}
	return c
}

// TestPlanMemoryShapes: on every manifest shape, at sizes where the
// reference runs too, planMemory places every tensor where the planner
// it replaced did.
func TestPlanMemoryShapes(t *testing.T) {
	for name, build := range planShapes {
		for _, n := range []int{1, 2, 3, 7, 64, 300} {
			for seed := range uint64(4) {
				mds, err := resolve(build(n, rand.New(rand.NewPCG(seed, uint64(n)))), nil)
				require.NoError(t, err, "%s %d", name, n)
				for _, md := range mds {
					t.Run(fmt.Sprintf("%s/%d/%d/%s", name, n, seed, md.m.Name), func(t *testing.T) { checkPlanAgainstRef(t, md) })
				}
			}
		}
	}
}

// fuzzPlan builds a method's tensors from data: for each tensor, a
// production step (non-decreasing), a lifetime and a size, sizes drawn
// from small, aligned, unaligned and overflowing ones.
func fuzzPlan(data []byte) *methodDef {
	md := &methodDef{m: &Method{Name: "fuzz"}}
	sizes := []int64{0, 1, 2, 15, 16, 17, 24, 32, 48, 100, 4096, math.MaxInt64 / 2, math.MaxInt64 - 20, math.MaxInt64}
	produced := -1
	for i := 0; i+3 <= len(data) && len(md.tensors) < 400; i += 3 {
		b0, b1, b2 := data[i], data[i+1], data[i+2]
		produced += int(b0 & 1) // advance one call in two, on average
		life := int(b0 >> 2)
		if b0&2 != 0 {
			life = 1 << 20 // alive to the end: an output
		}
		var n int64
		switch {
		case b1 < 0xf0:
			n = int64(binary.LittleEndian.Uint16([]byte{b1, b2})) % 300
		default:
			n = sizes[int(b2)%len(sizes)]
		}
		md.tensors = append(md.tensors, &tensorDef{name: fmt.Sprintf("t%d", len(md.tensors)), nbytes: n,
			produced: produced, lastUse: produced + life, value: int32(len(md.tensors))})
	}
	return md
}

// FuzzPlanMemory: for tensors of any lifetimes, sizes and (non-decreasing)
// production steps, planMemory places them where the reference does, or
// both fail.
func FuzzPlanMemory(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{3, 30, 300, 1200} {
		seed := make([]byte, n)
		for i := range seed {
			seed[i] = byte(rng.Uint32())
		}
		f.Add(seed)
	}
	f.Add([]byte{0xfe, 0xff, 12, 0xfe, 0xff, 13, 0x02, 5, 0}) // two tensors of near MaxInt64
	f.Fuzz(func(t *testing.T, data []byte) {
		checkPlanAgainstRef(t, fuzzPlan(data))
	})
}

// TestPlanMemoryWork: methods of 10,000 engines (one of 10,000 outputs,
// all alive together) are planned in at most 4 n log2 n steps, where
// scanning the live tensors for each placement, as the reference does,
// takes n²/2: the test checks that the reference passes the bound already
// on 2,000 outputs, so that it fails if the planner scans again.
func TestPlanMemoryWork(t *testing.T) {
	bound := func(n int) int { return 4 * n * bits.Len(uint(n)) }
	for name, build := range planShapes {
		if name == "methods" || name == "shared" {
			continue // one small method each
		}
		t.Run(name, func(t *testing.T) {
			mds, err := resolve(build(10000, rand.New(rand.NewPCG(7, 7))), nil)
			require.NoError(t, err)
			md := mds[0]
			var a planArena
			require.NoError(t, a.plan(md))
			nt := len(md.tensors)
			require.LessOrEqual(t, a.steps, bound(nt), "planner steps for %d tensors", nt)
			t.Logf("%s: %d tensors, %d steps", name, nt, a.steps)
		})
	}
	mds, err := resolve(planShapes["outputs"](2000, rand.New(rand.NewPCG(7, 7))), nil)
	require.NoError(t, err)
	refSteps, err := planMemoryRef(mds[0])
	require.NoError(t, err)
	require.Greater(t, refSteps, bound(len(mds[0].tensors)), "the reference scans every live tensor")
}

// TestPlanMemoryArenaReused: one arena reset between the methods of a
// program, as planMethods uses it, places every tensor where the reference
// does, whatever the methods planned before (a large one, then small ones).
func TestPlanMemoryArenaReused(t *testing.T) {
	var a planArena
	for _, name := range []string{"dag", "methods", "shared", "outputs", "chain"} {
		mds, err := resolve(planShapes[name](64, rand.New(rand.NewPCG(3, 3))), nil)
		require.NoError(t, err)
		for _, md := range mds {
			ref := clonePlan(md)
			_, refErr := planMemoryRef(ref)
			require.NoError(t, refErr)
			a.reset()
			require.NoError(t, a.plan(md))
			require.Equal(t, ref.arena, md.arena, "%s %s arena", name, md.m.Name)
			for i, tt := range md.tensors {
				require.Equal(t, ref.tensors[i].offset, tt.offset, "%s %s tensor %d", name, md.m.Name, i)
			}
		}
	}
}
