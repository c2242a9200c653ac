package pte

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// checkLazySame opens data eagerly and with OpenOptions.LazyPlans and fails
// unless the two agree on everything a caller can see: the verdict of
// NewFile, the plans (decoded in full, and by name), Verify's findings and
// every delegate's payload or error. It returns the eager File (nil when
// data does not open).
func checkLazySame(t *testing.T, data []byte) *File {
	t.Helper()
	eager, eerr := NewFile(bytes.NewReader(data), int64(len(data)))
	lazy, lerr := NewFileWith(bytes.NewReader(data), int64(len(data)), &OpenOptions{LazyPlans: true})
	if (eerr == nil) != (lerr == nil) || (eerr != nil && eerr.Error() != lerr.Error()) {
		t.Fatalf("NewFile: %v\nwith LazyPlans: %v", eerr, lerr)
	}
	if eerr != nil {
		return nil
	}
	if lazy.Program.executionPlan != nil {
		t.Fatalf("LazyPlans decoded %d plans at open", lazy.Program.NumPlans())
	}
	n := eager.Program.NumPlans()
	if got := lazy.Program.NumPlans(); got != n || eager.Program.HasPlans() != lazy.Program.HasPlans() {
		t.Fatalf("NumPlans %d with LazyPlans, %d without", got, n)
	}
	seen := 0
	for i, lp := range lazy.Program.Plans() {
		if i != seen || !testkit.DeepEqual(lp, eager.Program.Plan(i)) {
			t.Fatalf("Plans yields plan %d as %d, or differently from Plan", seen, i)
		}
		seen++
	}
	if seen != n {
		t.Fatalf("Plans yielded %d of %d plans", seen, n)
	}
	for i := -1; i <= n; i++ {
		ep, lp := eager.Program.Plan(i), lazy.Program.Plan(i)
		if !testkit.DeepEqual(ep, lp) {
			t.Fatalf("plan %d differs with LazyPlans:\n%+v\n%+v", i, lp, ep)
		}
		if !testkit.DeepEqual(eager.Program.PlanDelegates(i), lazy.Program.PlanDelegates(i)) {
			t.Fatalf("PlanDelegates(%d) differs with LazyPlans", i)
		}
		if ep != nil && !testkit.DeepEqual(lazy.Program.PlanDelegates(i), ep.Delegates) {
			t.Fatalf("PlanDelegates(%d) is not Plan(%d).Delegates", i, i)
		}
		if !testkit.DeepEqual(eager.Program.PlanValues(i), lazy.Program.PlanValues(i)) {
			t.Fatalf("PlanValues(%d) differs with LazyPlans", i)
		}
		if ep != nil && !testkit.DeepEqual(lazy.Program.PlanValues(i), ep.Values) {
			t.Fatalf("PlanValues(%d) is not Plan(%d).Values", i, i)
		}
		external := false // by definition, from the decoded plan
		if ep != nil {
			for _, ev := range ep.Values {
				if ev == nil {
					continue
				}
				if x, ok := ev.Val.(*Tensor); ok && x != nil && x.ExtraTensorInfo != nil && x.ExtraTensorInfo.Location == TensorDataLocationEXTERNAL {
					external = true
				}
			}
		}
		if eager.Program.PlanHasExternalData(i) != external || lazy.Program.PlanHasExternalData(i) != external {
			t.Fatalf("PlanHasExternalData(%d) = %t, with LazyPlans %t; plan %d has EXTERNAL tensors: %t", i, eager.Program.PlanHasExternalData(i), lazy.Program.PlanHasExternalData(i), i, external)
		}
		if eager.Program.PlanName(i) != lazy.Program.PlanName(i) {
			t.Fatalf("PlanName(%d) = %q with LazyPlans, %q without", i, lazy.Program.PlanName(i), eager.Program.PlanName(i))
		}
		if name := eager.Program.PlanName(i); eager.PlanIndex(name) != lazy.PlanIndex(name) {
			t.Fatalf("PlanIndex(%q) = %d with LazyPlans, %d without", name, lazy.PlanIndex(name), eager.PlanIndex(name))
		}
		delegates := 0
		if ep != nil {
			delegates = len(ep.Delegates)
		}
		for j := -1; j <= delegates; j++ {
			checkSamePayload(t, i, j, eager, lazy)
		}
	}
	if ef, lf := eager.Verify(), lazy.Verify(); !testkit.DeepEqual(ef, lf) {
		t.Fatalf("Verify differs with LazyPlans:\n%v\n%v", lf, ef)
	}
	// Written back (the Program as it is, plans included), the same bytes
	// or the same refusal.
	written := func(f *File) string {
		var b bytes.Buffer
		segs, err := f.SegmentReaders()
		if err == nil {
			_, err = Write(&b, f.Program, segs, nil)
		}
		return fmt.Sprintf("%x %v", b.Bytes(), err)
	}
	if w, lw := written(eager), written(lazy); w != lw {
		t.Fatalf("Write of the Program differs with LazyPlans:\n%.200s\n%.200s", lw, w)
	}
	return eager
}

