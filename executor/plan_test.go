package executor

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

func planVector(t *testing.T, shape []testMethod, o PlanOptions) *ProgramPlan {
	t.Helper()
	pp, err := PlanProgram(buildProgram(t, shape...), o)
	if err != nil {
		t.Fatal(err)
	}
	return pp
}

func TestPlanProgramStandIn(t *testing.T) {
	tests := []struct {
		name       string
		vector     []testMethod
		opts       PlanOptions
		ok         bool
		kind       string
		source     BudgetSource
		requested  *int64
		applied    *int64
		assumed    []string
		reasonPart string
	}{
		{name: "nothing stated", vector: progOneEngine, ok: true, source: SourceCompileSpec, requested: i64(mib),
			assumed: []string{"streamable", "scratch"}, reasonPart: "not known"},
		{name: "streamable stated, clamped", vector: progOneEngine, opts: PlanOptions{Streamable: i64(512 << 10)}, ok: true,
			source: SourceCompileSpec, requested: i64(mib), applied: i64(512 << 10), assumed: []string{"scratch"}, reasonPart: "clamped"},
		{name: "streamable stated, fits", vector: progOneEngine, opts: PlanOptions{Streamable: i64(gib), Scratch: i64(4096)}, ok: true,
			source: SourceCompileSpec, requested: i64(mib), applied: i64(mib), assumed: []string{}},
		{name: "nothing streamable", vector: progOneEngine, opts: PlanOptions{Streamable: i64(0)}, ok: true,
			source: SourceCompileSpec, requested: i64(mib), assumed: []string{"scratch"}, reasonPart: "no streamable weights"},
		{name: "automatic is never known", vector: progNoBudgetSpec, opts: PlanOptions{Streamable: i64(gib), Scratch: i64(1)}, ok: true,
			source: SourceAutomatic, assumed: []string{"automatic"}, reasonPart: "automatic budget chosen by TensorRT"},
		{name: "load option", vector: progOneEngine, opts: PlanOptions{Streamable: i64(gib), LoadOptions: mustOpts(t, wsb(String("2048")))}, ok: true,
			source: SourceLoadOption, requested: i64(2048), applied: i64(2048), assumed: []string{"scratch"}},
		{name: "bool option", vector: progOneEngine, opts: PlanOptions{LoadOptions: mustOpts(t, wsb(Bool(true)))}, kind: "invalid_program"},
		{name: "duplicate spec", vector: progBudgetSpecTwice, kind: "invalid_program"},
		{name: "duplicate spec masked", vector: progBudgetSpecTwice, opts: PlanOptions{LoadOptions: mustOpts(t, wsb(Int(4096)))}, ok: true,
			source: SourceLoadOption, requested: i64(4096), assumed: []string{"streamable", "scratch"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pp := planVector(t, tc.vector, tc.opts)
			if len(pp.Methods) != 1 {
				t.Fatalf("%d methods", len(pp.Methods))
			}
			mp := pp.Methods[0]
			if mp.Name != "forward" || mp.OK != tc.ok {
				t.Fatalf("method = %+v", mp)
			}
			if !tc.ok {
				if mp.Error == nil || mp.Error.Kind != tc.kind || mp.Error.Delegate == nil || *mp.Error.Delegate != 0 ||
					!strings.Contains(mp.Error.Message, "TensorRTBackend") {
					t.Errorf("error = %+v", mp.Error)
				}
				return
			}
			if mp.Error != nil || len(mp.Delegates) != 1 {
				t.Fatalf("method = %+v", mp)
			}
			d := mp.Delegates[0]
			if d.Index != 0 || d.Backend != TensorRTBackendID || d.Device == nil || *d.Device != 0 ||
				!reflect.DeepEqual(d.Inputs, []string{"x"}) || !reflect.DeepEqual(d.Outputs, []string{"y"}) {
				t.Errorf("delegate = %+v", d)
			}
			b := d.Budget
			if b.Source != tc.source || !eqPtr(b.Requested, tc.requested) || !eqPtr(b.Applied, tc.applied) ||
				!strings.Contains(b.Reason, tc.reasonPart) {
				t.Errorf("budget = %s %s %s %q", b.Source, fmtPtr(b.Requested), fmtPtr(b.Applied), b.Reason)
			}
			if !reflect.DeepEqual(pp.Assumed, tc.assumed) {
				t.Errorf("assumed = %q, want %q", pp.Assumed, tc.assumed)
			}
		})
	}
}

func mustOpts(t *testing.T, o ...Option) *LoadOptions {
	lo := &LoadOptions{}
	if err := lo.Add(TensorRTBackendID, o...); err != nil {
		t.Fatal(err)
	}
	return lo
}

