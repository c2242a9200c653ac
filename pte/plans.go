package pte

import (
	"fmt"
	"iter"

	"github.com/ptekit/ptekit/internal/quote"
)

// A Program's execution plans are read through its methods, never a
// field, so that every Program answers alike: one built in memory (or set
// with SetPlans) holds them in executionPlan, one read by a File opened
// with OpenOptions.LazyPlans decodes each from the File's verified region
// when asked, each with its own decoder, which knows the positions of its
// tables (for findings) and is dropped with it.

// Slots of the Program table (execution plans, segments) and of the
// ExecutionPlan table (name, delegates) in schema/program.fbs.
const (
	slotProgramPlans    = 1
	slotProgramSegments = 4
	slotPlanName        = 0
	slotPlanDelegate    = 7
)

// SetPlans sets the execution plans (methods) of the program: nil for an
// absent execution_plan vector, an empty slice for a present empty one.
// It is how a program built in memory gets its plans.
func (p *Program) SetPlans(plans []*ExecutionPlan) {
	p.executionPlan, p.file = plans, nil
}

// NumPlans returns the number of execution plans (methods) of the program.
func (p *Program) NumPlans() int {
	if p.file == nil {
		return len(p.executionPlan)
	}
	_, n, _ := rootTab(p.file.region).vec(slotProgramPlans)
	return int(n)
}

// HasPlans reports whether the program has an execution_plan vector, maybe
// empty (the model tells an absent vector from an empty one; SetPlans(nil)
// makes it absent).
func (p *Program) HasPlans() bool {
	if p.file == nil {
		return p.executionPlan != nil
	}
	_, _, ok := rootTab(p.file.region).vec(slotProgramPlans)
	return ok
}

// Plan returns execution plan i, or nil when i is out of range. Of a
// Program read with OpenOptions.LazyPlans the plan is decoded from the
// file on every call and the Program keeps no reference to it: the caller
// may keep or drop it.
func (p *Program) Plan(i int) *ExecutionPlan {
	if p.file == nil {
		if i < 0 || i >= len(p.executionPlan) {
			return nil
		}
		return p.executionPlan[i]
	}
	ep, _ := p.file.planAt(i, false)
	return ep
}

// Plans yields each execution plan with its index, in order, as Plan
// returns it (read with OpenOptions.LazyPlans: one decoded plan at a time,
// which the Program forgets once the loop moves on).
func (p *Program) Plans() iter.Seq2[int, *ExecutionPlan] {
	return func(yield func(int, *ExecutionPlan) bool) {
		for i, n := 0, p.NumPlans(); i < n; i++ {
			if !yield(i, p.Plan(i)) {
				return
			}
		}
	}
}

// decoded returns p with every execution plan in executionPlan (p itself
// unless it reads them from a File), for the encoder, which walks them more
// than once.
func (p *Program) decoded() *Program {
	if p.file == nil {
		return p
	}
	cp := *p
	cp.SetPlans(make([]*ExecutionPlan, 0, p.NumPlans())) // Open refuses a program without the vector
	for _, ep := range p.Plans() {
		cp.executionPlan = append(cp.executionPlan, ep)
	}
	return &cp
}

// PlanDelegates returns the delegates of execution plan i (nil when i is
// out of range or the plan has none), as Plan(i).Delegates would, but read
// with OpenOptions.LazyPlans decoding only them: a view that wants the
// delegates of every plan (which backends, which segments they use) need
// not decode their values and instructions.
func (p *Program) PlanDelegates(i int) []*BackendDelegate {
	return planPart(p, i, func(ep *ExecutionPlan) []*BackendDelegate { return ep.Delegates }, (*fbDecoder).decodeExecutionPlanDelegates)
}

// PlanValues returns the values of execution plan i (nil when i is out of
// range or the plan has none), as Plan(i).Values would, but read with
// OpenOptions.LazyPlans decoding only them: a view that wants what every
// plan's tensors are (which come from .ptd files, say) need not decode
// their instructions and delegates.
func (p *Program) PlanValues(i int) []*EValue {
	return planPart(p, i, func(ep *ExecutionPlan) []*EValue { return ep.Values }, (*fbDecoder).decodeExecutionPlanValues)
}

// planPart returns one part of execution plan i (the zero T when i is out
// of range or the plan is nil): of the plan held, else decoded alone from
// the plan's table, without positions.
func planPart[T any](p *Program, i int, of func(*ExecutionPlan) T, decode func(*fbDecoder, fbTab) T) T {
	var zero T
	if p.file == nil {
		if ep := p.Plan(i); ep != nil {
			return of(ep)
		}
		return zero
	}
	t, ok := rootTab(p.file.region).tableAt(slotProgramPlans, i)
	if !ok {
		return zero
	}
	return decode(p.file.decoder(false), t)
}

