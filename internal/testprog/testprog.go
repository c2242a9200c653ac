// Package testprog writes the small TensorRT programs that ptekit's tests
// and golden views use when they need a program of some shape. Building
// them with package export, rather than taking named files from the shared
// conformance vectors, keeps the tests independent of which vector cases a
// tree happens to hold.
//
// It is for tests only: the engines are placeholder bytes, not TensorRT
// engines.
package testprog

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/export"
	"github.com/ptekit/ptekit/pte"
)

// Programs returns the programs by name, written once per test binary:
//
//   - "segment": method forward, one engine in a segment, a 1 MiB budget spec;
//   - "inline": the same with the blob inline;
//   - "aliased": forward, one TR02 engine with aliased I/O, in a segment;
//   - "two_methods": prefill and decode, target_device cuda:0, budgets
//     1048576 and 262144;
//   - "chain": forward calling two engines, a 1 MiB budget;
//   - "no_budget": "segment" without a budget spec;
//   - "aligned_4096": "segment" with 4096-byte segment alignment;
//   - "budget_twice": "segment" with its budget given twice (init fails);
//   - "specs": "segment" with more compile specs: target_device, a text
//     key and a binary one;
//   - "large_engine": "no_budget" with a 1 MiB engine.
//
// The map is shared: callers must not modify the byte slices.
func Programs(t testing.TB) map[string][]byte {
	t.Helper()
	progs, err := built()
	if err != nil {
		t.Fatalf("testprog: %v", err)
	}
	return progs
}

// built is Build, run once per test binary.
var built = sync.OnceValues(Build)

// Build writes the programs Programs returns, and more: "engines_64" (a
// method calling 64 engines of 4 KiB each, budget 512 MiB, cuda:0) and
// "getter" ("segment" plus a method get_max_seq_len returning the Int 128,
// as the Llama exports have). Commands without a testing.TB (the script
// tests' mkprog) use it directly.
func Build() (map[string][]byte, error) {
	out := map[string][]byte{}
	for name, c := range exportCases() {
		// Laid out as ExecuTorch lays out a program (no head room), so
		// that the goldens show upstream's layout.
		c.opts.HeadRoom = export.NoHeadRoom
		var b bytes.Buffer
		if _, err := export.Write(&b, &export.Program{Methods: c.methods}, &c.opts); err != nil {
			return nil, fmt.Errorf("writing %s: %w", name, err)
		}
		out[name] = b.Bytes()
	}
	// The programs export cannot write are edits of the ones it wrote.
	for _, e := range programEdits() {
		data, err := rewrite(out[e.from], e.edit)
		if err != nil {
			return nil, fmt.Errorf("writing %s: %w", e.name, err)
		}
		out[e.name] = data
	}
	return out, nil
}

// exportCase is a program Build writes with package export.
type exportCase struct {
	methods []*export.Method
	opts    export.Options
}

// exportCases lists the programs Build writes with package export, by name.
func exportCases() map[string]exportCase {
	mib := int64(1 << 20)
	return map[string]exportCase{
		"segment":      {[]*export.Method{singleMethod("forward", 32)}, export.Options{SegmentAlignment: 16, WeightStreamingBudget: Budget(mib)}},
		"inline":       {[]*export.Method{singleMethod("forward", 32)}, export.Options{InlineDelegateData: true, WeightStreamingBudget: Budget(mib)}},
		"aliased":      {[]*export.Method{aliasedMethod()}, export.Options{SegmentAlignment: 16}},
		"two_methods":  {[]*export.Method{singleMethod("prefill", 8), singleMethod("decode", 12)}, export.Options{SegmentAlignment: 16, TargetDevice: "cuda:0", WeightStreamingBudget: Budget(mib)}},
		"chain":        {[]*export.Method{chainMethod()}, export.Options{SegmentAlignment: 16, WeightStreamingBudget: Budget(mib)}},
		"no_budget":    {[]*export.Method{singleMethod("forward", 32)}, export.Options{SegmentAlignment: 16}},
		"aligned_4096": {[]*export.Method{singleMethod("forward", 32)}, export.Options{SegmentAlignment: 4096, WeightStreamingBudget: Budget(mib)}},
		"large_engine": {[]*export.Method{singleMethod("forward", 1<<20)}, export.Options{SegmentAlignment: 16}},
		"engines_64":   {[]*export.Method{Engines(64, 4096)}, export.Options{SegmentAlignment: 16, TargetDevice: "cuda:0", WeightStreamingBudget: Budget(mib512)}},
	}
}

