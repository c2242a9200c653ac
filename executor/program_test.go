package executor

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/pte"
)

// toyBackend doubles its float64 input into its output slot.
type toyBackend struct {
	available bool
	calls     [][]int32
}

func (b *toyBackend) IsAvailable() bool { return b.available }
func (b *toyBackend) Init(ctx *InitContext, _ *pte.Payload, _ []*pte.CompileSpec) (Handle, error) {
	return ctx.DelegateIndex, nil
}
func (b *toyBackend) Execute(ctx *ExecuteContext, h Handle, args []Arg) error {
	var idx []int32
	for _, a := range args {
		idx = append(idx, a.Index)
	}
	b.calls = append(b.calls, idx)
	if h.(int) != ctx.DelegateIndex {
		return errors.New("handle mix-up")
	}
	x, ok := (*args[0].Slot).(float64)
	if !ok {
		return Errorf(CodeInvalidArgument, "input %d is %T", args[0].Index, *args[0].Slot)
	}
	*args[1].Slot = 2 * x
	return nil
}
func (b *toyBackend) Destroy(Handle) {}

func loadToy(t *testing.T, shape []testMethod, b Backend, kernels map[string]Kernel) (*Method, error) {
	t.Helper()
	reg := &Registry{}
	if b != nil {
		if err := reg.RegisterBackend(TensorRTBackendID, b); err != nil {
			t.Fatal(err)
		}
	}
	for n, k := range kernels {
		if err := reg.RegisterKernel(n, k); err != nil {
			t.Fatal(err)
		}
	}
	prog, err := Load(buildProgram(t, shape...), Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return prog.LoadMethod("forward", nil)
}

func TestExecuteChain(t *testing.T) {
	tb := &toyBackend{available: true}
	var alpha any
	add := func(ctx *ExecuteContext, args []Arg) error {
		// aten::add.out(self, other, alpha, out, out): self + alpha
		alpha = *args[2].Slot
		*args[3].Slot = (*args[0].Slot).(float64) + float64((*args[2].Slot).(int64))
		return nil
	}
	m, err := loadToy(t, progKernelBetween, tb, map[string]Kernel{"aten::add.out": add})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.MissingOperators(); got != nil {
		t.Errorf("MissingOperators = %v", got)
	}
	out, err := m.Execute(context.Background(), []any{3.0})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0] != 14.0 { // ((3*2)+1)*2
		t.Errorf("outputs = %v, want [14]", out)
	}
	if alpha != int64(1) {
		t.Errorf("alpha slot = %#v, want the program's Int 1", alpha)
	}
	if want := [][]int32{{0, 1}, {4, 5}}; !reflect.DeepEqual(tb.calls, want) {
		t.Errorf("delegate args = %v, want %v (inputs then outputs)", tb.calls, want)
	}
	if _, err := m.Execute(context.Background(), nil); CodeOf(err) != CodeInvalidArgument {
		t.Errorf("wrong input count: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Execute(ctx, []any{1.0}); CodeOf(err) != CodeInvalidState {
		t.Errorf("cancelled: %v", err)
	}
}

func TestExecuteMissingOperator(t *testing.T) {
	m, err := loadToy(t, progKernelBetween, &toyBackend{available: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.MissingOperators(); !reflect.DeepEqual(got, []string{"aten::add.out"}) {
		t.Errorf("MissingOperators = %v", got)
	}
	_, err = m.Execute(context.Background(), []any{1.0})
	var re *Error
	if !errors.As(err, &re) || re.Code != CodeOperatorMissing || re.Instruction != 1 || !strings.Contains(err.Error(), "aten::add.out") {
		t.Errorf("error = %v", err)
	}
}

func TestLoadBackendLookup(t *testing.T) {
	_, err := loadToy(t, progOneEngine, nil, nil)
	var re *Error
	if !errors.As(err, &re) || re.Code != CodeNotFound || re.Method != "forward" || re.Delegate != 0 ||
		!strings.Contains(err.Error(), "backend TensorRTBackend is not registered") || !strings.Contains(err.Error(), `method "forward"`) {
		t.Errorf("unregistered: %v", err)
	}
	_, err = loadToy(t, progOneEngine, &toyBackend{available: false}, nil)
	if !errors.As(err, &re) || re.Code != CodeNotFound || !strings.Contains(err.Error(), "not available") {
		t.Errorf("unavailable: %v", err)
	}
	prog, err := Load(buildProgram(t, progOneEngine...), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prog.LoadMethod("nope", nil); CodeOf(err) != CodeInvalidArgument || !strings.Contains(err.Error(), "forward") {
		t.Errorf("unknown method: %v", err)
	}
	if _, err := Load(nil, Config{}); CodeOf(err) != CodeInvalidArgument {
		t.Errorf("nil file: %v", err)
	}
}

func TestDestroyAfterLaterFailure(t *testing.T) {
	fac := &fakeFactory{template: fakeEngine{streamable: gib, refuse: func(n int64) bool { return n == 524288 }}}
	cb := &countingBackend{Backend: NewTensorRTBackend(fac, nil)}
	reg := &Registry{}
	reg.RegisterBackend(TensorRTBackendID, cb)
	prog, err := Load(buildProgram(t, progTwoEngines...), Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	m, err := prog.LoadMethod("forward", nil)
	var re *Error
	if !errors.As(err, &re) || re.Delegate != 1 || re.Code != CodeInvalidProgram {
		t.Fatalf("error = %v", err)
	}
	if cb.inits.Load() != 1 || cb.destroys.Load() != 1 {
		t.Errorf("inits %d destroys %d; want 1 and 1", cb.inits.Load(), cb.destroys.Load())
	}
	if len(fac.engines) != 2 || !fac.engines[0].closed || !fac.engines[1].closed {
		t.Errorf("engines not all released")
	}
	if m != nil {
		t.Errorf("LoadMethod returned a method with its error")
	}
	// The plans of both delegates stay visible through the error, the
	// failing one included.
	plans := re.Plans
	if len(plans) != 2 || plans[0].Applied == nil || *plans[0].Applied != 1048576 ||
		plans[1].Requested == nil || *plans[1].Requested != 524288 || plans[1].Applied != nil ||
		!strings.Contains(plans[1].Reason, "refused budget 524288") {
		t.Errorf("plans = %+v", plans)
	}
}

func TestTensorRTExecuteArgs(t *testing.T) {
	m, err, fac, _ := loadTRT(t, progTwoEngines, nil, nil, fakeEngine{streamable: gib})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Execute(WithStream(context.Background(), "s1"), []any{"x"}); err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]int32{{0, 1}, {1, 2}} {
		c := fac.engines[i].contexts[0]
		var got []int32
		for _, a := range c.lastArgs {
			got = append(got, a.Index)
		}
		if !reflect.DeepEqual(got, want) || c.enqueues != 1 || c.userManaged || c.scratchUsed[0] != nil {
			t.Errorf("engine %d: args %v enqueues %d", i, got, c.enqueues)
		}
	}
	fac.engines[0].contexts[0].enqueueErr = errors.New("cuda error")
	_, err = m.Execute(context.Background(), []any{"x"})
	var re *Error
	if !errors.As(err, &re) || re.Code != CodeInvalidState || re.Delegate != 0 || re.Instruction != 0 || !strings.Contains(err.Error(), "cuda error") {
		t.Errorf("enqueue failure: %v", err)
	}
}

func TestLoadOptions(t *testing.T) {
	var lo LoadOptions
	ok := []Option{
		{Key: strings.Repeat("k", MaxOptionKeyLen), Value: Int(1)},
		{Key: "s", Value: String(strings.Repeat("9", MaxOptionStringLen))},
		{Key: "b", Value: Bool(false)},
	}
	if err := lo.Add("A", ok...); err != nil {
		t.Fatalf("valid options refused: %v", err)
	}
	bad := []Option{
		{Key: strings.Repeat("k", MaxOptionKeyLen+1), Value: Int(1)},
		{Key: "s", Value: String(strings.Repeat("9", MaxOptionStringLen+1))},
		{Key: "", Value: Int(1)},
		{Key: "n", Value: String("a\x00b")},
		{Key: "k\x00", Value: Int(1)},
		{Key: "z"},
	}
	for _, o := range bad {
		if err := lo.Add("A", Option{Key: "fine", Value: Int(1)}, o); CodeOf(err) != CodeInvalidArgument {
			t.Errorf("Add(%q) = %v", o.Key, err)
		}
	}
	if got := len(lo.Options("A")); got != 3 {
		t.Errorf("refused Add changed the options: %d", got)
	}
	for i := 1; i < MaxOptionBackends; i++ {
		if err := lo.Add(string(rune('A'+i)), Option{Key: "k", Value: Int(1)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := lo.Add("overflow", Option{Key: "k", Value: Int(1)}); err == nil {
		t.Errorf("%d backends accepted", MaxOptionBackends+1)
	}
	if err := lo.Add(strings.Repeat("b", MaxBackendIDLen+1)); err == nil {
		t.Errorf("long backend id accepted")
	}
	if got := lo.Backends(); len(got) != MaxOptionBackends || got[0] != "A" {
		t.Errorf("Backends = %v", got)
	}
	var nilOpts *LoadOptions
	if nilOpts.Options("A") != nil {
		t.Error("nil LoadOptions has options")
	}
}

func TestParseBackendOption(t *testing.T) {
	tests := []struct {
		in, id, key string
		val         OptionValue
		bad         bool
	}{
		{in: "TensorRTBackend:weight_streaming_budget=2048", id: "TensorRTBackend", key: "weight_streaming_budget", val: Int(2048)},
		{in: "TensorRTBackend:weight_streaming_budget=8589934592", id: "TensorRTBackend", key: "weight_streaming_budget", val: String("8589934592")},
		{in: `T:k="2048"`, id: "T", key: "k", val: String("2048")},
		{in: "T:k=string:2048", id: "T", key: "k", val: String("2048")},
		{in: "T:k=true", id: "T", key: "k", val: Bool(true)},
		{in: "T:k=bool:0", id: "T", key: "k", val: Bool(false)},
		{in: "T:k=int:-5", id: "T", key: "k", val: Int(-5)},
		{in: "T:k=", id: "T", key: "k", val: String("")},
		{in: "T:k=int:3000000000", bad: true},
		{in: "T:k=bool:maybe", bad: true},
		{in: "k=1", bad: true},
		{in: "T:=1", bad: true},
		{in: "T:k", bad: true},
		{in: "T:k=" + strings.Repeat("x", 256), bad: true},
	}
	for _, tc := range tests {
		id, o, err := ParseBackendOption(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseBackendOption(%q) accepted", tc.in)
			}
			continue
		}
		if err != nil || id != tc.id || o.Key != tc.key || o.Value != tc.val {
			t.Errorf("ParseBackendOption(%q) = %q, %v, %v", tc.in, id, o, err)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	e := &Error{Code: CodeInvalidProgram, Method: "forward", Delegate: 1, Backend: "TensorRTBackend", Instruction: -1,
		Msg: "malformed", Err: errors.New("detail")}
	want := `runtime: method "forward" delegate 1 (TensorRTBackend): malformed: detail [InvalidProgram]`
	if e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
	if e.Kind() != "invalid_program" || KindOf(CodeNotFound) != "not_found" || KindOf(CodeInvalidArgument) != "invalid_argument" {
		t.Errorf("kinds: %s %s", e.Kind(), KindOf(CodeNotFound))
	}
	if got := errorf(CodeNotFound, "x").Error(); got != "runtime: x [NotFound]" {
		t.Errorf("bare error = %q", got)
	}
	if CodeOf(nil) != pte.CodeOk || CodeOf(errors.New("x")) != CodeInternal || CodeOf(&pte.FormatError{Code: CodeNotFound}) != CodeNotFound {
		t.Error("CodeOf")
	}
}
