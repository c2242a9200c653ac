package executor

import (
	"errors"
	"fmt"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/pte"
)

// BudgetSource says where a weight streaming budget came from.
type BudgetSource string

// Budget sources, in the TensorRT delegate's order of precedence.
const (
	SourceLoadOption  BudgetSource = "load_option"  // load-time option weight_streaming_budget
	SourceCompileSpec BudgetSource = "compile_spec" // the delegate's weight_streaming_budget compile spec
	SourceAutomatic   BudgetSource = "automatic"    // neither: TensorRT's automatic budget
)

// Plan is what the TensorRT backend decided for one engine. Every pointer
// field is nil when the value is not known (a stand-in engine whose facts
// were not stated) or does not apply.
type Plan struct {
	// Method is the name of the method the delegate belongs to.
	Method string `json:"method"`
	// Delegate is the delegate's index in the method's delegates.
	Delegate int `json:"delegate"`
	// Backend is the delegate's backend id.
	Backend string `json:"backend"`
	// Device is the CUDA device the engine runs on: the blob's device_id as
	// the deployed reader reads it.
	Device int `json:"device"`
	// Inputs and Outputs are the engine's binding names as the deployed
	// reader reads them.
	Inputs  []string `json:"inputs"`
	Outputs []string `json:"outputs"`

	// BudgetPlan is the weight streaming decision; the facts its figures
	// needed but nobody stated are in Assumed.
	BudgetPlan
	// Notes lists other decisions worth knowing, such as an empty load-time
	// option that was ignored.
	Notes []string `json:"notes,omitempty"`

	// Scratch is the activation scratch memory the execution context needs.
	Scratch *int64 `json:"scratch"`
	// SharedScratch says whether the engine uses the shared scratch pool
	// (the setting in force when it was initialized).
	SharedScratch bool `json:"shared_scratch"`
	// Assumed lists the engine facts (FactStreamable, FactScratch,
	// FactAutomatic) this plan needed but the (stand-in) engine was not
	// told: the figures that depend on them are nil.
	Assumed []string `json:"assumed,omitempty"`
}

// Resolution is the outcome of ResolveBudget: which budget the delegate
// asks for, before the engine is consulted.
type Resolution struct {
	// Source is where the budget comes from; for a failed resolution, the
	// input that was rejected.
	Source BudgetSource
	// Explicit is true for SourceLoadOption and SourceCompileSpec.
	Explicit bool
	// Bytes is the explicit budget (0 for automatic).
	Bytes int64
	// Notes holds non-fatal findings (an empty load-time string).
	Notes []string
}

// Messages of the TensorRT delegate for a rejected budget, kept close to
// the upstream log text.
const (
	msgMalformedOption   = "malformed weight_streaming_budget runtime option"
	msgBadOptionType     = "weight_streaming_budget runtime option must be a non-negative int or a decimal byte string"
	msgEmptyOption       = "weight_streaming_budget runtime option is empty and was ignored"
	msgDuplicateSpec     = "duplicate weight_streaming_budget compile spec"
	msgMalformedSpec     = "malformed weight_streaming_budget compile spec"
	msgNotStreamable     = "weight_streaming_budget ignored; engine has no streamable weights (it was not built with enable_weight_streaming=True, or none of its weights are streamable). The engine runs with all weights resident."
	msgAutomaticFallback = "automatic weight streaming budget failed; falling back to budget 0 (stream all weights)"
)

// ResolveBudget decides the weight streaming budget of one TensorRT delegate
// from its load-time options (runtimeSpecs: the options addressed to
// TensorRTBackend) and compile specs, exactly as TensorRTBackend::init does:
//
//  1. The first load-time option weight_streaming_budget, if any: a
//     non-empty string is parsed with compilespec.ParseBudgetOption (a
//     malformed one fails); an empty string is noted and ignored; an int
//     >= 0 is taken as is; a bool or a negative int fails.
//  2. Otherwise the compile specs: two with the key (compared as C strings)
//     fail; one is read with compilespec.SpecBudget (malformed fails).
//     When step 1 produced a value the compile specs are not examined at
//     all, so a broken spec is then harmless.
//  3. Otherwise the budget is automatic.
//
// Failures are *Error with code InvalidProgram; the Resolution returned
// with them has Source set to the input that was rejected
// (SourceLoadOption or SourceCompileSpec), for the plan of the failed load.
func ResolveBudget(runtimeSpecs []Option, specs []*pte.CompileSpec) (Resolution, error) {
	var res Resolution
	if v, ok := LookupOption(runtimeSpecs, compilespec.KeyWeightStreamingBudget); ok {
		res.Source = SourceLoadOption
		switch v.Kind() {
		case OptionString:
			s, _ := v.Str()
			n, err := compilespec.ParseBudgetOption(s)
			switch {
			case errors.Is(err, compilespec.ErrEmptyBudgetOption):
				res.Source = ""
				res.Notes = append(res.Notes, msgEmptyOption)
			case err != nil:
				return res, wrapError(CodeInvalidProgram, msgMalformedOption, err)
			default:
				return Resolution{Source: SourceLoadOption, Explicit: true, Bytes: n}, nil
			}
		case OptionInt:
			if n, _ := v.Int(); n >= 0 {
				return Resolution{Source: SourceLoadOption, Explicit: true, Bytes: int64(n)}, nil
			}
			fallthrough // a negative int
		default:
			return res, errorf(CodeInvalidProgram, "%s (got the %s %s)", msgBadOptionType, v.Kind(), v)
		}
	}
	b, err := compilespec.SpecBudget(specs)
	var dup *compilespec.DuplicateKeyError
	res.Source = SourceCompileSpec
	switch {
	case errors.As(err, &dup):
		return res, errorf(CodeInvalidProgram, "%s (compile_specs[%d] and compile_specs[%d])", msgDuplicateSpec, dup.Indices[0], dup.Indices[1])
	case err != nil:
		return res, wrapError(CodeInvalidProgram,
			fmt.Sprintf("%s (compile_specs[%d])", msgMalformedSpec, compilespec.Find(specs, compilespec.KeyWeightStreamingBudget)[0]), err)
	case b.IsAuto():
		res.Source = SourceAutomatic
		return res, nil
	}
	res.Explicit = true
	res.Bytes, _ = b.Bytes()
	return res, nil
}
