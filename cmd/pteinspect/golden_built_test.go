package main

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// TestGoldenBuilt compares the human view of programs built here, in the
// shapes real ExecuTorch programs take (no delegate, other backends' segment
// and inline delegates, several methods sharing a segment, a training
// program), with testdata/golden/built_NAME.txt. Building them keeps the
// goldens independent of which files a shared tree holds.
// `go test ./cmd/pteinspect -update` rewrites them.
func TestGoldenBuilt(t *testing.T) {
	progs := builtPrograms(t)
	cases := []struct {
		golden, prog string
		args         []string
	}{
		{"built_kernel_only", "kernel_only", []string{"--long"}},
		{"built_other_backend_segments", "other_backend", []string{"--long"}},
		{"built_other_backend_plan_not_modelled", "other_backend", []string{"--plan"}},
		{"built_methods_shared_segment", "methods_shared", []string{"--long"}},
		{"built_other_backend_inline", "other_inline", []string{"--long"}},
		{"built_training", "training", []string{"--long"}},
		// The default (summary) view of the same programs.
		{"built_summary_kernel_only", "kernel_only", nil},
		{"built_summary_other_backend_segments", "other_backend", nil},
		{"built_summary_methods_shared_segment", "methods_shared", nil},
		{"built_summary_other_backend_inline", "other_inline", nil},
		{"built_summary_training", "training", nil},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			r := runArgs(progs[c.prog], append([]string{"-"}, c.args...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			require.Empty(t, r.stderr)
			testkit.Golden(t, filepath.Join("testdata", "golden", c.golden+".txt"), []byte(r.stdout))
		})
	}
}

// section is a segment payload of n bytes of b.
func section(b byte, n int) *io.SectionReader {
	return io.NewSectionReader(bytes.NewReader(bytes.Repeat([]byte{b}, n)), 0, int64(n))
}

// rebuild opens data, lets edit change its Program and segment payloads
// (the indices the program refers to) and writes it again.
func rebuild(t *testing.T, data []byte, edit func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader) []byte {
	t.Helper()
	f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	defer f.Close()
	segs, err := f.SegmentReaders()
	require.NoError(t, err)
	segs = edit(f.Program, segs)
	var out bytes.Buffer
	_, err = pte.Write(&out, f.Program, segs, &pte.WriteOptions{SegmentAlignment: 16, Strict: true})
	require.NoError(t, err)
	return out.Bytes()
}

// setBackend gives every delegate of p the backend id and compile specs.
func setBackend(p *pte.Program, id string, specs ...*pte.CompileSpec) {
	if specs == nil {
		specs = []*pte.CompileSpec{} // the table is required even when empty
	}
	for _, plan := range p.Plans() {
		for _, d := range plan.Delegates {
			d.ID = id
			d.CompileSpecs = specs
		}
	}
}

// addKernels appends operators to plan and one kernel call for each at the
// end of its first chain, over the values args.
func addKernels(plan *pte.ExecutionPlan, args []int32, ops ...string) {
	for _, op := range ops {
		name, overload, _ := strings.Cut(op, ".")
		plan.Operators = append(plan.Operators, &pte.Operator{Name: name, Overload: overload})
		plan.Chains[0].Instructions = append(plan.Chains[0].Instructions,
			&pte.Instruction{Args: &pte.KernelCall{OpIndex: int32(len(plan.Operators) - 1), Args: args}})
	}
}

// constantMethod is a method without inputs or instructions that returns
// vals, as ExecuTorch writes a model's constant getters.
func constantMethod(name string, vals ...pte.Value) *pte.ExecutionPlan {
	m := &pte.ExecutionPlan{
		Name: name, Inputs: []int32{}, Operators: []*pte.Operator{}, Delegates: []*pte.BackendDelegate{},
		Chains:              []*pte.Chain{{Inputs: []int32{}, Outputs: []int32{}, Instructions: []*pte.Instruction{}}},
		NonConstBufferSizes: []int64{0},
	}
	for i, v := range vals {
		m.Values = append(m.Values, &pte.EValue{Val: v})
		m.Outputs = append(m.Outputs, int32(i))
	}
	return m
}

