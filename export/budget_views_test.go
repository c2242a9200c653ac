package export

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

// TestSummaryBudgetsAskCompilespec (issue 22 item 6): on every shared
// program, the budget the export's Result reports for each TensorRT
// delegate is compilespec.SpecBudget's, and a delegate whose budget
// compilespec refuses is the one a bad-budget-spec warning names.
func TestSummaryBudgetsAskCompilespec(t *testing.T) {
	paths := testkit.SharedPrograms(t, 0)
	if len(paths) == 0 {
		t.Skip("no shared programs")
	}
	checked := 0
	for _, path := range paths {
		f, err := pte.Open(path)
		if err != nil {
			continue
		}
		res := &Result{}
		ws := summarize(f.Program, res)
		refused := 0
		mi := 0
		for _, ep := range f.Program.Plans() {
			if ep == nil {
				continue
			}
			ms := res.Methods[mi]
			mi++
			ei := 0
			for _, d := range ep.Delegates {
				if d == nil || !delegate.IsTensorRT(d.ID) {
					continue
				}
				e := ms.Engines[ei]
				ei++
				b, err := compilespec.SpecBudget(d.CompileSpecs)
				if err != nil {
					var dup *compilespec.DuplicateKeyError
					var bad *compilespec.BudgetError
					if !errors.As(err, &dup) && !errors.As(err, &bad) {
						t.Errorf("%s %s: SpecBudget error %T", path, ep.Name, err)
					}
					refused++
					b = compilespec.AutoBudget // shown as none
				}
				if (e.Budget == nil) != b.IsAuto() || (e.Budget != nil && *e.Budget != *b.Ptr()) {
					t.Errorf("%s %s: Result shows budget %v; compilespec reads %v", path, ep.Name, e.Budget, b)
				}
				checked++
			}
		}
		n := 0
		for _, w := range ws {
			if w.Kind == WarnBadBudgetSpec {
				n++
			}
		}
		if n != refused {
			t.Errorf("%s: %d bad-budget-spec warnings; compilespec refuses %d budgets", path, n, refused)
		}
		f.Close()
	}
	if checked == 0 {
		t.Error("no shared program has a TensorRT delegate: the test checked nothing")
	}
}

// TestResultSummaryJSON: the JSON document of a Result (pteexport --json,
// docs/json.md) has every member, null for no common budget or device,
// and in_place/rewritten only after an in-place re-bake.
func TestResultSummaryJSON(t *testing.T) {
	n := int64(4096)
	res := &Result{Path: "o.pte", Size: 10, Delegates: 2, Budget: &n, Methods: []MethodSummary{
		{Name: "forward", Delegates: 2, Engines: []EngineSummary{{Budget: &n, TargetDevice: "cuda:0"}, {Budget: &n, TargetDevice: "cuda:1"}}}},
		Warnings: []Warning{{Kind: WarnMultipleEngines, Method: "forward", Msg: "m"}}}
	got, err := json.Marshal(res.Summary())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"output":"o.pte","size":10,"methods":[{"name":"forward","delegates":2,"planned_bytes":0,` +
		`"engines":[{"weight_streaming_budget":4096,"target_device":"cuda:0"},{"weight_streaming_budget":4096,"target_device":"cuda:1"}]}],` +
		`"delegates":2,"blobs":0,"weight_streaming_budget":4096,"weight_streaming_budgets_differ":false,"target_device":null,` +
		`"warnings":[{"kind":"multiple-engines","method":"forward","message":"m"}]}`
	if string(got) != want {
		t.Errorf("Summary JSON\n got %s\nwant %s", got, want)
	}
	res.InPlace, res.Rewritten = true, 512
	s := res.Summary()
	res.Rewritten = 1
	if !s.InPlace || s.Rewritten == nil || *s.Rewritten != 512 {
		t.Errorf("in-place summary: %v %v (a copy of Rewritten, not the Result's field)", s.InPlace, s.Rewritten)
	}
}