func TestPlanProgramScratchAndMethods(t *testing.T) {
	pp := planVector(t, progTwoMethods, PlanOptions{Streamable: i64(gib), Scratch: i64(1000), SharedScratch: true})
	if len(pp.Methods) != 2 || pp.Methods[0].Name != "prefill" || pp.Methods[1].Name != "decode" {
		t.Fatalf("methods = %+v", pp.Methods)
	}
	if *pp.Methods[0].Delegates[0].Budget.Applied != 1048576 || *pp.Methods[1].Delegates[0].Budget.Applied != 262144 {
		t.Errorf("per-method budgets wrong")
	}
	want := ScratchMemory{WithoutPool: 2000, WithPool: 1000, Current: 1000, PoolPerDevice: map[int]int64{0: 1000}}
	if pp.ScratchMemory == nil || !reflect.DeepEqual(*pp.ScratchMemory, want) {
		t.Errorf("scratch = %+v", pp.ScratchMemory)
	}
	if !pp.Methods[0].Delegates[0].SharedScratch {
		t.Error("shared scratch not planned")
	}
	pp = planVector(t, progKernelBetween, PlanOptions{})
	if mp := pp.Methods[0]; !mp.OK || len(mp.Delegates) != 2 || !reflect.DeepEqual(mp.MissingOperators, []string{"aten::add.out"}) {
		t.Errorf("kernel program = %+v", mp)
	}
	if pp.ScratchMemory != nil {
		t.Errorf("scratch reported although unknown: %+v", pp.ScratchMemory)
	}
}

