package testprog

import (
	"bytes"
	"slices"
	"testing"

	"github.com/ptekit/ptekit/pte"
)

// Every program opens, verifies without an Error, and has the shape its
// name promises.
func TestPrograms(t *testing.T) {
	progs := Programs(t)
	want := map[string]struct {
		methods, delegates int
		budgets            []string
	}{
		"segment":      {1, 1, []string{"1048576"}},
		"inline":       {1, 1, []string{"1048576"}},
		"aliased":      {1, 1, nil},
		"two_methods":  {2, 2, []string{"1048576", "262144"}},
		"chain":        {1, 2, []string{"1048576", "1048576"}},
		"no_budget":    {1, 1, nil},
		"aligned_4096": {1, 1, []string{"1048576"}},
		"budget_twice": {1, 1, []string{"1048576", "2048"}},
		"specs":        {1, 1, []string{"1048576"}},
		"large_engine": {1, 1, nil},
		"getter":       {2, 1, []string{"1048576"}},
		"engines_64":   {1, 64, slices.Repeat([]string{"536870912"}, 64)},
	}
	if len(progs) != len(want) {
		t.Errorf("%d programs, want %d", len(progs), len(want))
	}
	for name, w := range want {
		data, ok := progs[name]
		if !ok {
			t.Errorf("no program %q", name)
			continue
		}
		f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, fd := range f.Verify() {
			if fd.Severity == pte.SeverityError {
				t.Errorf("%s: %v", name, fd)
			}
		}
		var budgets []string
		dels := 0
		for _, ep := range f.Program.Plans() {
			for _, d := range ep.Delegates {
				dels++
				for _, s := range d.CompileSpecs {
					if s.Key == "weight_streaming_budget" {
						budgets = append(budgets, string(s.Value))
					}
				}
			}
		}
		if f.Program.NumPlans() != w.methods || dels != w.delegates || !slices.Equal(budgets, w.budgets) {
			t.Errorf("%s: %d methods, %d delegates, budgets %q; want %d, %d, %q",
				name, f.Program.NumPlans(), dels, budgets, w.methods, w.delegates, w.budgets)
		}
		f.Close()
	}
}
