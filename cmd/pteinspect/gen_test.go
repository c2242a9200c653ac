package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/export"
	"github.com/ptekit/ptekit/pte"
)

// trtPrograms returns small TensorRT programs written by package export,
// by name, for the tests and golden views that need a program of some
// shape (rather than a named shared vector, which a holdout tree may not
// have):
//
//   - "segment": forward, one engine in a segment, a 1 MiB budget spec;
//   - "inline": the same with the blob inline;
//   - "aliased": forward, one TR02 engine with aliased I/O, in a segment;
//   - "two_methods": prefill and decode, target_device cuda:0, budgets
//     1048576 and 262144;
//   - "chain": forward calling two engines, a 1 MiB budget;
//   - "no_budget": "segment" without a budget spec;
//   - "aligned_4096": "segment" with 4096-byte segment alignment;
//   - "budget_twice": "segment" with its budget given twice (init fails);
//   - "specs": "segment" with more compile specs: target_device, a text
//     key and a binary one.
func trtPrograms(t testing.TB) map[string][]byte {
	t.Helper()
	trtMu.Lock()
	defer trtMu.Unlock()
	if trtCache == nil {
		trtCache = writeTRTPrograms(t)
	}
	return trtCache
}

var (
	trtMu    sync.Mutex
	trtCache map[string][]byte
)

func writeTRTPrograms(t testing.TB) map[string][]byte {
	engine := func(n int) export.Source {
		return export.EngineReader(strings.NewReader(strings.Repeat("E", n)), int64(n))
	}
	tensor := func(name string, shape ...int64) *export.Tensor {
		return &export.Tensor{Name: name, DType: export.Float32, Shape: shape}
	}
	binding := func(name, tensor string, shape ...int64) *export.Binding {
		return &export.Binding{Name: name, Tensor: tensor, DType: export.Float32, Shape: shape}
	}
	single := func(name string, n int) *export.Method {
		return &export.Method{
			Name:    name,
			Inputs:  []*export.Tensor{tensor("x", 2, 2)},
			Outputs: []*export.Tensor{{Name: "y"}},
			Calls: []*export.EngineCall{{
				Engine:  engine(n),
				Inputs:  []*export.Binding{{Name: "x", Tensor: "x"}},
				Outputs: []*export.Binding{binding("y", "y", 2, 2)},
			}},
		}
	}
	aliased := &export.Method{
		Name:    "forward",
		Inputs:  []*export.Tensor{tensor("tok", 1, 4), tensor("k_cache", 1, 4)},
		Outputs: []*export.Tensor{{Name: "logits"}, {Name: "k_cache_out"}},
		Calls: []*export.EngineCall{{
			Engine:    engine(24),
			Inputs:    []*export.Binding{{Name: "tok", Tensor: "tok"}, {Name: "k_cache", Tensor: "k_cache"}},
			Outputs:   []*export.Binding{binding("logits", "logits", 1, 4), binding("k_cache_out", "k_cache_out", 1, 4)},
			AliasedIO: []export.AliasedIO{{Output: "k_cache_out", Input: "k_cache", Kind: "kv_cache_update"}},
		}},
	}
	chain := &export.Method{Name: "forward", Inputs: []*export.Tensor{tensor("x", 2)}, Outputs: []*export.Tensor{{Name: "y"}}}
	for i, io := range [][2]string{{"x", "h"}, {"h", "y"}} {
		chain.Calls = append(chain.Calls, &export.EngineCall{
			Engine:  engine(16 + i),
			Inputs:  []*export.Binding{{Name: "in", Tensor: io[0]}},
			Outputs: []*export.Binding{binding("out", io[1], 2)},
		})
	}
	mib := int64(1 << 20)
	cases := map[string]struct {
		methods []*export.Method
		opts    export.Options
	}{
		"segment":      {[]*export.Method{single("forward", 32)}, export.Options{SegmentAlignment: 16, WeightStreamingBudget: &mib}},
		"inline":       {[]*export.Method{single("forward", 32)}, export.Options{InlineDelegateData: true, WeightStreamingBudget: &mib}},
		"aliased":      {[]*export.Method{aliased}, export.Options{SegmentAlignment: 16}},
		"two_methods":  {[]*export.Method{single("prefill", 8), single("decode", 12)}, export.Options{SegmentAlignment: 16, TargetDevice: "cuda:0", WeightStreamingBudget: &mib}},
		"chain":        {[]*export.Method{chain}, export.Options{SegmentAlignment: 16, WeightStreamingBudget: &mib}},
		"no_budget":    {[]*export.Method{single("forward", 32)}, export.Options{SegmentAlignment: 16}},
		"aligned_4096": {[]*export.Method{single("forward", 32)}, export.Options{SegmentAlignment: 4096, WeightStreamingBudget: &mib}},
	}
	out := map[string][]byte{}
	for name, c := range cases {
		var b bytes.Buffer
		_, err := export.Write(&b, &export.Program{Methods: c.methods}, &c.opts)
		require.NoError(t, err, name)
		out[name] = b.Bytes()
	}
	out["two_methods"] = rewrite(t, out["two_methods"], func(p *pte.Program) {
		setSpec(p.ExecutionPlan[1].Delegates[0], "weight_streaming_budget", []byte("262144"))
	})
	out["budget_twice"] = rewrite(t, out["segment"], func(p *pte.Program) {
		d := p.ExecutionPlan[0].Delegates[0]
		d.CompileSpecs = append(d.CompileSpecs, &pte.CompileSpec{Key: "weight_streaming_budget", Value: []byte("2048")})
	})
	out["specs"] = rewrite(t, out["segment"], func(p *pte.Program) {
		d := p.ExecutionPlan[0].Delegates[0]
		setSpec(d, "target_device", []byte("cuda:0"))
		setSpec(d, "precision", []byte("fp16"))
		setSpec(d, "opaque", []byte{0xff, 0x00, 0x10})
	})
	return out
}

