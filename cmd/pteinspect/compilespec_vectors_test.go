package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ptekit/ptekit/delegate"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/executor"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

// TestCompileSpecAPIAgreesWithCLI checks, on every program of the shared
// tree's vectors/pte, that a pipeline using the public compilespec
// functions gets the answers pteinspect prints: the spec rows of
// --compile-specs --json, the budget problems of --json, and the budget
// source and value of --plan --json (which is executor's plan).
func TestCompileSpecAPIAgreesWithCLI(t *testing.T) {
	dir := testkit.SharedDir(t, "vectors", "pte")
	for _, path := range testkit.Glob(t, dir, "*.pte") {
		f, err := pte.Open(path)
		if err != nil {
			continue // not a program the views read; other tests cover it
		}
		p := f.Program
		f.Close()
		t.Run(path[len(dir)+1:], func(t *testing.T) {
			rows := cliRows(t, path)
			problems := cliProblems(t, path)
			plan := cliPlan(t, path)
			for pi, ep := range p.Plans() {
				if ep == nil {
					continue
				}
				for di, d := range ep.Delegates {
					if d == nil {
						continue
					}
					checkRows(t, rows, ep.Name, di, d)
					if !delegate.IsTensorRT(d.ID) {
						continue
					}
					checkBudgetProblem(t, problems, pi, di, d)
					checkPlanBudget(t, plan, ep.Name, di, d)
				}
			}
		})
	}
}

type specRowKey struct {
	method string
	di     int
}

func cliRows(t *testing.T, path string) map[specRowKey][]inspect.CompileSpecRow {
	t.Helper()
	var tab inspect.CompileSpecTable
	runJSONInto(t, &tab, "--compile-specs", "--json", path)
	m := map[specRowKey][]inspect.CompileSpecRow{}
	for _, r := range tab.CompileSpecs {
		k := specRowKey{r.Method, r.DelegateIndex}
		m[k] = append(m[k], r)
	}
	return m
}

func cliProblems(t *testing.T, path string) []inspect.Problem {
	t.Helper()
	var doc struct {
		Problems []inspect.Problem `json:"problems"`
	}
	runJSONInto(t, &doc, "--json", path)
	return doc.Problems
}

func cliPlan(t *testing.T, path string) *executor.ProgramPlan {
	t.Helper()
	var plan executor.ProgramPlan
	runJSONInto(t, &plan, "--plan", "--json", path)
	return &plan
}

func runJSONInto(t *testing.T, v any, args ...string) {
	t.Helper()
	var out, errb bytes.Buffer
	run(args, strings.NewReader(""), &out, &errb)
	if err := json.Unmarshal(out.Bytes(), v); err != nil {
		t.Fatalf("pteinspect %s: not JSON (%v); stderr: %s", strings.Join(args, " "), err, errb.String())
	}
}

// checkRows checks that the --compile-specs rows of a delegate are its spec
// list, so the indices Find returns name rows, and that the value Get
// returns is the row the CLI shows at the first of them.
func checkRows(t *testing.T, rows map[specRowKey][]inspect.CompileSpecRow, method string, di int, d *pte.BackendDelegate) {
	t.Helper()
	var nonNil []*pte.CompileSpec
	for _, s := range d.CompileSpecs {
		if s != nil {
			nonNil = append(nonNil, s)
		}
	}
	got := rows[specRowKey{method, di}]
	if len(got) != len(nonNil) {
		t.Fatalf("%s delegate %d: CLI shows %d compile specs, the program has %d", method, di, len(got), len(nonNil))
	}
	for _, key := range []string{compilespec.KeyWeightStreamingBudget, compilespec.KeyTargetDevice} {
		v, ok, err := compilespec.Get(nonNil, key)
		idx := compilespec.Find(nonNil, key)
		if ok != (len(idx) > 0) {
			t.Errorf("%s delegate %d: Get(%s) ok=%v but Find gives %v", method, di, key, ok, idx)
			continue
		}
		var de *compilespec.DuplicateKeyError
		if (len(idx) > 1) != errors.As(err, &de) {
			t.Errorf("%s delegate %d: Get(%s) error %v, Find gives %v", method, di, key, err, idx)
		}
		if ok && got[idx[0]].ValueHex != hex.EncodeToString(v) {
			t.Errorf("%s delegate %d: Get(%s) = %x, the CLI's row %d shows %s", method, di, key, v, idx[0], got[idx[0]].ValueHex)
		}
	}
}

// checkBudgetProblem checks that --json reports a budget problem on a
// TensorRT delegate exactly when compilespec.Budget refuses its specs,
// with Budget's error.
func checkBudgetProblem(t *testing.T, problems []inspect.Problem, pi, di int, d *pte.BackendDelegate) {
	t.Helper()
	path := fmt.Sprintf("execution_plan[%d].delegates[%d].compile_specs", pi, di)
	var found *inspect.Problem
	for i, pr := range problems {
		if pr.Path == path && strings.Contains(pr.Message, "init fails") {
			found = &problems[i]
		}
	}
	_, err := compilespec.SpecBudget(d.CompileSpecs)
	switch {
	case err == nil && found != nil:
		t.Errorf("%s: --json reports %q; compilespec.Budget accepts the specs", path, found.Message)
	case err != nil && found == nil:
		t.Errorf("%s: compilespec.Budget refuses the specs (%v); --json reports no problem", path, err)
	case err != nil && !strings.HasPrefix(found.Message, err.Error()):
		t.Errorf("%s: --json says %q; compilespec.Budget says %q", path, found.Message, err)
	}
}

// checkPlanBudget checks the budget --plan --json gives a TensorRT delegate
// (no load options): its compile spec when Budget reads one, the automatic
// budget when there is none, a load failure naming the refusal otherwise.
func checkPlanBudget(t *testing.T, plan *executor.ProgramPlan, method string, di int, d *pte.BackendDelegate) {
	t.Helper()
	var bp *executor.BudgetPlan
	for _, m := range plan.Methods {
		if m.Name != method {
			continue
		}
		for _, dp := range m.Delegates {
			if dp.Index == di {
				bp = dp.Budget
			}
		}
	}
	if bp == nil {
		return // the plan stopped before this delegate (an earlier load error)
	}
	b, err := compilespec.SpecBudget(d.CompileSpecs)
	n, _ := b.Bytes()
	var de *compilespec.DuplicateKeyError
	switch {
	case err == nil && b.IsAuto():
		if bp.Source != executor.SourceAutomatic {
			t.Errorf("%s delegate %d: plan source %q; compilespec.Budget finds no budget", method, di, bp.Source)
		}
	case errors.As(err, &de):
		if bp.Source != executor.SourceCompileSpec || !strings.Contains(bp.Reason, "duplicate") {
			t.Errorf("%s delegate %d: plan %q %q; compilespec.Budget finds the key at %v", method, di, bp.Source, bp.Reason, de.Indices)
		}
	case err != nil:
		if bp.Source != executor.SourceCompileSpec || bp.Requested != nil || !strings.Contains(bp.Reason, "load fails") {
			t.Errorf("%s delegate %d: plan %q %q; compilespec.Budget refuses: %v", method, di, bp.Source, bp.Reason, err)
		}
	default:
		if bp.Source != executor.SourceCompileSpec || bp.Requested == nil || *bp.Requested != n {
			t.Errorf("%s delegate %d: plan %q requested %v; compilespec.Budget = %d", method, di, bp.Source, bp.Requested, n)
		}
	}
}