// programEdit is a program Build derives from another one (from) by
// editing its Program.
type programEdit struct {
	name, from string
	edit       func(p *pte.Program)
}

// programEdits lists the programs Build derives from the exported ones,
// in the order they are made ("two_methods" is replaced by its edit).
func programEdits() []programEdit {
	return []programEdit{
		{"two_methods", "two_methods", func(p *pte.Program) {
			SetSpec(p.Plan(1).Delegates[0], "weight_streaming_budget", []byte("262144"))
		}},
		{"budget_twice", "segment", func(p *pte.Program) {
			d := p.Plan(0).Delegates[0]
			d.CompileSpecs = append(d.CompileSpecs, &pte.CompileSpec{Key: "weight_streaming_budget", Value: []byte("2048")})
		}},
		{"specs", "segment", func(p *pte.Program) {
			d := p.Plan(0).Delegates[0]
			SetSpec(d, "target_device", []byte("cuda:0"))
			SetSpec(d, "precision", []byte("fp16"))
			SetSpec(d, "opaque", []byte{0xff, 0x00, 0x10})
		}},
		{"getter", "segment", func(p *pte.Program) { p.SetPlans(append(Plans(p), Getter("get_max_seq_len", 128))) }},
	}
}

// placeholderEngine is an engine of n bytes "E".
func placeholderEngine(n int) export.Source {
	return export.EngineReader(strings.NewReader(strings.Repeat("E", n)), int64(n))
}

// float32Tensor is a method input of float32 elements.
func float32Tensor(name string, shape ...int64) *export.Tensor {
	return &export.Tensor{Name: name, DType: export.Float32, Shape: shape}
}

// float32Binding binds an engine output to a tensor of float32 elements.
func float32Binding(name, tensor string, shape ...int64) *export.Binding {
	return &export.Binding{Name: name, Tensor: tensor, DType: export.Float32, Shape: shape}
}

// singleMethod is a method x -> y calling one engine of n bytes.
func singleMethod(name string, n int) *export.Method {
	return &export.Method{
		Name:    name,
		Inputs:  []*export.Tensor{float32Tensor("x", 2, 2)},
		Outputs: []*export.Tensor{{Name: "y"}},
		Calls: []*export.EngineCall{{
			Engine:  placeholderEngine(n),
			Inputs:  []*export.Binding{{Name: "x", Tensor: "x"}},
			Outputs: []*export.Binding{float32Binding("y", "y", 2, 2)},
		}},
	}
}

// aliasedMethod is "forward" calling one engine whose k_cache_out output
// updates its k_cache input in place (TR02 aliased I/O).
func aliasedMethod() *export.Method {
	return &export.Method{
		Name:    "forward",
		Inputs:  []*export.Tensor{float32Tensor("tok", 1, 4), float32Tensor("k_cache", 1, 4)},
		Outputs: []*export.Tensor{{Name: "logits"}, {Name: "k_cache_out"}},
		Calls: []*export.EngineCall{{
			Engine:    placeholderEngine(24),
			Inputs:    []*export.Binding{{Name: "tok", Tensor: "tok"}, {Name: "k_cache", Tensor: "k_cache"}},
			Outputs:   []*export.Binding{float32Binding("logits", "logits", 1, 4), float32Binding("k_cache_out", "k_cache_out", 1, 4)},
			AliasedIO: []export.AliasedIO{{Output: "k_cache_out", Input: "k_cache", Kind: "kv_cache_update"}},
		}},
	}
}