// TestPlanProgramJSON pins the JSON field names pteinspect --plan --json
// prints.
func TestPlanProgramJSON(t *testing.T) {
	pp := planVector(t, progOneEngine, PlanOptions{LoadOptions: mustOpts(t, wsb(Bool(true)))})
	ok := planVector(t, progOneEngine, PlanOptions{})
	for _, p := range []*ProgramPlan{pp, ok} {
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Methods []map[string]json.RawMessage `json:"methods"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		m := doc.Methods[0]
		for _, k := range []string{"name", "ok", "error", "delegates"} {
			if _, has := m[k]; !has {
				t.Errorf("method lacks %q: %s", k, raw)
			}
		}
	}
	raw, _ := json.Marshal(pp.Methods[0].Error)
	var e map[string]any
	json.Unmarshal(raw, &e)
	if e["kind"] != "invalid_program" || !strings.Contains(e["message"].(string), "weight_streaming_budget") {
		t.Errorf("error JSON = %s", raw)
	}
	raw, _ = json.Marshal(ok.Methods[0])
	for _, want := range []string{`"error":null`, `"ok":true`, `"index":0`, `"backend":"TensorRTBackend"`, `"device":0`,
		`"source":"compile_spec"`, `"requested":1048576`, `"applied":null`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("JSON lacks %s: %s", want, raw)
		}
	}
}

func TestPlanProgramUsesRegistry(t *testing.T) {
	reg := &Registry{}
	reg.RegisterBackend(TensorRTBackendID, &toyBackend{available: false})
	pp := planVector(t, progOneEngine, PlanOptions{Registry: reg})
	if mp := pp.Methods[0]; mp.OK || mp.Error.Kind != "not_found" || len(mp.Delegates) != 0 {
		t.Errorf("plan with an unavailable backend = %+v", mp)
	}
}

// TestPlanProgramFacts checks that applied is null only when a fact is
// unstated or no budget applies, and that Assumed and Stated say which.
func TestPlanProgramFacts(t *testing.T) {
	tests := []struct {
		name      string
		vector    []testMethod
		opts      PlanOptions
		applied   *int64
		streaming *bool
		assumed   []string
		stated    []string
		reason    string
	}{
		{name: "nothing stated", vector: progOneEngine, assumed: []string{FactStreamable, FactScratch}, stated: []string{},
			reason: "not known"},
		{name: "nothing streamable", vector: progOneEngine, opts: PlanOptions{Streamable: i64(0), Scratch: i64(0)},
			streaming: ptrBool(false), assumed: []string{}, stated: []string{FactStreamable, FactScratch}, reason: "no streamable weights"},
		{name: "automatic unstated", vector: progNoBudgetSpec, opts: PlanOptions{Streamable: i64(gib)},
			streaming: ptrBool(true), assumed: []string{FactAutomatic, FactScratch}, stated: []string{FactStreamable}, reason: "automatic budget chosen by TensorRT"},
		{name: "automatic stated", vector: progNoBudgetSpec, opts: PlanOptions{Streamable: i64(gib), Scratch: i64(1), Automatic: i64(300 * mib)},
			applied: i64(300 * mib), streaming: ptrBool(true), assumed: []string{}, stated: []string{FactStreamable, FactScratch, FactAutomatic},
			reason: "automatic budget applied"},
		{name: "automatic above streamable falls back", vector: progNoBudgetSpec, opts: PlanOptions{Streamable: i64(mib), Scratch: i64(1), Automatic: i64(gib)},
			applied: i64(0), streaming: ptrBool(true), assumed: []string{}, stated: []string{FactStreamable, FactScratch, FactAutomatic},
			reason: "fell back to 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pp := planVector(t, tc.vector, tc.opts)
			b := pp.Methods[0].Delegates[0].Budget
			if !eqPtr(b.Applied, tc.applied) || (b.Streaming == nil) != (tc.streaming == nil) ||
				(b.Streaming != nil && *b.Streaming != *tc.streaming) || !strings.Contains(b.Reason, tc.reason) {
				t.Errorf("budget = applied %s streaming %v reason %q", fmtPtr(b.Applied), b.Streaming, b.Reason)
			}
			if !reflect.DeepEqual(pp.Assumed, tc.assumed) || !reflect.DeepEqual(pp.Stated, tc.stated) {
				t.Errorf("assumed %q stated %q; want %q %q", pp.Assumed, pp.Stated, tc.assumed, tc.stated)
			}
			// applied is null exactly when a fact is missing or nothing streams.
			missing := len(pp.Assumed) > 0 && !(len(pp.Assumed) == 1 && pp.Assumed[0] == FactScratch)
			if (b.Applied == nil) != (missing || (b.Streaming != nil && !*b.Streaming)) {
				t.Errorf("applied %s with assumed %q and streaming %v", fmtPtr(b.Applied), pp.Assumed, b.Streaming)
			}
			raw, _ := json.Marshal(b)
			if !strings.Contains(string(raw), `"streaming":`) {
				t.Errorf("JSON lacks streaming: %s", raw)
			}
		})
	}
}

func ptrBool(b bool) *bool { return &b }

// TestPlanProgramOtherBackends checks that a backend the planner does not
// model is a note, not a failure, and that TensorRT delegates after it are
// still planned; LoadMethod itself stays strict.
func TestPlanProgramOtherBackends(t *testing.T) {
	f := buildProgram(t, progTwoEngines...)
	f.Program.Plan(0).Delegates[0].ID = "XnnpackBackend"
	pp, err := PlanProgram(f, PlanOptions{Streamable: i64(gib), Scratch: i64(10)})
	if err != nil {
		t.Fatal(err)
	}
	mp := pp.Methods[0]
	if !mp.OK || len(mp.Delegates) != 2 || !reflect.DeepEqual(mp.NotModelled, []string{"XnnpackBackend"}) {
		t.Fatalf("method plan = %+v", mp)
	}
	x, trt := mp.Delegates[0], mp.Delegates[1]
	if x.Modelled || x.Backend != "XnnpackBackend" || x.Budget != nil || x.Device != nil || len(x.Notes) != 1 ||
		!strings.Contains(x.Notes[0], "not modelled") {
		t.Errorf("xnnpack delegate = %+v", x)
	}
	if !trt.Modelled || trt.Budget == nil || trt.Budget.Applied == nil || *trt.Budget.Applied != 524288 {
		t.Errorf("tensorrt delegate = %+v", trt)
	}
	reg := &Registry{}
	reg.RegisterBackend(TensorRTBackendID, acceptingBackend{})
	prog, err := Load(f, Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prog.LoadMethod("forward", nil); CodeOf(err) != CodeNotFound || !strings.Contains(err.Error(), "XnnpackBackend") {
		t.Errorf("LoadMethod with an unregistered backend: %v", err)
	}

	// Public XNNPACK programs (corpus files picked by that property) plan
	// without failing, their delegates not modelled.
	corpus := testkit.SharedDir(t, "corpus")
	for _, path := range testkit.Glob(t, corpus, "*.pte") {
		cf, err := pte.Open(path)
		if err != nil {
			continue // pte's and the conformance tests' business
		}
		xnn := false
		for _, ep := range cf.Program.Plans() {
			for _, d := range ep.Delegates {
				xnn = xnn || (d != nil && d.ID == "XnnpackBackend")
			}
		}
		if xnn {
			pp, err := PlanProgram(cf, PlanOptions{})
			if err != nil {
				t.Errorf("%s: %v", filepath.Base(path), err)
			}
			for _, mp := range pp.Methods {
				for _, d := range mp.Delegates {
					if d.Backend == "XnnpackBackend" && d.Modelled {
						t.Errorf("%s: method %s: xnnpack delegate %d modelled", filepath.Base(path), mp.Name, d.Index)
					}
				}
			}
		}
		cf.Close()
	}
}
