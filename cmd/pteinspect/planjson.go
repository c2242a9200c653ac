package main

import (
	"errors"
	"io"
	"strconv"

	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/pte"
	"github.com/ptekit/ptekit/runtime"
)

// The JSON forms below are pteinspect's, documented in docs/json.md; they
// copy package runtime's plan rather than marshal it, so that its Go API
// can change without changing them.

// planDoc is what --plan --json prints.
type planDoc struct {
	// Error is set only when there is no plan (the program cannot be read
	// or opened); Methods is then empty.
	Error         *failureJSON `json:"error,omitempty"`
	Methods       []planMethod `json:"methods"`
	Assumed       []string     `json:"assumed"`
	Stated        []string     `json:"stated"`
	ScratchMemory *scratchJSON `json:"scratch_memory"`
}

type planMethod struct {
	Name             string         `json:"name"`
	OK               bool           `json:"ok"`
	Error            *planErrorJSON `json:"error"`
	Delegates        []planDelegate `json:"delegates"`
	MissingOperators []string       `json:"missing_operators"`
	NotModelled      []string       `json:"not_modelled"`
}

type planErrorJSON struct {
	Kind     string `json:"kind"`
	Message  string `json:"message"`
	Delegate *int   `json:"delegate"`
	// Unknown is true when the error is ptekit's, not the program's: it
	// did not read part of the program, so whether the method loads is
	// unknown (runtime.PlanError.Unknown). Always present.
	Unknown bool `json:"unknown"`
}

type planDelegate struct {
	Index         int         `json:"index"`
	Backend       string      `json:"backend"`
	Modelled      bool        `json:"modelled"`
	Device        *int        `json:"device"`
	Budget        *budgetJSON `json:"budget"`
	Inputs        []string    `json:"inputs"`
	Outputs       []string    `json:"outputs"`
	Scratch       *int64      `json:"scratch"`
	SharedScratch bool        `json:"shared_scratch"`
	Notes         []string    `json:"notes"`
}

type budgetJSON struct {
	Source     string `json:"source"`
	Requested  *int64 `json:"requested"`
	Applied    *int64 `json:"applied"`
	Streaming  *bool  `json:"streaming"`
	Streamable *int64 `json:"streamable"`
	Reason     string `json:"reason"`
}

type scratchJSON struct {
	WithoutPool   int64            `json:"without_pool"`
	WithPool      int64            `json:"with_pool"`
	Current       int64            `json:"current"`
	PoolPerDevice map[string]int64 `json:"pool_per_device"`
}

// newPlanDoc copies plan into its JSON form.
func newPlanDoc(plan *runtime.ProgramPlan) *planDoc {
	doc := &planDoc{Methods: []planMethod{}, Assumed: nonNil(plan.Assumed), Stated: nonNil(plan.Stated)}
	for _, m := range plan.Methods {
		pm := planMethod{Name: m.Name, OK: m.OK, Delegates: []planDelegate{},
			MissingOperators: nonNil(m.MissingOperators), NotModelled: nonNil(m.NotModelled)}
		if e := m.Error; e != nil {
			pm.Error = &planErrorJSON{Kind: e.Kind, Message: e.Message, Delegate: e.Delegate, Unknown: e.Unknown}
		}
		for _, d := range m.Delegates {
			pd := planDelegate{Index: d.Index, Backend: d.Backend, Modelled: d.Modelled, Device: d.Device,
				Inputs: nonNil(d.Inputs), Outputs: nonNil(d.Outputs), Scratch: d.Scratch,
				SharedScratch: d.SharedScratch, Notes: nonNil(d.Notes)}
			if b := d.Budget; b != nil {
				pd.Budget = &budgetJSON{Source: string(b.Source), Requested: b.Requested, Applied: b.Applied,
					Streaming: b.Streaming, Streamable: b.Streamable, Reason: b.Reason}
			}
			pm.Delegates = append(pm.Delegates, pd)
		}
		doc.Methods = append(doc.Methods, pm)
	}
	if sm := plan.ScratchMemory; sm != nil {
		doc.ScratchMemory = &scratchJSON{WithoutPool: sm.WithoutPool, WithPool: sm.WithPool, Current: sm.Current,
			PoolPerDevice: map[string]int64{}}
		for dev, n := range sm.PoolPerDevice {
			doc.ScratchMemory.PoolPerDevice[strconv.Itoa(dev)] = n
		}
	}
	return doc
}

// failureJSON says why a --json run has no result to print.
type failureJSON struct {
	// Kind is the ExecuTorch error class in snake case ("invalid_program",
	// "invalid_argument", "not_found", ...), or "access_failed" when the
	// file cannot be read.
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Offset is the file offset of the damage, nil when there is none.
	Offset *int64 `json:"offset"`
	// Path locates the damage in the program, in the names of the
	// problems' paths; "" when it is about the file as a whole.
	Path string `json:"path"`
}

// newFailure describes err, a failure to read, open or narrow a program.
func newFailure(err error) *failureJSON {
	out := &failureJSON{Message: oneLine(err.Error())}
	var fe *pte.FormatError
	var re *runtime.Error
	code := pte.CodeAccessFailed
	switch {
	case errors.As(err, &fe):
		code, out.Path = fe.Code, fe.Path
		if fe.Off >= 0 {
			off := fe.Off
			out.Offset = &off
		}
	case errors.As(err, &re):
		code = re.Code
	case errors.Is(err, inspect.ErrNoMethod), errors.Is(err, inspect.ErrNoBackend):
		code = pte.CodeNotFound
	}
	out.Kind = runtime.KindOf(code)
	return out
}

// writeFailure prints the JSON object of a --json run that failed before
// it had a result, so that pipelines get JSON whatever happens:
// {"error": {...}}, and for --plan also the plan's members, empty.
func writeFailure(w io.Writer, err error, plan bool) {
	f := newFailure(err)
	if plan {
		inspect.Encode(w, &planDoc{Error: f, Methods: []planMethod{}, Assumed: []string{}, Stated: []string{}})
		return
	}
	inspect.Encode(w, struct {
		Error *failureJSON `json:"error"`
	}{f})
}
