package executor

import (
	"errors"
	"log/slog"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/pte"
)

const (
	gib = int64(1) << 30
	mib = int64(1) << 20
)

func spec(k, v string) *pte.CompileSpec { return &pte.CompileSpec{Key: k, Value: []byte(v)} }

func budgetSpec(v string) *pte.CompileSpec { return spec(compilespec.KeyWeightStreamingBudget, v) }

func wsb(v OptionValue) Option { return Option{Key: compilespec.KeyWeightStreamingBudget, Value: v} }

// loadTRT loads method "forward" of a program built with shape, with every
// TensorRT delegate's compile specs replaced by specs (unless nil), the
// given load-time options and a fake engine built from tmpl.
func loadTRT(t *testing.T, shape []testMethod, specs []*pte.CompileSpec, opts *LoadOptions, tmpl fakeEngine) (*Method, error, *fakeFactory, []logRecord) {
	t.Helper()
	f := buildProgram(t, shape...)
	if specs != nil {
		for _, d := range f.Program.Plan(0).Delegates {
			d.CompileSpecs = specs
		}
	}
	fac := &fakeFactory{template: tmpl}
	reg := &Registry{}
	if err := reg.RegisterBackend(TensorRTBackendID, NewTensorRTBackend(fac)); err != nil {
		t.Fatal(err)
	}
	log, records := newCapture()
	prog, err := Load(f, Config{Registry: reg, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	m, err := prog.LoadMethod("forward", opts)
	t.Cleanup(func() {
		if m != nil {
			m.Close()
		}
	})
	return m, err, fac, records()
}

func opts(t *testing.T, backend string, o ...Option) *LoadOptions {
	t.Helper()
	lo := &LoadOptions{}
	if err := lo.Add(backend, o...); err != nil {
		t.Fatal(err)
	}
	return lo
}

func i64(n int64) *int64 { return &n }

func TestTensorRTBudgetResolution(t *testing.T) {
	streaming := fakeEngine{streamable: gib, automatic: 300 * mib}
	refuseAuto := streaming
	refuseAuto.refuse = func(n int64) bool { return n == 300*mib }
	refuseAll := streaming
	refuseAll.refuse = func(int64) bool { return true }
	resident := fakeEngine{streamable: 0, automatic: 0}
	malformed, dup := budgetSpec("12x"), []*pte.CompileSpec{budgetSpec("1"), spec("target_device", "cuda:0"), budgetSpec("2")}
	tests := []struct {
		name     string
		specs    []*pte.CompileSpec
		opts     []Option
		backend  string // backend id the options address; TensorRTBackend when ""
		engine   fakeEngine
		code     pte.Code // CodeOk when the load succeeds
		errSub   string
		source   BudgetSource
		req      *int64
		applied  *int64
		setCalls []int64
		reason   string
		logErr   string // an Error-level record containing this
	}{
		{name: "string option beats spec", specs: []*pte.CompileSpec{budgetSpec("1048576")}, opts: []Option{wsb(String("2048"))},
			engine: streaming, source: SourceLoadOption, req: i64(2048), applied: i64(2048), setCalls: []int64{2048}, reason: "requested budget applied"},
		{name: "int option beats spec", specs: []*pte.CompileSpec{budgetSpec("1048576")}, opts: []Option{wsb(Int(4096))},
			engine: streaming, source: SourceLoadOption, req: i64(4096), applied: i64(4096), setCalls: []int64{4096}},
		{name: "compile spec", specs: []*pte.CompileSpec{budgetSpec("1048576"), spec("target_device", "cuda:0")},
			engine: streaming, source: SourceCompileSpec, req: i64(mib), applied: i64(mib), setCalls: []int64{mib}},
		{name: "automatic", specs: []*pte.CompileSpec{spec("target_device", "cuda:0")},
			engine: streaming, source: SourceAutomatic, applied: i64(300 * mib), setCalls: []int64{300 * mib}, reason: "automatic budget applied"},
		{name: "empty string falls through to spec", specs: []*pte.CompileSpec{budgetSpec("1048576")}, opts: []Option{wsb(String(""))},
			engine: streaming, source: SourceCompileSpec, req: i64(mib), applied: i64(mib), setCalls: []int64{mib},
			logErr: "runtime option is empty and was ignored"},
		{name: "empty string falls through to automatic", specs: []*pte.CompileSpec{}, opts: []Option{wsb(String(""))},
			engine: streaming, source: SourceAutomatic, applied: i64(300 * mib), setCalls: []int64{300 * mib},
			logErr: "runtime option is empty and was ignored"},
		{name: "bool option fails", specs: []*pte.CompileSpec{budgetSpec("1048576")}, opts: []Option{wsb(Bool(true))},
			engine: streaming, source: SourceLoadOption, reason: "load fails: weight_streaming_budget runtime option must be", code: CodeInvalidProgram, errSub: "must be a non-negative int or a decimal byte string",
			logErr: "must be a non-negative int"},
		{name: "negative int fails", specs: []*pte.CompileSpec{budgetSpec("1048576")}, opts: []Option{wsb(Int(-1))},
			engine: streaming, source: SourceLoadOption, reason: "load fails", code: CodeInvalidProgram, errSub: "got the int -1"},
		{name: "int32 min fails", opts: []Option{wsb(Int(math.MinInt32))},
			engine: streaming, source: SourceLoadOption, reason: "load fails", code: CodeInvalidProgram, errSub: "-2147483648"},
		{name: "int32 max clamps", opts: []Option{wsb(Int(math.MaxInt32))},
			engine: streaming, source: SourceLoadOption, req: i64(math.MaxInt32), applied: i64(gib), setCalls: []int64{gib},
			reason: "clamped to the streamable weight size 1073741824"},
		{name: "int zero streams everything", opts: []Option{wsb(Int(0))},
			engine: streaming, source: SourceLoadOption, req: i64(0), applied: i64(0), setCalls: []int64{0}},
		{name: "string minus zero", opts: []Option{wsb(String("-0"))},
			engine: streaming, source: SourceLoadOption, req: i64(0), applied: i64(0), setCalls: []int64{0}},
		{name: "string above int32", opts: []Option{wsb(String("8589934592"))}, engine: fakeEngine{streamable: 16 * gib},
			source: SourceLoadOption, req: i64(8 * gib), applied: i64(8 * gib), setCalls: []int64{8 * gib}},
		{name: "malformed string option fails", specs: []*pte.CompileSpec{budgetSpec("1048576")}, opts: []Option{wsb(String("2 GiB"))},
			engine: streaming, source: SourceLoadOption, reason: "load fails: malformed weight_streaming_budget runtime option", code: CodeInvalidProgram, errSub: "malformed weight_streaming_budget runtime option",
			logErr: "malformed weight_streaming_budget runtime option"},
		{name: "malformed spec fails", specs: []*pte.CompileSpec{malformed},
			engine: streaming, source: SourceCompileSpec, reason: "load fails: malformed weight_streaming_budget compile spec", code: CodeInvalidProgram, errSub: "malformed weight_streaming_budget compile spec (compile_specs[0])"},
		{name: "duplicate spec fails", specs: dup,
			engine: streaming, source: SourceCompileSpec, reason: "load fails: duplicate", code: CodeInvalidProgram, errSub: "duplicate weight_streaming_budget compile spec (compile_specs[0] and compile_specs[2])",
			logErr: "duplicate weight_streaming_budget compile spec"},
		{name: "duplicate spec even if identical", specs: []*pte.CompileSpec{budgetSpec("7"), budgetSpec("7")},
			engine: streaming, source: SourceCompileSpec, code: CodeInvalidProgram, errSub: "duplicate"},
		{name: "key with NUL matches as C string", specs: []*pte.CompileSpec{budgetSpec("7"), spec(compilespec.KeyWeightStreamingBudget+"\x00x", "8")},
			engine: streaming, source: SourceCompileSpec, code: CodeInvalidProgram, errSub: "duplicate"},
		{name: "valid string hides duplicate spec", specs: dup, opts: []Option{wsb(String("2048"))},
			engine: streaming, source: SourceLoadOption, req: i64(2048), applied: i64(2048), setCalls: []int64{2048}},
		{name: "valid int hides malformed spec", specs: []*pte.CompileSpec{malformed}, opts: []Option{wsb(Int(5))},
			engine: streaming, source: SourceLoadOption, req: i64(5), applied: i64(5), setCalls: []int64{5}},
		{name: "empty string does not hide malformed spec", specs: []*pte.CompileSpec{malformed}, opts: []Option{wsb(String(""))},
			engine: streaming, source: SourceCompileSpec, code: CodeInvalidProgram, errSub: "malformed weight_streaming_budget compile spec"},
		{name: "first option wins", opts: []Option{wsb(String("100")), wsb(Bool(true))},
			engine: streaming, source: SourceLoadOption, req: i64(100), applied: i64(100), setCalls: []int64{100}},
		{name: "first option wins even if bad", opts: []Option{wsb(Bool(false)), wsb(String("100"))},
			engine: streaming, source: SourceLoadOption, code: CodeInvalidProgram, errSub: "got the bool false"},
		{name: "clamp spec to streamable", specs: []*pte.CompileSpec{budgetSpec("1099511627776")}, engine: fakeEngine{streamable: mib},
			source: SourceCompileSpec, req: i64(1 << 40), applied: i64(mib), setCalls: []int64{mib}, reason: "clamped"},
		{name: "automatic falls back to 0", engine: refuseAuto,
			source: SourceAutomatic, applied: i64(0), setCalls: []int64{300 * mib, 0}, reason: "fell back to 0"},
		{name: "automatic and 0 refused", engine: refuseAll, source: SourceAutomatic, reason: "the engine refused budget 314572800, and fallback to 0 also failed", code: CodeInvalidProgram,
			errSub: "setWeightStreamingBudgetV2 failed (requested=314572800, and fallback to 0 also failed)", setCalls: []int64{300 * mib, 0}},
		{name: "explicit budget refused", specs: []*pte.CompileSpec{budgetSpec("4096")}, engine: refuseAll, source: SourceCompileSpec, req: i64(4096), reason: "the engine refused budget 4096", code: CodeInvalidProgram,
			errSub: "setWeightStreamingBudgetV2 failed (requested=4096)", setCalls: []int64{4096}},
		{name: "non-streamable with budget is reported", specs: []*pte.CompileSpec{budgetSpec("4096")}, engine: resident,
			source: SourceCompileSpec, req: i64(4096), reason: "no streamable weights: the requested budget is ignored",
			logErr: "engine has no streamable weights"},
		{name: "non-streamable without budget", engine: resident, source: SourceAutomatic, reason: "all weights stay resident"},
		{name: "non-streamable with malformed spec still fails", specs: []*pte.CompileSpec{malformed}, engine: resident,
			source: SourceCompileSpec, code: CodeInvalidProgram, errSub: "malformed"},
		{name: "options for another backend are ignored", specs: []*pte.CompileSpec{budgetSpec("1048576")},
			opts: []Option{wsb(Bool(true))}, backend: "XnnpackBackend",
			engine: streaming, source: SourceCompileSpec, req: i64(mib), applied: i64(mib), setCalls: []int64{mib}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			specs := tc.specs
			if specs == nil {
				specs = []*pte.CompileSpec{}
			}
			var lo *LoadOptions
			if tc.opts != nil {
				backend := tc.backend
				if backend == "" {
					backend = TensorRTBackendID
				}
				lo = opts(t, backend, tc.opts...)
			}
			m, err, fac, logs := loadTRT(t, progOneEngine, specs, lo, tc.engine)
			var plans []*Plan
			if tc.code != pte.CodeOk {
				var re *Error
				if !errors.As(err, &re) || re.Code != tc.code || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("error = %v; want %v containing %q", err, tc.code, tc.errSub)
				}
				if m != nil || re.Method != "forward" || re.Delegate != 0 || re.Backend != TensorRTBackendID {
					t.Errorf("method %v, error location = %q/%d/%q", m, re.Method, re.Delegate, re.Backend)
				}
				if len(fac.engines) != 1 || !fac.engines[0].closed {
					t.Errorf("engine not released after a failed init")
				}
				plans = re.Plans
			} else {
				if err != nil {
					t.Fatalf("LoadMethod: %v", err)
				}
				plans = m.Plans()
			}
			if len(fac.engines) == 1 && !reflect.DeepEqual(fac.engines[0].setCalls, tc.setCalls) {
				t.Errorf("SetBudget calls = %v, want %v", fac.engines[0].setCalls, tc.setCalls)
			}
			if tc.logErr != "" && !hasLog(logs, slog.LevelError, tc.logErr) {
				t.Errorf("no Error record containing %q in %v", tc.logErr, logs)
			}
			if len(plans) != 1 {
				t.Fatalf("%d plans", len(plans))
			}
			p := plans[0]
			if p.Source != tc.source || !eqPtr(p.Requested, tc.req) || !eqPtr(p.Applied, tc.applied) {
				t.Errorf("plan = source %s requested %s applied %s; want %s %s %s",
					p.Source, fmtPtr(p.Requested), fmtPtr(p.Applied), tc.source, fmtPtr(tc.req), fmtPtr(tc.applied))
			}
			if !strings.Contains(p.Reason, tc.reason) {
				t.Errorf("reason %q does not contain %q", p.Reason, tc.reason)
			}
			if p.Method != "forward" || p.Delegate != 0 || p.Backend != TensorRTBackendID || p.Device != 0 ||
				!reflect.DeepEqual(p.Inputs, []string{"x"}) || !reflect.DeepEqual(p.Outputs, []string{"y"}) {
				t.Errorf("plan identity = %+v", p)
			}
			// The engine is consulted only once the budget is resolved.
			resolved := tc.code == pte.CodeOk || strings.Contains(tc.errSub, "setWeightStreamingBudgetV2")
			if resolved {
				if p.Streamable == nil || *p.Streamable != tc.engine.streamable ||
					p.Streaming == nil || *p.Streaming != (tc.engine.streamable > 0) {
					t.Errorf("streamable = %s, streaming = %v", fmtPtr(p.Streamable), p.Streaming)
				}
			} else if p.Streamable != nil || p.Streaming != nil || p.Applied != nil {
				t.Errorf("engine facts in the plan of a budget that failed to resolve: %+v", p)
			}
			if p.Applied == nil && resolved && tc.code == pte.CodeOk && (p.Streaming == nil || *p.Streaming) {
				t.Errorf("applied is null although every fact is known and the engine streams")
			}
			if p.Applied != nil && !hasLog(logs, slog.LevelInfo, "weight streaming budget") {
				t.Errorf("no Info record for the applied budget")
			}
		})
	}
}

