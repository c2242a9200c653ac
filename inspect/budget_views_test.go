package inspect

import (
	"testing"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

// TestBudgetViewsAskCompilespec (issue 22 item 6): on every shared
// program, the views show a delegate's weight_streaming_budget as
// compilespec reads and renders it, not by a reading of their own: the
// summary's group budget is compilespec.Budget.String with its bytes, the
// method's total adds up compilespec's budgets, and the compile spec rows
// decode a valid budget as Budget.Describe.
func TestBudgetViewsAskCompilespec(t *testing.T) {
	paths := testkit.SharedPrograms(t, 0)
	if len(paths) == 0 {
		t.Skip("no shared programs")
	}
	checked := 0
	for _, path := range paths {
		f, err := pte.Open(path)
		if err != nil {
			continue // a program pte refuses has no budget to show
		}
		sum, _, err := Summarize(f, &Options{})
		if err != nil {
			f.Close()
			continue
		}
		for _, m := range sum.Methods {
			ep := f.Program.Plan(m.Index)
			var total int64
			budgeted := 0
			for _, d := range ep.Delegates {
				if d == nil || !delegate.IsTensorRT(d.ID) {
					continue
				}
				for _, cs := range d.CompileSpecs {
					if cs == nil || !compilespec.CKeyEqual(cs.Key, compilespec.KeyWeightStreamingBudget) {
						continue
					}
					if b, err := compilespec.ParseBudgetSpec(cs.Value); err == nil {
						if got := DecodeSpec(cs.Key, cs.Value); cs.Key == compilespec.KeyWeightStreamingBudget && got != b.Describe() {
							t.Errorf("%s %s: compile spec row decodes %q as %q; compilespec describes it as %q", path, ep.Name, cs.Value, got, b.Describe())
						}
					}
				}
				first := compilespec.Find(d.CompileSpecs, compilespec.KeyWeightStreamingBudget)
				if len(first) == 0 {
					continue
				}
				if b, err := compilespec.ParseBudgetSpec(d.CompileSpecs[first[0]].Value); err == nil {
					n, _ := b.Bytes()
					total = compilespec.AddSizes(total, n)
					budgeted++
				}
			}
			if m.Budget != total || m.Budgeted != budgeted {
				t.Errorf("%s %s: summary totals %d over %d delegates; compilespec's budgets add up to %d over %d", path, m.Name, m.Budget, m.Budgeted, total, budgeted)
			}
			for _, g := range m.Groups {
				d := ep.Delegates[g.First]
				if !delegate.IsTensorRT(d.ID) {
					continue
				}
				idx := compilespec.Find(d.CompileSpecs, compilespec.KeyWeightStreamingBudget)
				if len(idx) == 0 {
					if g.Budget != "" || g.BudgetBytes != -1 {
						t.Errorf("%s %s delegate %d: no budget spec, the summary shows %q (%d)", path, m.Name, g.First, g.Budget, g.BudgetBytes)
					}
					continue
				}
				b, err := compilespec.ParseBudgetSpec(d.CompileSpecs[idx[0]].Value)
				if err != nil {
					continue // shown as invalid; check's problem says why
				}
				n, _ := b.Bytes()
				if g.Budget != b.String() || g.BudgetBytes != n {
					t.Errorf("%s %s delegate %d: the summary shows %q (%d); compilespec renders %q (%d)", path, m.Name, g.First, g.Budget, g.BudgetBytes, b.String(), n)
				}
				checked++
			}
		}
		f.Close()
	}
	if checked == 0 {
		t.Error("no shared program has a TensorRT delegate with a valid budget: the test checked nothing")
	}
	t.Logf("%d delegate groups with a budget checked in %d programs", checked, len(paths))
}