// PlanHasExternalData reports whether a tensor of execution plan i keeps
// its data outside the program (TensorDataLocationEXTERNAL), for a data
// file (.ptd) to provide; false when i is out of range. Read with
// OpenOptions.LazyPlans it answers from what Open noted as it checked the
// plan's values, without decoding them again.
func (p *Program) PlanHasExternalData(i int) bool {
	if p.file == nil {
		ep := p.Plan(i)
		return ep != nil && hasExternalData(ep.Values)
	}
	return i >= 0 && i < len(p.file.external) && p.file.external[i]
}

// PlanName returns the name of execution plan i, "" when i is out of range
// or the plan has no name. It does not decode the plan.
func (p *Program) PlanName(i int) string {
	if p.file == nil {
		if ep := p.Plan(i); ep != nil {
			return ep.Name
		}
		return ""
	}
	t, ok := rootTab(p.file.region).tableAt(slotProgramPlans, i)
	if !ok {
		return ""
	}
	var absent []string
	// Through the shared strings: a name many plans share is copied once.
	return p.file.dec.str(t, slotPlanName, "name", &absent)
}

// planIndexScans is how many PlanIndex calls scan the plans before the
// File indexes their names: a view looks one or two methods up, and an
// index of 65536 names would cost it more memory than the rest of its
// work; a caller that looks up every method (a load plan) would scan
// quadratically without one.
const planIndexScans = 16

// PlanIndex returns the index of the first execution plan named name, as
// ExecuTorch's Program::get_method finds it, or -1. It does not decode the
// plans (see PlanName): the first calls compare names one by one, the
// later ones look them up in an index of the names built once.
func (f *File) PlanIndex(name string) int {
	if f.nameLookups.Add(1) > planIndexScans {
		f.byNameOnce.Do(func() {
			n := f.Program.NumPlans()
			f.byName = make(map[string]int, n)
			for i := n - 1; i >= 0; i-- {
				f.byName[f.Program.PlanName(i)] = i // the first plan of a name wins
			}
		})
		if i, ok := f.byName[name]; ok {
			return i
		}
		return -1
	}
	for i, n := 0, f.Program.NumPlans(); i < n; i++ {
		if f.Program.PlanName(i) == name {
			return i
		}
	}
	return -1
}

// decoder returns a decoder of plans of f's region, which records table
// positions when asked (and f records them at all).
func (f *File) decoder(positions bool) *fbDecoder {
	return newDecoder(f.dec.v, f.dec.shared, positions && f.positions)
}

// planAt returns execution plan i and the decoder that decoded it; nil
// when i is out of range. With lazy plans the decoder records the
// positions of the plan's tables only when asked: they are wanted only for
// findings, and recording them costs a map entry per table.
func (f *File) planAt(i int, positions bool) (*ExecutionPlan, *fbDecoder) {
	if !f.lazy {
		return f.Program.Plan(i), f.dec
	}
	t, ok := rootTab(f.region).tableAt(slotProgramPlans, i)
	if !ok {
		return nil, nil
	}
	d := f.decoder(positions)
	return d.decodeExecutionPlan(t), d
}

// delegateAt returns delegate di of plan i and the decoder that decoded
// it, decoding only that delegate when plans are lazy (and recording its
// positions only when positions is set); the errors are DelegateData's
// for indices out of range.
func (f *File) delegateAt(plan, di int, positions bool) (*BackendDelegate, *fbDecoder, error) {
	if n := f.Program.NumPlans(); plan < 0 || plan >= n {
		return nil, nil, &FormatError{Off: -1, Path: "execution_plan",
			Msg: fmt.Sprintf("execution plan %d out of range (%d plans)", plan, n), Code: CodeInvalidArgument}
	}
	outOfRange := func(off int64, n int) error {
		return &FormatError{Off: off, Path: fmt.Sprintf("execution_plan[%d].delegates", plan),
			Msg:  fmt.Sprintf("method %s: delegate %d out of range (%d delegates)", quote.String(f.Program.PlanName(plan)), di, n),
			Code: CodeInvalidArgument}
	}
	if !f.lazy {
		ep := f.Program.executionPlan[plan]
		if di < 0 || di >= len(ep.Delegates) {
			return nil, nil, outOfRange(f.dec.posOf(ep), len(ep.Delegates))
		}
		return ep.Delegates[di], f.dec, nil
	}
	t, _ := rootTab(f.region).tableAt(slotProgramPlans, plan)
	dt, ok := t.tableAt(slotPlanDelegate, di)
	if !ok {
		_, n, _ := t.vec(slotPlanDelegate)
		return nil, nil, outOfRange(int64(t.pos), int(n))
	}
	d := f.decoder(positions)
	return d.decodeBackendDelegate(dt), d, nil
}