func TestTwoDelegatesGetTheSameOptions(t *testing.T) {
	lo := opts(t, TensorRTBackendID, wsb(String("2048")), Option{Key: "other", Value: Int(1)})
	m, err, fac, _ := loadTRT(t, progTwoEngines, nil, lo, fakeEngine{streamable: gib})
	if err != nil {
		t.Fatal(err)
	}
	plans := m.Plans()
	if len(plans) != 2 || len(fac.engines) != 2 {
		t.Fatalf("%d plans, %d engines", len(plans), len(fac.engines))
	}
	for i, p := range plans {
		if p.Delegate != i || p.Source != SourceLoadOption || *p.Requested != 2048 || *p.Applied != 2048 {
			t.Errorf("plan %d = %+v", i, p)
		}
	}
	// Without the option each engine has its own compile spec.
	m, err, _, _ = loadTRT(t, progTwoEngines, nil, nil, fakeEngine{streamable: gib})
	if err != nil {
		t.Fatal(err)
	}
	plans = m.Plans()
	if *plans[0].Applied != 1048576 || *plans[1].Applied != 524288 {
		t.Errorf("per-spec budgets = %d, %d", *plans[0].Applied, *plans[1].Applied)
	}
}

func TestResolveBudgetDirect(t *testing.T) {
	res, err := ResolveBudget(nil, nil)
	if err != nil || res.Source != SourceAutomatic || res.Explicit {
		t.Errorf("empty = %+v, %v", res, err)
	}
	// A string that is empty as a C string is ignored like "" (LoadOptions
	// refuses NUL bytes, but ResolveBudget takes any option list).
	res, err = ResolveBudget([]Option{wsb(String("\x00"))}, []*pte.CompileSpec{budgetSpec("9")})
	if err != nil || res.Source != SourceCompileSpec || res.Bytes != 9 || len(res.Notes) != 1 {
		t.Errorf("NUL-only string = %+v, %v", res, err)
	}
	res, err = ResolveBudget([]Option{wsb(String(strings.Repeat("0", 300) + "5"))}, nil)
	if err != nil || res.Bytes != 0 {
		// only the first 255 bytes (all zeros) are seen by the delegate
		t.Errorf("long string = %+v, %v", res, err)
	}
}

func hasLog(logs []logRecord, level slog.Level, sub string) bool {
	for _, r := range logs {
		if r.Level == level && strings.Contains(r.Msg, sub) {
			return true
		}
	}
	return false
}

func eqPtr(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func fmtPtr(p *int64) string {
	if p == nil {
		return "nil"
	}
	return strconv.FormatInt(*p, 10)
}