// chainMethod is "forward" calling two engines, x -> h -> y.
func chainMethod() *export.Method {
	chain := &export.Method{Name: "forward", Inputs: []*export.Tensor{float32Tensor("x", 2)}, Outputs: []*export.Tensor{{Name: "y"}}}
	for i, io := range [][2]string{{"x", "h"}, {"h", "y"}} {
		chain.Calls = append(chain.Calls, &export.EngineCall{
			Engine:  placeholderEngine(16 + i),
			Inputs:  []*export.Binding{{Name: "in", Tensor: io[0]}},
			Outputs: []*export.Binding{float32Binding("out", io[1], 2)},
		})
	}
	return chain
}

var mib512 = int64(512 << 20)

// Engines returns a method "forward" that calls n engines of size bytes
// each in a chain, x -> h1 -> ... -> y. The engines are alike, so a
// program de-duplicates them into one segment.
func Engines(n, size int) *export.Method {
	return chainOf(n, func(int) []byte { return bytes.Repeat([]byte("E"), size) })
}

// DistinctEngines is Engines with engines that all differ (each starts
// with its index, and they are size to size+384 bytes long), so that every
// one has its own segment.
func DistinctEngines(n, size int) *export.Method {
	return chainOf(n, func(i int) []byte {
		return append([]byte(fmt.Sprintf("%08d", i)), bytes.Repeat([]byte("E"), size+i%7*64)...)
	})
}

// chainOf returns a method "forward" calling n engines, engine i's bytes
// from engine(i), in a chain x -> h1 -> ... -> y.
func chainOf(n int, engine func(i int) []byte) *export.Method {
	m := &export.Method{Name: "forward", Inputs: []*export.Tensor{{Name: "x", DType: export.Float32, Shape: []int64{2}}}, Outputs: []*export.Tensor{{Name: "y"}}}
	for i := range n {
		in, out := fmt.Sprintf("h%d", i), fmt.Sprintf("h%d", i+1)
		if i == 0 {
			in = "x"
		}
		if i == n-1 {
			out = "y"
		}
		body := engine(i)
		m.Calls = append(m.Calls, &export.EngineCall{
			Engine:  export.EngineReader(bytes.NewReader(body), int64(len(body))),
			Inputs:  []*export.Binding{{Name: "in", Tensor: in}},
			Outputs: []*export.Binding{{Name: "out", Tensor: out, DType: export.Float32, Shape: []int64{2}}},
		})
	}
	return m
}

// Getter returns a method that only returns the constant v, as the
// get_max_seq_len methods of ExecuTorch's Llama exports do.
func Getter(name string, v int64) *pte.ExecutionPlan {
	return &pte.ExecutionPlan{
		Name:                name,
		Values:              []*pte.EValue{{Val: &pte.Int{IntVal: v}}},
		Inputs:              []int32{},
		Outputs:             []int32{0},
		Chains:              []*pte.Chain{{Inputs: []int32{}, Outputs: []int32{0}, Instructions: []*pte.Instruction{}}},
		Operators:           []*pte.Operator{},
		Delegates:           []*pte.BackendDelegate{},
		NonConstBufferSizes: []int64{0},
	}
}

// Plans returns p's plans as a slice, for a test that adds one
// (p.SetPlans(append(Plans(p), ep))).
func Plans(p *pte.Program) []*pte.ExecutionPlan {
	var eps []*pte.ExecutionPlan
	for _, ep := range p.Plans() {
		eps = append(eps, ep)
	}
	return eps
}

// Rewrite opens the program file data, lets edit change its Program and
// returns the program written again with its segments passed through.
func Rewrite(t testing.TB, data []byte, edit func(p *pte.Program)) []byte {
	t.Helper()
	out, err := rewrite(data, edit)
	if err != nil {
		t.Fatalf("testprog: %v", err)
	}
	return out
}

