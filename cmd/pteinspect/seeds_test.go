package main

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/export"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
)

// maxSeedSize bounds the fuzz seeds: small inputs keep the fuzzer's
// minimisation fast, so that a crash found late is still reported.
const maxSeedSize = 4 << 10

// seedPrograms returns small TensorRT programs written by package export,
// by name: a segment delegate, an inline delegate with aliased I/O (TR02),
// two methods, and a two-engine chain with a budget.
func seedPrograms(t testing.TB) map[string][]byte {
	engine := func(n int) export.Source {
		return export.EngineReader(strings.NewReader(strings.Repeat("E", n)), int64(n))
	}
	f32 := func(name string, shape ...int64) *export.Tensor {
		return &export.Tensor{Name: name, DType: export.Float32, Shape: shape}
	}
	single := func(name string, n int) *export.Method {
		return &export.Method{
			Name:    name,
			Inputs:  []*export.Tensor{f32("x", 2, 2)},
			Outputs: []*export.Tensor{{Name: "y"}},
			Calls: []*export.EngineCall{{
				Engine:  engine(n),
				Inputs:  []*export.Binding{{Name: "x", Tensor: "x"}},
				Outputs: []*export.Binding{{Name: "y", Tensor: "y", DType: export.Float32, Shape: []int64{2, 2}}},
			}},
		}
	}
	aliased := &export.Method{
		Name:    "forward",
		Inputs:  []*export.Tensor{f32("tok", 1, 4), f32("k", 1, 4)},
		Outputs: []*export.Tensor{{Name: "logits"}, {Name: "k_out"}},
		Calls: []*export.EngineCall{{
			Engine: engine(24),
			Inputs: []*export.Binding{{Name: "tok", Tensor: "tok"}, {Name: "k", Tensor: "k"}},
			Outputs: []*export.Binding{
				{Name: "logits", Tensor: "logits", DType: export.Float32, Shape: []int64{1, 4}},
				{Name: "k_out", Tensor: "k_out", DType: export.Float32, Shape: []int64{1, 4}},
			},
			AliasedIO: []export.AliasedIO{{Output: "k_out", Input: "k", Kind: "kv_cache_update"}},
		}},
	}
	chain := &export.Method{
		Name:    "forward",
		Inputs:  []*export.Tensor{f32("x", 2)},
		Outputs: []*export.Tensor{{Name: "y"}},
	}
	for i, in := range []string{"x", "h"} {
		out := map[string]string{"x": "h", "h": "y"}[in]
		chain.Calls = append(chain.Calls, &export.EngineCall{
			Engine:   engine(16 + i),
			Inputs:   []*export.Binding{{Name: "in" + strconv.Itoa(i), Tensor: in}},
			Outputs:  []*export.Binding{{Name: "out" + strconv.Itoa(i), Tensor: out, DType: export.Float32, Shape: []int64{2}}},
			DeviceID: i,
		})
	}
	budget := int64(1 << 20)
	programs := map[string]struct {
		p    *export.Program
		opts *export.Options
	}{
		"segment":        {&export.Program{Methods: []*export.Method{single("forward", 32)}}, &export.Options{SegmentAlignment: 16}},
		"inline_aliased": {&export.Program{Methods: []*export.Method{aliased}}, &export.Options{InlineDelegateData: true}},
		"two_methods": {&export.Program{Methods: []*export.Method{single("prefill", 8), single("decode", 12)}},
			&export.Options{SegmentAlignment: 16, TargetDevice: "cuda:0"}},
		"chain_budget": {&export.Program{Methods: []*export.Method{chain}},
			&export.Options{SegmentAlignment: 16, WeightStreamingBudget: testprog.Budget(budget)}},
	}
	out := map[string][]byte{}
	for name, c := range programs {
		c.opts.HeadRoom = export.NoHeadRoom // small seeds, upstream's layout
		var b bytes.Buffer
		_, err := export.Write(&b, c.p, c.opts)
		require.NoError(t, err, name)
		require.LessOrEqual(t, b.Len(), maxSeedSize, name)
		out[name] = b.Bytes()
	}
	return out
}

// TestFuzzRunSeeds: the committed seeds of FuzzRun are what seedPrograms
// writes; `go test ./cmd/pteinspect -run TestFuzzRunSeeds -update`
// rewrites them. Each seed is a program every view accepts.
func TestFuzzRunSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzRun")
	for name, data := range seedPrograms(t) {
		r := runArgs(data, "--verify", "-")
		assert.Equal(t, exitOK, r.code, "%s: %s", name, r.stdout)
		testkit.Golden(t, filepath.Join(dir, "seed_"+name), testkit.FuzzCorpusFile(data))
	}
}
