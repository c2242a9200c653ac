package export

import (
	"fmt"
	"slices"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/pte"
)

// specPlan holds what the options say about compile specs.
type specPlan struct {
	budget       []byte // canonical budget value, nil for none
	pinned       []byte // pinned target_device value, nil when derived
	pinnedByUser bool   // the pin came from Options.TargetDevice
}

func newSpecPlan(opts *Options) (*specPlan, error) {
	sp := &specPlan{}
	if opts.WeightStreamingBudget != nil {
		v, err := compilespec.FormatBudget(*opts.WeightStreamingBudget)
		if err != nil {
			return nil, &Error{Msg: "bad weight streaming budget", Err: err}
		}
		sp.budget = v
	}
	if opts.TargetDevice != "" {
		if _, _, err := compilespec.ParseTargetDevice([]byte(opts.TargetDevice)); err != nil {
			return nil, &Error{Msg: "bad target device", Err: err}
		}
		sp.pinned = []byte(opts.TargetDevice)
		sp.pinnedByUser = true
	}
	return sp, nil
}

// isBudgetKey reports whether a caller's key would be read as the budget
// key by the deployed runtime (which compares keys as C strings).
func isBudgetKey(key string) bool {
	return compilespec.CKeyEqual(key, compilespec.KeyWeightStreamingBudget)
}

// methodSpecs returns the caller's compile specs for method m (the
// options' specs, then the method's), refusing a hand-written budget.
func methodSpecs(opts *Options, m *Method, sp *specPlan) ([]*pte.CompileSpec, error) {
	var extra []*pte.CompileSpec
	for _, list := range [][]*pte.CompileSpec{opts.CompileSpecs, m.CompileSpecs} {
		for i, s := range list {
			if s == nil {
				return nil, &Error{Method: m.Name, Msg: fmt.Sprintf("compile_specs[%d] is nil", i)}
			}
			if isBudgetKey(s.Key) {
				return nil, &Error{Method: m.Name, Msg: fmt.Sprintf(
					"compile specs carry %q; set the budget with the weight streaming budget option (--weight-streaming-budget-per-engine, Options.WeightStreamingBudget) instead",
					compilespec.KeyWeightStreamingBudget)}
			}
			v := slices.Clone(s.Value)
			if v == nil {
				v = []byte{}
			}
			extra = append(extra, &pte.CompileSpec{Key: s.Key, Value: v})
		}
	}
	if len(compilespec.Find(extra, compilespec.KeyTargetDevice)) > 0 && sp.pinnedByUser {
		return nil, &Error{Method: m.Name, Msg: fmt.Sprintf(
			"compile specs pin %q and the target device option is also given; use one of them", compilespec.KeyTargetDevice)}
	}
	return extra, nil
}

// delegateSpecs returns the compile specs of one delegate, in upstream
// order: the caller's specs, then weight_streaming_budget (when a budget is
// set), then target_device (derived from the engine's device unless the
// caller pinned one).
func delegateSpecs(extra []*pte.CompileSpec, sp *specPlan, deviceID int64) []*pte.CompileSpec {
	specs := make([]*pte.CompileSpec, 0, len(extra)+2)
	for _, s := range extra {
		specs = append(specs, &pte.CompileSpec{Key: s.Key, Value: slices.Clone(s.Value)})
	}
	if sp.budget != nil {
		specs = append(specs, &pte.CompileSpec{Key: compilespec.KeyWeightStreamingBudget, Value: slices.Clone(sp.budget)})
	}
	switch {
	case sp.pinned != nil:
		specs = append(specs, &pte.CompileSpec{Key: compilespec.KeyTargetDevice, Value: slices.Clone(sp.pinned)})
	case len(compilespec.Find(extra, compilespec.KeyTargetDevice)) == 0:
		specs = append(specs, &pte.CompileSpec{Key: compilespec.KeyTargetDevice, Value: compilespec.FormatTargetDevice(int(deviceID))})
	}
	return specs
}

// methodWarnings returns the warnings for one method.
func methodWarnings(md *methodDef, extra []*pte.CompileSpec, sp *specPlan) []Warning {
	name := md.m.Name
	ws := engineCountWarnings(name, len(md.calls), sp.budget)
	pin := sp.pinned
	if pin == nil {
		if v, ok, _ := compilespec.Get(extra, compilespec.KeyTargetDevice); ok {
			pin = v
		}
	}
	if pin != nil {
		for _, c := range md.calls {
			if err := compilespec.CheckTargetDevice(pin, int(c.deviceID)); err != nil {
				ws = append(ws, Warning{Kind: WarnDeviceMismatch, Method: name, Msg: fmt.Sprintf(
					"engine %s: %v", c.label, err)})
			}
		}
	}
	for _, t := range md.inputs {
		if t.lastUse == len(md.calls) && !t.output && !usedByCall(md, t) {
			ws = append(ws, Warning{Kind: WarnUnusedInput, Method: name, Msg: fmt.Sprintf(
				"input %q is neither read by an engine nor returned", t.name)})
		}
	}
	return ws
}

func usedByCall(md *methodDef, t *tensorDef) bool {
	for _, c := range md.calls {
		if slices.Contains(c.inputs, t) {
			return true
		}
	}
	return false
}

// engineCountWarnings returns the warnings for a method with n engine
// calls: each call pays the delegate boundary, and a budget applies to
// each engine separately.
func engineCountWarnings(method string, n int, budget []byte) []Warning {
	if n <= 1 {
		return nil
	}
	ws := []Warning{{Kind: WarnMultipleEngines, Method: method, Msg: fmt.Sprintf(
		"%d TensorRT engine calls; each becomes its own delegate, so the delegate boundary overhead is paid %d times", n, n)}}
	if budget != nil {
		ws = append(ws, Warning{Kind: WarnBudgetPerEngine, Method: method, Msg: fmt.Sprintf(
			"the weight streaming budget (%s bytes) applies to each of the %d engines separately, not as a total, so resident weights can reach %d times the value given",
			budget, n, n)})
	}
	return ws
}
