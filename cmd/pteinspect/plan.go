package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/pte"
	"github.com/ptekit/ptekit/pte/ptejson"
	"github.com/ptekit/ptekit/runtime"
)

// runPlan loads every method the way ExecuTorch with the TensorRT delegate
// would, without a GPU, and prints each engine's plan or the load error.
// It exits 1 when a method fails to load.
func runPlan(f *pte.File, name string, w, stderr io.Writer, o *options) int {
	opts := runtime.PlanOptions{LoadOptions: &runtime.LoadOptions{}}
	for _, s := range o.backendOptions {
		id, opt, err := runtime.ParseBackendOption(s)
		if err != nil {
			return usageErr(stderr, "--backend-option: %v", err)
		}
		if err := opts.LoadOptions.Add(id, opt); err != nil {
			return usageErr(stderr, "--backend-option %s: %v", s, err)
		}
	}
	var err error
	if opts.Streamable, err = sizeFlag("--streamable-bytes", o.streamable); err != nil {
		return usageErr(stderr, "%v", err)
	}
	if opts.Scratch, err = sizeFlag("--scratch-bytes", o.scratch); err != nil {
		return usageErr(stderr, "%v", err)
	}
	plan, err := runtime.PlanProgram(f, opts)
	if err != nil {
		if o.json {
			writePlanFailure(w, err)
		}
		return failErr(stderr, name, err)
	}
	narrowPlan(plan, o)
	code := exitOK
	for _, m := range plan.Methods {
		if !m.OK {
			code = exitFail
		}
	}
	if o.json {
		if err := ptejson.Encode(w, plan); err != nil {
			return failErr(stderr, name, err)
		}
		return code
	}
	printPlan(w, plan)
	return code
}

// narrowPlan keeps the method of --method and the delegates of --delegate.
func narrowPlan(plan *runtime.ProgramPlan, o *options) {
	if o.method != "" {
		plan.Methods = slices.DeleteFunc(plan.Methods, func(m runtime.MethodPlan) bool { return m.Name != o.method })
	}
	if o.backend != "" {
		for i := range plan.Methods {
			m := &plan.Methods[i]
			m.Delegates = slices.DeleteFunc(m.Delegates, func(d runtime.DelegatePlan) bool { return d.Backend != o.backend })
		}
	}
}

// planFailure is what --plan --json prints when there is no program to
// plan: the reason, and no methods.
type planFailure struct {
	Error   planFailureError     `json:"error"`
	Methods []runtime.MethodPlan `json:"methods"`
}

type planFailureError struct {
	Kind    string `json:"kind"` // as runtime.PlanError.Kind
	Message string `json:"message"`
}

// writePlanFailure prints a planFailure for err, so that pipelines reading
// --plan --json get JSON whatever happens.
func writePlanFailure(w io.Writer, err error) {
	code := runtime.CodeOf(err)
	if !isFormatOrRuntime(err) {
		code = pte.CodeAccessFailed // the file could not be read
	}
	ptejson.Encode(w, planFailure{
		Error:   planFailureError{Kind: runtime.KindOf(code), Message: oneLine(err.Error())},
		Methods: []runtime.MethodPlan{},
	})
}

func isFormatOrRuntime(err error) bool {
	var fe *pte.FormatError
	var re *runtime.Error
	return errors.As(err, &fe) || errors.As(err, &re)
}

func sizeFlag(flag, s string) (*int64, error) {
	if s == "" {
		return nil, nil
	}
	n, auto, err := compilespec.ParseSize(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", flag, err)
	}
	if auto {
		return nil, fmt.Errorf("%s: give a size, not %q", flag, s)
	}
	return &n, nil
}

func optBytes(p *int64, unknown string) string {
	if p == nil {
		return unknown
	}
	return fmt.Sprintf("%d (%s)", *p, humanSize(*p))
}

func printPlan(w io.Writer, plan *runtime.ProgramPlan) {
	if len(plan.Assumed) > 0 {
		fmt.Fprintf(w, "assumed: %s (no engine binding; state them with --streamable-bytes / --scratch-bytes)\n\n",
			strings.Join(plan.Assumed, ", "))
	}
	for i, m := range plan.Methods {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if m.OK {
			fmt.Fprintf(w, "method %s: loads\n", m.Name)
		} else {
			fmt.Fprintf(w, "method %s: FAILS to load: %s: %s\n", m.Name, m.Error.Kind, oneLine(m.Error.Message))
		}
		for _, d := range m.Delegates {
			dev := "-"
			if d.Device != nil {
				dev = "cuda:" + strconv.Itoa(*d.Device)
			}
			fmt.Fprintf(w, "  [%d] %s  device %s\n", d.Index, d.Backend, dev)
			t := newTable(w, "      ")
			if b := d.Budget; b != nil {
				t.row("budget source", string(b.Source))
				t.row("requested", optBytes(b.Requested, "none (automatic)"))
				t.row("applied", optBytes(b.Applied, "unknown: depends on an engine fact nobody stated"))
				t.row("streamable", optBytes(b.Streamable, "unknown"))
				if b.Reason != "" {
					t.row("reason", b.Reason)
				}
			}
			if d.Budget != nil || len(d.Inputs)+len(d.Outputs) > 0 {
				t.row("inputs", quoteAll(d.Inputs))
				t.row("outputs", quoteAll(d.Outputs))
			}
			if d.Scratch != nil {
				shared := ""
				if d.SharedScratch {
					shared = ", shared pool"
				}
				t.row("scratch", optBytes(d.Scratch, "unknown")+shared)
			}
			for _, n := range d.Notes {
				t.row("note", n)
			}
			t.flush()
		}
		if len(m.MissingOperators) > 0 {
			fmt.Fprintf(w, "  operators without a kernel here (fail at execution, not load): %s\n", strings.Join(m.MissingOperators, ", "))
		}
	}
	if sm := plan.ScratchMemory; sm != nil && sm.WithoutPool > 0 {
		fmt.Fprintf(w, "\nscratch memory: %s with a context each, %s with the shared pool, %s as configured\n",
			humanSize(sm.WithoutPool), humanSize(sm.WithPool), humanSize(sm.Current))
	}
}
