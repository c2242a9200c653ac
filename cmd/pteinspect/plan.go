package main

import (
	"fmt"
	"github.com/ptekit/ptekit/internal/quote"
	"io"
	"slices"
	"strings"

	"github.com/ptekit/ptekit/check"
	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/executor"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/cli"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// runPlan loads every method the way ExecuTorch with the TensorRT delegate
// would, without a GPU, and prints each engine's plan or the load error.
// It exits 1 when a method fails to load, and also when ptekit cannot tell
// whether it loads (PlanError.Unknown): the plan could not be made, so a
// pipeline gating on the exit status must not take it for a pass, while
// the output says the outcome is unknown rather than a failure.
func runPlan(f *pte.File, name string, w, stderr io.Writer, o *options, srcs []ptd.Source) int {
	opts := executor.PlanOptions{LoadOptions: &executor.LoadOptions{}, DataFiles: srcs}
	for _, s := range o.backendOptions {
		id, opt, err := executor.ParseBackendOption(s)
		if err != nil {
			return usageErr(stderr, "--backend-option: %v", err)
		}
		if err := opts.LoadOptions.Add(id, opt); err != nil {
			return usageErr(stderr, "--backend-option %s: %v", s, err)
		}
	}
	facts := engineFacts(o, &opts)
	for i := range facts {
		fc := &facts[i]
		v, err := sizeFlag(fc.flag, *fc.value)
		if err != nil {
			return usageErr(stderr, "%v", err)
		}
		*fc.option = v
	}
	check.Prefetch(f) // the plan reads every blob's header and metadata
	plan, err := executor.PlanProgram(f, opts)
	if err != nil {
		return failure(w, stderr, name, o, err)
	}
	inspect.NarrowPlan(plan, o.method, o.backend)
	code := exitOK
	for _, m := range plan.Methods {
		if !m.OK {
			code = exitFail
		}
	}
	var ext *inspect.ExternalData
	if len(srcs) > 0 {
		ext = inspect.NewExternalData(plan.Data, o.method)
		if plan.DataError != nil {
			code = exitFail
		}
	}
	if o.json {
		if err := inspect.Encode(w, &inspect.PlanDocument{ProgramPlan: plan, ExternalData: ext}); err != nil {
			return failErr(stderr, name, err)
		}
		return code
	}
	if plan.DataError != nil {
		fmt.Fprintf(w, "data files FAIL to load (%s): %s; the methods below are planned without them\n\n",
			plan.DataError.Kind, escText(cli.OneLine(plan.DataError.Message)))
	}
	printPlan(w, f, plan, facts, opts.LoadOptions)
	printExternalData(w, f, ext)
	return code
}

// engineFact is an engine fact the stand-in engine of --plan can be told,
// with its flag.
type engineFact struct {
	fact  string  // executor.FactStreamable, ...
	what  string  // what it is, for people
	flag  string  // the flag that states it
	value *string // the flag's value, "" when not given
	// option is where the plan's options take the value, nil when not
	// given.
	option **int64
	// unknown says what a plan without the fact lacks.
	unknown string
}

func engineFacts(o *options, po *executor.PlanOptions) []engineFact {
	return []engineFact{
		{fact: executor.FactStreamable, what: "streamable weight size", flag: "--streamable-bytes", value: &o.streamable,
			option: &po.Streamable, unknown: "unknown, so applied budgets are open"},
		{fact: executor.FactScratch, what: "activation scratch size", flag: "--scratch-bytes", value: &o.scratch,
			option: &po.Scratch, unknown: "unknown, so scratch memory is open"},
		{fact: executor.FactAutomatic, what: "automatic budget", flag: "--automatic-bytes", value: &o.automatic,
			option: &po.Automatic, unknown: "TensorRT computes it on the device, so it is open"},
	}
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
		return nil, fmt.Errorf("%s: give a size, not %s", flag, quote.String(s))
	}
	return &n, nil
}