func rewrite(data []byte, edit func(p *pte.Program)) ([]byte, error) {
	f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	segs, err := f.SegmentReaders()
	if err != nil {
		return nil, err
	}
	edit(f.Program)
	var out bytes.Buffer
	if _, err := pte.Write(&out, f.Program, segs, nil); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// SetSpec sets key to value in d's compile specs, appending it when d has
// no spec with that key.
func SetSpec(d *pte.BackendDelegate, key string, value []byte) {
	for _, s := range d.CompileSpecs {
		if s != nil && s.Key == key {
			s.Value = value
			return
		}
	}
	d.CompileSpecs = append(d.CompileSpecs, &pte.CompileSpec{Key: key, Value: value})
}

// Zeros is an io.ReaderAt of endless zero bytes: the engine of a large
// program written sparse.
type Zeros struct{}

// ReadAt fills p with zeros.
func (Zeros) ReadAt(p []byte, off int64) (int, error) {
	clear(p)
	return len(p), nil
}

// SparseWriter writes to a file, seeking over 64 KiB blocks of zeros so
// that a multi-GiB program of zero engines costs little disk. The caller
// truncates the file to Off at the end, so trailing holes count.
type SparseWriter struct {
	F   *os.File
	Off int64
}

var zeroBlock = make([]byte, 64<<10)

// Write writes p, leaving its zero blocks as holes.
func (w *SparseWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		c := min(len(p), len(zeroBlock))
		if bytes.Equal(p[:c], zeroBlock[:c]) {
			if _, err := w.F.Seek(int64(c), io.SeekCurrent); err != nil {
				return 0, err
			}
		} else if _, err := w.F.Write(p[:c]); err != nil {
			return 0, err
		}
		w.Off += int64(c)
		p = p[c:]
	}
	return n, nil
}

// WriteEngines writes to path, sparse, a program whose method "forward"
// calls n TensorRT engines in a chain, engine i holding engineSize+16*i
// zero bytes (sizes differ so that no two blobs are compared for
// deduplication), each in its own segment, with a 1 GiB budget spec.
func WriteEngines(tb testing.TB, path string, n int, engineSize int64) {
	tb.Helper()
	m := &export.Method{Name: "forward",
		Inputs:  []*export.Tensor{{Name: "t0", DType: export.Float32, Shape: []int64{4}}},
		Outputs: []*export.Tensor{{Name: fmt.Sprintf("t%d", n)}}}
	for i := range n {
		m.Calls = append(m.Calls, &export.EngineCall{
			Engine:  export.EngineReader(Zeros{}, engineSize+16*int64(i)),
			Inputs:  []*export.Binding{{Name: "in", Tensor: fmt.Sprintf("t%d", i)}},
			Outputs: []*export.Binding{{Name: "out", Tensor: fmt.Sprintf("t%d", i+1), DType: export.Float32, Shape: []int64{4}}},
		})
	}
	budget := int64(1 << 30)
	out, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer out.Close()
	sw := &SparseWriter{F: out}
	if _, err := export.Write(sw, &export.Program{Methods: []*export.Method{m}}, &export.Options{WeightStreamingBudget: Budget(budget)}); err != nil {
		tb.Fatalf("testprog: %v", err)
	}
	if err := out.Truncate(sw.Off); err != nil {
		tb.Fatal(err)
	}
}

// Budget is the explicit weight streaming budget of n bytes, for the
// options of a program written for a test; n must not be negative.
func Budget(n int64) compilespec.Budget {
	b, err := compilespec.BudgetOf(n)
	if err != nil {
		panic(err)
	}
	return b
}

// BudgetPtr is a pointer to Budget(n), for export.RebakeOptions.
func BudgetPtr(n int64) *compilespec.Budget {
	b := Budget(n)
	return &b
}
