package ptejson

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/export"
	"github.com/ptekit/ptekit/pte"
)

// trtCarrier returns a small program written by package export: method
// "forward" with one TensorRT delegate whose blob (TR02, aliased I/O) is
// in segment 0, and target_device cuda:0. Tests that need a TensorRT
// program build it here instead of depending on a named shared vector.
func trtCarrier(t testing.TB) []byte {
	t.Helper()
	f32 := func(name string) *export.Tensor {
		return &export.Tensor{Name: name, DType: export.Float32, Shape: []int64{1, 4}}
	}
	engine := strings.Repeat("E", 32)
	m := &export.Method{
		Name:    "forward",
		Inputs:  []*export.Tensor{f32("tok"), f32("k")},
		Outputs: []*export.Tensor{{Name: "logits"}, {Name: "k_out"}},
		Calls: []*export.EngineCall{{
			Engine: export.EngineReader(strings.NewReader(engine), int64(len(engine))),
			Inputs: []*export.Binding{{Name: "tok", Tensor: "tok"}, {Name: "k", Tensor: "k"}},
			Outputs: []*export.Binding{
				{Name: "logits", Tensor: "logits", DType: export.Float32, Shape: []int64{1, 4}},
				{Name: "k_out", Tensor: "k_out", DType: export.Float32, Shape: []int64{1, 4}},
			},
			AliasedIO: []export.AliasedIO{{Output: "k_out", Input: "k", Kind: "kv_cache_update"}},
		}},
	}
	var b bytes.Buffer
	_, err := export.Write(&b, &export.Program{Methods: []*export.Method{m}}, &export.Options{SegmentAlignment: 16, TargetDevice: "cuda:0"})
	require.NoError(t, err)
	return b.Bytes()
}

// genPrograms returns small TensorRT programs written by package export,
// by name, for tests that need a program of some shape (they used to take
// named shared vectors, which a holdout tree may not have):
//
//   - "segment": method forward, one engine in a segment, a budget spec;
//   - "inline": the same program with the blob inline;
//   - "aligned_4096": "segment" with 4096-byte segment alignment;
//   - "two_methods": prefill and decode, budgets 1048576 and 262144;
//   - "two_engines": forward calling two engines in a chain;
//   - "budget_twice": "segment" with its budget spec given twice;
//   - "aliased": trtCarrier;
//   - "large_engine": "segment" with a 1 MiB engine.
func genPrograms(t testing.TB) map[string][]byte {
	t.Helper()
	genMu.Lock()
	defer genMu.Unlock()
	if genCache == nil {
		genCache = writePrograms(t)
	}
	return genCache
}

var (
	genMu    sync.Mutex
	genCache map[string][]byte
)

func writePrograms(t testing.TB) map[string][]byte {
	engine := func(n int) export.Source {
		return export.EngineReader(strings.NewReader(strings.Repeat("E", n)), int64(n))
	}
	single := func(name string, n int) *export.Method {
		return &export.Method{
			Name:    name,
			Inputs:  []*export.Tensor{{Name: "x", DType: export.Float32, Shape: []int64{2, 2}}},
			Outputs: []*export.Tensor{{Name: "y"}},
			Calls: []*export.EngineCall{{
				Engine:  engine(n),
				Inputs:  []*export.Binding{{Name: "x", Tensor: "x"}},
				Outputs: []*export.Binding{{Name: "y", Tensor: "y", DType: export.Float32, Shape: []int64{2, 2}}},
			}},
		}
	}
	chain := &export.Method{
		Name:    "forward",
		Inputs:  []*export.Tensor{{Name: "x", DType: export.Float32, Shape: []int64{2}}},
		Outputs: []*export.Tensor{{Name: "y"}},
	}
	for i, io := range [][2]string{{"x", "h"}, {"h", "y"}} {
		chain.Calls = append(chain.Calls, &export.EngineCall{
			Engine:  engine(16 + i),
			Inputs:  []*export.Binding{{Name: "in", Tensor: io[0]}},
			Outputs: []*export.Binding{{Name: "out", Tensor: io[1], DType: export.Float32, Shape: []int64{2}}},
		})
	}
	mib := int64(1 << 20)
	seg := &export.Options{SegmentAlignment: 16, WeightStreamingBudget: &mib}
	cases := map[string]struct {
		methods []*export.Method
		opts    *export.Options
	}{
		"segment":      {[]*export.Method{single("forward", 32)}, seg},
		"inline":       {[]*export.Method{single("forward", 32)}, &export.Options{InlineDelegateData: true, WeightStreamingBudget: &mib}},
		"aligned_4096": {[]*export.Method{single("forward", 32)}, &export.Options{SegmentAlignment: 4096, WeightStreamingBudget: &mib}},
		"two_methods":  {[]*export.Method{single("prefill", 8), single("decode", 12)}, &export.Options{SegmentAlignment: 16, TargetDevice: "cuda:0", WeightStreamingBudget: &mib}},
		"two_engines":  {[]*export.Method{chain}, seg},
		"large_engine": {[]*export.Method{single("forward", 1<<20)}, &export.Options{SegmentAlignment: 16}},
	}
	out := map[string][]byte{"aliased": trtCarrier(t)}
	for name, c := range cases {
		var b bytes.Buffer
		_, err := export.Write(&b, &export.Program{Methods: c.methods}, c.opts)
		require.NoError(t, err, name)
		out[name] = b.Bytes()
	}
	out["two_methods"] = rewriteBytes(t, out["two_methods"], func(p *pte.Program, _ []*io.SectionReader) {
		for _, cs := range p.ExecutionPlan[1].Delegates[0].CompileSpecs {
			if cs.Key == "weight_streaming_budget" {
				cs.Value = []byte("262144")
			}
		}
	})
	out["budget_twice"] = rewriteBytes(t, out["segment"], func(p *pte.Program, _ []*io.SectionReader) {
		d := p.ExecutionPlan[0].Delegates[0]
		d.CompileSpecs = append(d.CompileSpecs, &pte.CompileSpec{Key: "weight_streaming_budget", Value: []byte("2048")})
	})
	return out
}

// openSource opens a test program: "corpus/NAME.pte" from the shared
// corpus, any other name from genPrograms.
func openSource(t testing.TB, src string) *pte.File {
	t.Helper()
	if strings.HasPrefix(src, "corpus/") {
		return openShared(t, src)
	}
	data, ok := genPrograms(t)[src]
	require.True(t, ok, "no generated program %q", src)
	f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	return f
}

// rewriteBytes opens the program file data, lets edit change its Program
// and segments and returns the program written again.
func rewriteBytes(t testing.TB, data []byte, edit func(p *pte.Program, segs []*io.SectionReader)) []byte {
	t.Helper()
	src, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	defer src.Close()
	segs, err := src.SegmentReaders()
	require.NoError(t, err)
	edit(src.Program, segs)
	var out bytes.Buffer
	_, err = pte.Write(&out, src.Program, segs, nil)
	require.NoError(t, err)
	return out.Bytes()
}

// rewriteProgram is rewriteBytes, opened.
func rewriteProgram(t testing.TB, data []byte, edit func(p *pte.Program, segs []*io.SectionReader)) *pte.File {
	t.Helper()
	out := rewriteBytes(t, data, edit)
	f, err := pte.NewFile(bytes.NewReader(out), int64(len(out)))
	require.NoError(t, err)
	return f
}