func optBytes(p *int64, unknown string) string {
	if p == nil {
		return unknown
	}
	return fmt.Sprintf("%d (%s)", *p, compilespec.FormatSizeApprox(*p))
}

// printPlan prints the plan for a terminal: the engine facts it rests on,
// then per method whether it loads and each delegate's plan.
func printPlan(w io.Writer, f *pte.File, plan *executor.ProgramPlan, facts []engineFact, lo *executor.LoadOptions) {
	if len(plan.Assumed)+len(plan.Stated) > 0 {
		fmt.Fprintln(w, "engine facts (no engine binding: a stand-in engine plans with these):")
		t := newTable(w, "  ")
		for _, fc := range facts {
			switch {
			case slices.Contains(plan.Stated, fc.fact):
				t.row(fc.what, fmt.Sprintf("%s, stated with %s", optBytes(*fc.option, "?"), fc.flag))
			case slices.Contains(plan.Assumed, fc.fact):
				t.row(fc.what, fmt.Sprintf("%s; state it with %s", fc.unknown, fc.flag))
			}
		}
		t.flush()
		fmt.Fprintln(w)
	}
	for i, m := range plan.Methods {
		if i > 0 {
			fmt.Fprintln(w)
		}
		assuming := ""
		if len(m.NotModelled) > 0 {
			assuming = fmt.Sprintf(" (if its %s delegates do: not modelled here)", strings.Join(m.NotModelled, ", "))
		}
		switch {
		case m.OK:
			fmt.Fprintf(w, "method %s: loads%s\n", esc(m.Name), escText(assuming))
		case m.Error.Unknown:
			fmt.Fprintf(w, "method %s: load outcome UNKNOWN: %s\n", esc(m.Name), escText(unknownReason(f, &m)))
		default:
			fmt.Fprintf(w, "method %s: FAILS to load: %s: %s\n", esc(m.Name), m.Error.Kind, escText(cli.Plain(m.Error.Message)))
		}
		// The method's delegates, decoded once for all of them (a method
		// of 8192 engines decoded once per engine took 24 s).
		ds := f.Program.PlanDelegates(f.PlanIndex(m.Name))
		for _, d := range m.Delegates {
			printDelegatePlan(w, &m, &d, pinnedDevice(ds, d.Index), lo)
		}
		if len(m.MissingOperators) > 0 {
			fmt.Fprintf(w, "  operators without a kernel here (fail at execution, not load): %s\n", strings.Join(each(m.MissingOperators, esc), ", "))
		}
	}
	if sm := plan.ScratchMemory; sm != nil && sm.WithoutPool > 0 {
		fmt.Fprintf(w, "\nscratch memory: %s with a context each, %s with the shared pool, %s as configured\n",
			compilespec.FormatSizeApprox(sm.WithoutPool), compilespec.FormatSizeApprox(sm.WithPool), compilespec.FormatSizeApprox(sm.Current))
	}
}

// pinnedDevice returns the target_device compile spec of delegate di of
// a method whose delegates are ds, or nil.
func pinnedDevice(ds []*pte.BackendDelegate, di int) []byte {
	if di >= 0 && di < len(ds) && ds[di] != nil {
		return pinnedSpec(ds[di])
	}
	return nil
}

// pinText says how a target_device pin relates to the engine's device.
func pinText(pin []byte, device int) string {
	if pin == nil {
		return ""
	}
	err := compilespec.CheckTargetDevice(pin, device)
	if err == nil {
		return fmt.Sprintf(", pinned target_device %s", inspect.SpecValueText(pin))
	}
	return fmt.Sprintf(", pinned target_device %s: MISMATCH (%v)", inspect.SpecValueText(pin), err)
}