// builtPrograms returns the programs of TestGoldenBuilt by name:
//
//   - "kernel_only": no delegate, one kernel over two inputs, an empty
//     constant segment and no extended header;
//   - "other_backend": two XnnpackBackend delegates in segments, a constant
//     segment with bytes, named data in segments and kernels ptekit has no
//     kernel for;
//   - "methods_shared": two QnnBackend methods whose delegates share one
//     segment and carry a binary compile spec, and constant getters;
//   - "other_inline": an EthosUBackend delegate inline, with text compile
//     specs that need quoting;
//   - "training": XnnpackBackend delegates, a mutable data segment and the
//     training getter methods (Int and String outputs).
func builtPrograms(t *testing.T) map[string][]byte {
	t.Helper()
	base := trtPrograms(t)
	out := map[string][]byte{}
	out["kernel_only"] = rebuild(t, base["inline"], func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
		p.BackendDelegateData = nil
		plan := p.Plan(0)
		plan.Delegates = []*pte.BackendDelegate{}
		x := *plan.Values[0].Val.(*pte.Tensor)
		alloc := *x.AllocationInfo
		alloc.MemoryOffsetLow = uint32(plan.NonConstBufferSizes[1])
		x.AllocationInfo = &alloc
		plan.NonConstBufferSizes[1] += 16
		plan.Values = append(plan.Values, &pte.EValue{Val: &x})
		plan.Inputs = []int32{0, 2}
		plan.Chains[0].Instructions = nil
		addKernels(plan, []int32{0, 2, 1}, "aten::add.out")
		return segs
	})
	out["other_backend"] = rebuild(t, base["chain"], func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
		setBackend(p, "XnnpackBackend")
		segs[0] = section(1, 64)
		p.ConstantSegment.Offsets = []uint64{0, 64}
		for i, n := range []int{256, 16} {
			p.NamedData = append(p.NamedData, &pte.NamedData{
				Key:          strings.Repeat(string(rune('a'+i)), 64),
				SegmentIndex: uint32(len(segs)),
			})
			segs = append(segs, section(byte(2+i), n))
		}
		addKernels(p.Plan(0), []int32{2, 2}, "aten::clamp.out", "aten::index_select.out")
		return segs
	})
	out["methods_shared"] = rebuild(t, base["two_methods"], func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
		setBackend(p, "QnnBackend", &pte.CompileSpec{Key: "qnn_compile_spec", Value: []byte{0x24, 0, 0, 0, 0x1e, 0, 0x22, 0, 8, 0, 0xff}})
		// The decode delegate reads the prefill delegate's segment.
		shared := p.Plan(0).Delegates[0].Processed.Index
		p.Plan(1).Delegates[0].Processed.Index = shared
		segs = segs[:shared+1]
		p.SetPlans(append(testprog.Plans(p),
			constantMethod("get_vocab_size", &pte.Int{IntVal: 512}),
			constantMethod("get_use_kv_cache", &pte.Bool{BoolVal: true}),
			constantMethod("get_logits_scale", &pte.Double{DoubleVal: 0.125})))
		return segs
	})
	out["other_inline"] = rebuild(t, base["inline"], func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
		setBackend(p, "EthosUBackend",
			&pte.CompileSpec{Key: "tosa_spec", Value: []byte("TOSA-1.0+INT+int16")},
			&pte.CompileSpec{Key: "compile_flags", Value: []byte("--output-format=raw --config=Arm/vela.ini")},
			&pte.CompileSpec{Key: "output_format", Value: []byte("vela")})
		return segs
	})
	out["training"] = rebuild(t, base["chain"], func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
		setBackend(p, "XnnpackBackend")
		p.MutableDataSegments = []*pte.SubsegmentOffsets{{SegmentIndex: uint32(len(segs)), Offsets: []uint64{0, 0, 8}}}
		segs = append(segs, section(7, 40))
		p.SetPlans(append(testprog.Plans(p),
			constantMethod("__et_training_gradients_index_forward", &pte.Int{IntVal: 2}),
			constantMethod("__et_training_fqn_forward", &pte.String{StringVal: "net.linear.weight"}, &pte.String{StringVal: "net.linear.bias"}),
			constantMethod("__et_training_parameters_index_forward", &pte.Int{IntVal: 4})))
		return segs
	})
	return out
}
