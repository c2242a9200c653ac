package export

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/internal/quote"
	"github.com/ptekit/ptekit/pte"
)

// specPlan holds what the options say about compile specs.
type specPlan struct {
	budget compilespec.Budget // Options.WeightStreamingBudget
	pinned []byte             // Options.TargetDevice, nil when not given
	// top are the checked Options.CompileSpecs; topPin is the target_device
	// among them, nil when there is none.
	top    []*pte.CompileSpec
	topPin []byte
}

func newSpecPlan(opts *Options) (*specPlan, error) {
	sp := &specPlan{budget: opts.WeightStreamingBudget}
	if opts.TargetDevice != "" {
		if err := checkTargetDevice([]byte(opts.TargetDevice)); err != nil {
			return nil, newError("", "", "bad target device", err)
		}
		sp.pinned = []byte(opts.TargetDevice)
	}
	top, pin, err := checkSpecs(opts.CompileSpecs, "top-level compile_specs", "")
	if err != nil {
		return nil, err
	}
	if pin != nil && sp.pinned != nil {
		return nil, newError("", "", fmt.Sprintf(
			"top-level compile specs pin %s and the target device option is also given; use one of them", quote.String(compilespec.KeyTargetDevice)), nil)
	}
	sp.top, sp.topPin = top, pin
	return sp, nil
}

// checkTargetDevice checks a target_device value the way ExecuTorch's
// device propagation pass reads it; compilespec also refuses an index
// outside the int8 that ExecuTorch stores device indices in.
func checkTargetDevice(v []byte) error {
	_, _, err := compilespec.ParseTargetDevice(v)
	return err
}

// checkSpecs checks a caller's compile spec list (where names it in
// errors; method is "" for the top-level list) and returns a copy, and the
// value of its target_device entry (nil when there is none). A
// weight_streaming_budget key is refused, and so is a malformed or repeated
// target_device. Keys are compared as C strings, as C++ backends do.
func checkSpecs(list []*pte.CompileSpec, where, method string) (out []*pte.CompileSpec, pin []byte, err error) {
	for i, s := range list {
		if s == nil {
			return nil, nil, newError(method, "", fmt.Sprintf("%s[%d] is nil", where, i), nil)
		}
		if compilespec.CKeyEqual(s.Key, compilespec.KeyWeightStreamingBudget) {
			return nil, nil, newError(method, "", fmt.Sprintf(
				"%s[%d] carries %q; set the budget with the weight streaming budget option (--weight-streaming-budget-per-engine, Options.WeightStreamingBudget) instead",
				where, i, compilespec.KeyWeightStreamingBudget), nil)
		}
		v := slices.Clone(s.Value)
		if v == nil {
			v = []byte{}
		}
		if compilespec.CKeyEqual(s.Key, compilespec.KeyTargetDevice) {
			if pin != nil {
				return nil, nil, newError(method, "", fmt.Sprintf("%s[%d]: %q is given twice", where, i, compilespec.KeyTargetDevice), nil)
			}
			if err := checkTargetDevice(v); err != nil {
				return nil, nil, newError(method, "", fmt.Sprintf("%s[%d]: bad %s", where, i, compilespec.KeyTargetDevice), err)
			}
			pin = v
		}
		out = append(out, &pte.CompileSpec{Key: s.Key, Value: v})
	}
	return out, pin, nil
}

// methodSpecs returns the caller's compile specs for method m (the
// options' specs, then the method's) and the target_device they pin (nil
// when none).
func methodSpecs(m *Method, sp *specPlan) ([]*pte.CompileSpec, []byte, error) {
	own, pin, err := checkSpecs(m.CompileSpecs, "compile_specs", m.Name)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case pin != nil && sp.pinned != nil:
		return nil, nil, newError(m.Name, "", fmt.Sprintf(
			"compile specs pin %s and the target device option is also given; use one of them", quote.String(compilespec.KeyTargetDevice)), nil)
	case pin != nil && sp.topPin != nil:
		return nil, nil, newError(m.Name, "", fmt.Sprintf(
			"compile specs pin %s and the top-level compile specs pin it too; use one of them", quote.String(compilespec.KeyTargetDevice)), nil)
	case pin == nil:
		pin = sp.topPin
	}
	return append(slices.Clone(sp.top), own...), pin, nil
}