// checkSamePayload fails unless DelegateData(plan, del) gives the same
// range, or the same error, on both files.
func checkSamePayload(t *testing.T, plan, del int, eager, lazy *File) {
	t.Helper()
	ep, eerr := eager.DelegateData(plan, del)
	lp, lerr := lazy.DelegateData(plan, del)
	switch {
	case (eerr == nil) != (lerr == nil) || (eerr != nil && eerr.Error() != lerr.Error()):
		t.Fatalf("DelegateData(%d, %d): %v\nwith LazyPlans: %v", plan, del, eerr, lerr)
	case eerr == nil && (ep.FileOffset != lp.FileOffset || ep.Size() != lp.Size()):
		t.Fatalf("DelegateData(%d, %d) at %d+%d, with LazyPlans at %d+%d", plan, del, ep.FileOffset, ep.Size(), lp.FileOffset, lp.Size())
	}
}

// TestLazyPlansSame holds LazyPlans to the eager reading on every program
// of the shared tree (corpus and vectors, good and bad); FuzzOpen does on
// its seeds and whatever it generates.
func TestLazyPlansSame(t *testing.T) {
	var files []string
	for _, dir := range []string{"corpus", "vectors/pte", "vectors/pte-bad"} {
		files = append(files, testkit.Glob(t, testkit.SharedDir(t, dir), "*.pte")...)
	}
	opened := 0
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(p), func(t *testing.T) {
			if checkLazySame(t, data) != nil {
				opened++
			}
		})
	}
	if opened == 0 {
		t.Fatalf("none of the %d shared programs opened: nothing was compared", len(files))
	}
}

// TestPlanIndexIndexed: past the scans PlanIndex starts with, its index of
// names finds what the scans find, the first plan of a repeated name, on a
// File read whole and one read lazily.
func TestPlanIndexIndexed(t *testing.T) {
	p := wrProgram(0)
	base := p.Plan(0)
	p.executionPlan = nil
	for i := range 3 * planIndexScans {
		c := *base
		c.Name = fmt.Sprintf("m%d", i%(2*planIndexScans)) // the last third repeats names
		p.executionPlan = append(p.executionPlan, &c)
	}
	b := shWrite(t, p)
	for _, lazy := range []bool{false, true} {
		f, err := NewFileWith(bytes.NewReader(b), int64(len(b)), &OpenOptions{LazyPlans: lazy})
		if err != nil {
			t.Fatal(err)
		}
		for round := range 3 {
			for i := range f.Program.NumPlans() {
				want := i % (2 * planIndexScans)
				if got := f.PlanIndex(f.Program.PlanName(i)); got != want {
					t.Fatalf("LazyPlans %v, round %d: PlanIndex(%q) = %d, want %d", lazy, round, f.Program.PlanName(i), got, want)
				}
			}
			if got := f.PlanIndex("absent"); got != -1 {
				t.Fatalf("LazyPlans %v: PlanIndex of a missing name = %d", lazy, got)
			}
		}
		if f.byName == nil {
			t.Fatalf("LazyPlans %v: %d lookups and no index", lazy, f.nameLookups.Load())
		}
	}
}