func printDelegatePlan(w io.Writer, m *executor.MethodPlan, d *executor.DelegatePlan, pin []byte, lo *executor.LoadOptions) {
	switch {
	case !d.Modelled:
		fmt.Fprintf(w, "  [%d] %s  (not modelled)\n", d.Index, esc(d.Backend))
	case d.Device != nil:
		fmt.Fprintf(w, "  [%d] %s  device cuda:%d%s\n", d.Index, esc(d.Backend), *d.Device, escText(pinText(pin, *d.Device)))
	default:
		fmt.Fprintf(w, "  [%d] %s\n", d.Index, esc(d.Backend))
	}
	t := newTable(w, "      ")
	if b := d.Budget; b != nil {
		t.row("budget source", string(b.Source))
		t.row("requested", escText(requestedText(b, d, lo)))
		t.row("applied", appliedBudget(m, d))
		t.row("streamable", optBytes(b.Streamable, "unknown"))
		if b.Reason != "" {
			t.row("reason", escText(cli.Plain(b.Reason)))
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
		t.row("note", escText(n))
	}
	t.flush()
}

// unknownReason says why ptekit cannot tell whether method m loads. For a
// TensorRT blob whose metadata ptekit did not read it gives the sizes from
// the blob's header; otherwise it falls back to the load error's message.
func unknownReason(f *pte.File, m *executor.MethodPlan) string {
	fallback := "ptekit did not read all it needs, so it cannot tell whether the method loads (not known to fail): " +
		cli.Plain(m.Error.Message)
	if m.Error.Delegate == nil {
		return fallback
	}
	plan := f.PlanIndex(m.Name)
	if plan < 0 {
		return fallback
	}
	di := *m.Error.Delegate
	if d := f.Program.PlanDelegates(plan); di < 0 || di >= len(d) || d[di] == nil || !delegate.IsTensorRT(d[di].ID) {
		return fallback
	}
	pl, err := f.DelegateData(plan, di)
	if err != nil {
		return fallback
	}
	v, err := delegate.ReadDeployed(pl, pl.Size())
	if err != nil || !v.MetadataUnread {
		return fallback
	}
	return fmt.Sprintf("ptekit did not read the metadata of delegate %d's TensorRT blob (%d bytes > the %d MiB it reads), so it cannot tell whether the method loads (not known to fail)",
		di, v.MetadataSize, delegate.MaxMetadataSize>>20)
}

// appliedBudget says which budget is in force on a TensorRT engine, or why
// none is, or which unstated fact it depends on.
func appliedBudget(m *executor.MethodPlan, d *executor.DelegatePlan) string {
	b := d.Budget
	switch {
	case b.Applied != nil:
		return optBytes(b.Applied, "")
	case b.Streaming != nil && !*b.Streaming:
		return "none: no budget applies (nothing streamable)"
	case m.Error != nil && m.Error.Delegate != nil && *m.Error.Delegate == d.Index:
		return "none: the delegate fails to load"
	case b.Streaming == nil:
		return "unknown: depends on the streamable weight size (state it with --streamable-bytes)"
	}
	return "unknown: TensorRT computes the automatic budget on the device (state it with --automatic-bytes)"
}

// requestedText is the budget an engine was asked for. When the request
// could not be read (Requested is nil although the source is a load
// option), it shows the option given, so the user sees which value failed.
func requestedText(b *executor.BudgetPlan, d *executor.DelegatePlan, lo *executor.LoadOptions) string {
	if b.Requested != nil {
		return optBytes(b.Requested, "")
	}
	if b.Source == executor.SourceLoadOption && lo != nil {
		var given []string
		for _, o := range lo.Options(d.Backend) {
			if compilespec.CKeyEqual(o.Key, compilespec.KeyWeightStreamingBudget) {
				given = append(given, o.String())
			}
		}
		if len(given) > 0 {
			return "INVALID load option " + strings.Join(given, ", ")
		}
	}
	if b.Source == executor.SourceCompileSpec {
		return "INVALID compile spec (see the load error)"
	}
	return "none (automatic)"
}