// delegateSpecs returns the compile specs of one delegate, in upstream
// order: the caller's specs, then weight_streaming_budget (when a budget is
// set), then target_device (derived from the engine's device unless the
// caller pinned one; a pin in the caller's specs stays where it is). The
// error is a device id no target_device can name; validation refuses such
// ids before this is reached.
func delegateSpecs(extra []*pte.CompileSpec, sp *specPlan, deviceID int64) ([]*pte.CompileSpec, error) {
	specs := make([]*pte.CompileSpec, 0, len(extra)+2)
	pinnedInSpecs := false
	for _, s := range extra {
		specs = append(specs, &pte.CompileSpec{Key: s.Key, Value: slices.Clone(s.Value)})
		pinnedInSpecs = pinnedInSpecs || compilespec.CKeyEqual(s.Key, compilespec.KeyTargetDevice)
	}
	if v := sp.budget.Spec(); v != nil {
		specs = append(specs, &pte.CompileSpec{Key: compilespec.KeyWeightStreamingBudget, Value: v})
	}
	switch {
	case sp.pinned != nil:
		specs = append(specs, &pte.CompileSpec{Key: compilespec.KeyTargetDevice, Value: slices.Clone(sp.pinned)})
	case !pinnedInSpecs:
		if deviceID < 0 || deviceID > compilespec.MaxDeviceIndex {
			// Checked here too: int(deviceID) could wrap on a 32-bit int.
			return nil, fmt.Errorf("device_id %d is outside [0, %d]", deviceID, compilespec.MaxDeviceIndex)
		}
		v, err := compilespec.EncodeTargetDevice(int(deviceID))
		if err != nil {
			return nil, err
		}
		specs = append(specs, &pte.CompileSpec{Key: compilespec.KeyTargetDevice, Value: v})
	}
	return specs, nil
}

// sameSpecs reports whether a and b hold the same keys and values, in
// order: what delegateSpecs makes of them is then the same.
func sameSpecs(a, b []*pte.CompileSpec) bool {
	return slices.EqualFunc(a, b, func(x, y *pte.CompileSpec) bool { return x.Key == y.Key && bytes.Equal(x.Value, y.Value) })
}

// methodWarnings returns the warnings for one method; pin is the
// target_device pinned by the caller's specs, nil when none.
func methodWarnings(md *methodDef, pin []byte, sp *specPlan) []Warning {
	name := md.m.Name
	ws := engineCountWarnings(name, len(md.calls), sp.budget, true)
	if sp.pinned != nil {
		pin = sp.pinned
	}
	if pin != nil {
		for _, c := range md.calls {
			ws = append(ws, deviceWarnings(name, callLabel(c.index, c.name), pin, c.deviceID)...)
		}
	}
	for _, t := range md.inputs {
		if t.lastUse == len(md.calls) && !t.output && !usedByCall(md, t) {
			ws = append(ws, Warning{Kind: WarnUnusedInput, Method: name, Msg: fmt.Sprintf(
				"input %s is neither read by an engine nor returned", quote.String(t.name))})
		}
	}
	return ws
}

// deviceWarnings warns when a pinned target_device disagrees with the
// device an engine was built for. The warning is a sentence for people
// (the --json document's message is the line standard error shows), so
// it leaves out the Go package name the error starts with.
func deviceWarnings(method, engine string, pin []byte, deviceID int64) []Warning {
	if err := compilespec.CheckTargetDevice(pin, int(deviceID)); err != nil {
		return []Warning{{Kind: WarnDeviceMismatch, Method: method, Msg: fmt.Sprintf("engine %s: %s", engine, strings.TrimPrefix(err.Error(), "compilespec: "))}}
	}
	return nil
}

func usedByCall(md *methodDef, t *tensorDef) bool {
	return slices.ContainsFunc(md.calls, func(c *callDef) bool { return slices.Contains(c.inputs, t) })
}

// engineCountWarnings returns the warnings for a method with n engine
// calls: each call pays the delegate boundary (only when building: a
// re-bake builds no engine calls, the boundaries are already there), and a
// non-zero budget applies to each engine separately (a budget of 0 adds up
// to nothing).
func engineCountWarnings(method string, n int, budget compilespec.Budget, building bool) []Warning {
	if n <= 1 {
		return nil
	}
	var ws []Warning
	if building {
		ws = append(ws, Warning{Kind: WarnMultipleEngines, Method: method, Msg: fmt.Sprintf(
			"%d TensorRT engine calls; each becomes its own delegate, so the delegate boundary overhead is paid %d times", n, n)})
	}
	if b, ok := budget.Bytes(); ok && b > 0 {
		reach := fmt.Sprintf("%d × %s", n, budget)
		if total, ok := budget.Total(n); ok {
			reach = fmt.Sprintf("%s (%s)", compilespec.FormatSize(total), reach)
		}
		ws = append(ws, Warning{Kind: WarnBudgetPerEngine, Method: method, Msg: fmt.Sprintf(
			"the weight streaming budget applies to each of the %d engines separately, not as a total: resident weights can reach %s",
			n, reach)})
	}
	return ws
}
