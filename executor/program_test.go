package executor

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/pte"
)

// toyBackend accepts every delegate, with its index as the handle.
type toyBackend struct {
	available bool
}

func (b *toyBackend) IsAvailable() bool { return b.available }
func (b *toyBackend) Init(ctx *InitContext, _ *pte.Payload, _ []*pte.CompileSpec) (Handle, error) {
	return ctx.DelegateIndex, nil
}
func (b *toyBackend) Destroy(Handle) {}

func loadToy(t *testing.T, shape []testMethod, b Backend) (*Method, error) {
	t.Helper()
	reg := &Registry{}
	if b != nil {
		if err := reg.RegisterBackend(TensorRTBackendID, b); err != nil {
			t.Fatal(err)
		}
	}
	prog, err := Load(buildProgram(t, shape...), Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return prog.LoadMethod("forward", nil)
}

// TestMissingOperators: a method loads without kernels, and names the
// operators its kernel calls need, once each, in first-use order.
func TestMissingOperators(t *testing.T) {
	m, err := loadToy(t, progKernelBetween, &toyBackend{available: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.MissingOperators(); !reflect.DeepEqual(got, []string{"aten::add.out"}) {
		t.Errorf("MissingOperators = %v", got)
	}
}

func TestLoadBackendLookup(t *testing.T) {
	_, err := loadToy(t, progOneEngine, nil)
	var re *Error
	if !errors.As(err, &re) || re.Code != CodeNotFound || re.Method != "forward" || re.Delegate != 0 ||
		!strings.Contains(err.Error(), "backend TensorRTBackend is not registered") || !strings.Contains(err.Error(), `method "forward"`) {
		t.Errorf("unregistered: %v", err)
	}
	_, err = loadToy(t, progOneEngine, &toyBackend{available: false})
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
	cb := &countingBackend{Backend: NewTensorRTBackend(fac)}
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
	if _, ok := lo.opts["A"]; len(lo.opts) != MaxOptionBackends || !ok {
		t.Errorf("backends = %v", lo.opts)
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