// setSpec sets key to value in d's compile specs.
func setSpec(d *pte.BackendDelegate, key string, value []byte) {
	for _, s := range d.CompileSpecs {
		if s != nil && s.Key == key {
			s.Value = value
			return
		}
	}
	d.CompileSpecs = append(d.CompileSpecs, &pte.CompileSpec{Key: key, Value: value})
}

// trtPath writes trtPrograms' program name to a temporary file and returns
// its path.
func trtPath(t *testing.T, name string) string {
	t.Helper()
	data, ok := trtPrograms(t)[name]
	require.True(t, ok, name)
	path := filepath.Join(t.TempDir(), name+".pte")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// rootPastEnd writes a program whose root table offset (bytes 0..4) points
// past the end of the file and returns its path.
func rootPastEnd(t *testing.T) string {
	t.Helper()
	data := slices.Clone(trtPrograms(t)["segment"])
	binary.LittleEndian.PutUint32(data, uint32(len(data)+100))
	path := filepath.Join(t.TempDir(), "root_past_end.pte")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// unreadableFiles writes programs the reader cannot open, made from
// trtPrograms' "segment", and returns each path with the failure kind of
// the --json views: cut in half, a wrong file identifier, cut inside the
// 8-byte prefix, and a missing file.
func unreadableFiles(t *testing.T) map[string]string {
	t.Helper()
	good := trtPrograms(t)["segment"]
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, data, 0o644))
		return path
	}
	ident := slices.Clone(good)
	copy(ident[4:8], "ET13")
	return map[string]string{
		write("trunc_half.pte", good[:len(good)/2]): "invalid_program",
		write("ident.pte", ident):                   "invalid_program",
		write("trunc_7.pte", good[:7]):              "invalid_argument",
		filepath.Join(dir, "missing.pte"):           "access_failed",
	}
}
