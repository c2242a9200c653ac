package executor

import (
	"context"
	"strings"
	"sync"
	"testing"
)

func TestSetBudget(t *testing.T) {
	eng := fakeEngine{streamable: gib, automatic: 300 * mib,
		refuse: func(n int64) bool { return n == 777 }}
	m, err, fac, _ := loadTRT(t, progOneEngine, nil, nil, eng)
	if err != nil {
		t.Fatal(err)
	}
	e := fac.engines[0]
	tests := []struct {
		req     BudgetRequest
		code    string // error kind, "" for success
		source  BudgetSource
		applied *int64
		reason  string
	}{
		{req: BudgetRequest{Bytes: 4096}, source: SourceSetBudget, applied: i64(4096), reason: "requested budget applied"},
		{req: BudgetRequest{Bytes: 4 * gib}, source: SourceSetBudget, applied: i64(gib), reason: "clamped"},
		{req: BudgetRequest{Automatic: true}, source: SourceAutomatic, applied: i64(300 * mib)},
		{req: BudgetRequest{Bytes: 777}, code: "invalid_argument"},
		{req: BudgetRequest{Bytes: -1}, code: "invalid_argument"},
	}
	for _, tc := range tests {
		before := len(e.contexts)
		p, err := m.SetBudget(0, tc.req)
		if tc.code != "" {
			if err == nil || KindOf(CodeOf(err)) != tc.code {
				t.Errorf("SetBudget(%+v) = %v; want %s", tc.req, err, tc.code)
			}
			continue
		}
		if err != nil {
			t.Fatalf("SetBudget(%+v): %v", tc.req, err)
		}
		if p.Source != tc.source || !eqPtr(p.Applied, tc.applied) || !strings.Contains(p.Reason, tc.reason) {
			t.Errorf("SetBudget(%+v) plan = %s %s %q", tc.req, p.Source, fmtPtr(p.Applied), p.Reason)
		}
		if got := m.Plans()[0]; got.Source != p.Source || !eqPtr(got.Applied, p.Applied) {
			t.Errorf("Plans not updated: %+v", got)
		}
		if len(e.contexts) != before+1 || !e.contexts[before-1].closed {
			t.Errorf("context not recreated")
		}
	}
	// The refused budget left the previous one (automatic) in force and a
	// working context.
	if e.budget != 300*mib || m.Plans()[0].Source != SourceAutomatic {
		t.Errorf("budget after refusal = %d", e.budget)
	}
	if _, err := m.Execute(context.Background(), []any{1}); err != nil {
		t.Errorf("execute after refused change: %v", err)
	}
	if _, err := m.SetBudget(3, BudgetRequest{}); CodeOf(err) != CodeInvalidArgument {
		t.Errorf("bad delegate: %v", err)
	}
	m.Close()
	if _, err := m.SetBudget(0, BudgetRequest{}); CodeOf(err) != CodeInvalidState {
		t.Errorf("after close: %v", err)
	}
}

func TestSetBudgetNonStreamable(t *testing.T) {
	m, err, fac, _ := loadTRT(t, progOneEngine, nil, nil, fakeEngine{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.SetBudget(0, BudgetRequest{Bytes: 10})
	if err != nil || p.Applied != nil || !strings.Contains(p.Reason, "no streamable weights") || len(fac.engines[0].setCalls) != 0 {
		t.Errorf("plan %+v, %v", p, err)
	}
}

func TestSetBudgetNotSupported(t *testing.T) {
	m, err := loadToy(t, progOneEngine, &toyBackend{available: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.SetBudget(0, BudgetRequest{Bytes: 1}); CodeOf(err) != CodeNotSupported {
		t.Errorf("toy backend: %v", err)
	}
}

// TestSetBudgetConcurrentExecute changes the budget while executions run.
// The fake context panics if it is used after being closed, closed with
// work in flight, or used under a budget other than the one it was created
// with; run with -race to also check the synchronization.
func TestSetBudgetConcurrentExecute(t *testing.T) {
	m, err, fac, _ := loadTRT(t, progTwoEngines, nil, nil, fakeEngine{streamable: gib, automatic: 5})
	if err != nil {
		t.Fatal(err)
	}
	const workers, runs, changes = 8, 100, 60
	var wg sync.WaitGroup
	errs := make(chan error, workers+1)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < runs; i++ {
				if _, err := m.Execute(context.Background(), []any{i}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < changes; i++ {
			req := BudgetRequest{Bytes: int64(1000 + i)}
			if i%3 == 2 {
				req = BudgetRequest{Automatic: true}
			}
			if _, err := m.SetBudget(i%2, req); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	m.Close()
	total := 0
	for _, e := range fac.engines {
		for _, c := range e.contexts {
			total += c.enqueues
			if !c.closed {
				t.Errorf("context left open")
			}
		}
	}
	if total != workers*runs*2 || len(fac.engines[0].contexts)+len(fac.engines[1].contexts) != 2+changes {
		t.Errorf("%d enqueues, contexts %d+%d", total, len(fac.engines[0].contexts), len(fac.engines[1].contexts))
	}
	// Last change on delegate 0 (i=58): 1058 bytes; on delegate 1 (i=59): automatic.
	plans := m.Plans()
	if plans[0].Source != SourceSetBudget || *plans[0].Applied != 1058 || plans[1].Source != SourceAutomatic || *plans[1].Applied != 5 {
		t.Errorf("final plans: %s %d, %d", plans[0].Source, *plans[0].Applied, *plans[1].Applied)
	}
}

// TestSetBudgetRereadsScratch checks that the activation scratch reported
// after a budget change is the engine's new figure, not the one from init.
func TestSetBudgetRereadsScratch(t *testing.T) {
	eng := fakeEngine{streamable: gib, scratchOf: func(budget int64) int64 { return 1<<20 + budget/2 }}
	m, err, _, _ := loadTRT(t, progOneEngine, nil, nil, eng)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Plans()[0].Scratch; got == nil || *got != 1<<20+mib/2 {
		t.Fatalf("scratch after init = %s", fmtPtr(got))
	}
	p, err := m.SetBudget(0, BudgetRequest{Bytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if p.Scratch == nil || *p.Scratch != 1<<20+2048 {
		t.Errorf("scratch in the returned plan = %s", fmtPtr(p.Scratch))
	}
	if got := m.Plans()[0].Scratch; got == nil || *got != 1<<20+2048 {
		t.Errorf("scratch in Plans = %s", fmtPtr(got))
	}
}
