package inspect

import (
	"strings"
	"testing"

	"github.com/ptekit/ptekit/pte"
)

func TestParseDelegateRef(t *testing.T) {
	p := programOf([]*pte.ExecutionPlan{
		{Name: "forward", Delegates: []*pte.BackendDelegate{{ID: "A"}, {ID: "B"}}},
		{Name: "1", Delegates: []*pte.BackendDelegate{{ID: "C"}}}, // a name that looks like an index
	})
	for _, c := range []struct {
		in           string
		method, del  int
		errSubstring string
	}{
		{"forward:1", 0, 1, ""},
		{"0:0", 0, 0, ""},
		{"1:0", 1, 0, ""}, // the name "1" wins over index 1 (the same method here)
		{"x:y:0", 0, 0, `no method "x:y"`},
		{"forward", 0, 0, "want PLAN:DELEGATE"},
		{"forward:-1", 0, 0, "is not an index"},
		{"forward:2", 0, 0, "has 2 delegate(s)"},
		{"2:0", 0, 0, `no method "2" (methods: 0=forward, 1=1)`},
	} {
		m, d, err := ParseDelegateRef(p, c.in)
		if c.errSubstring != "" {
			if err == nil || !strings.Contains(err.Error(), c.errSubstring) {
				t.Errorf("%q: err %v, want one containing %q", c.in, err, c.errSubstring)
			}
			continue
		}
		if err != nil || m != c.method || d != c.del {
			t.Errorf("%q = %d, %d, %v; want %d, %d", c.in, m, d, err, c.method, c.del)
		}
	}
}

// programOf returns a program with just these plans.
func programOf(plans []*pte.ExecutionPlan) *pte.Program {
	p := &pte.Program{}
	p.SetPlans(plans)
	return p
}
