package inspect

import (
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// The whole-program forms of views the library gives only per File: the
// references the tests hold the streaming and lazily decoded forms to.

// newSummary summarises doc.
func newSummary(doc *Document) *Summary {
	s := &Summary{Size: doc.File.Size}
	s.countProblems(doc.Problems)
	methods := s.addMethods(doc.Program)
	var t summaryTotals
	for _, d := range doc.Delegates {
		s.addDelegate(d, methods.of(d), &t)
	}
	return s
}

// summaryMethods finds the summary of a delegate's method.
type summaryMethods struct {
	byIndex map[int]*MethodSummary
	byName  map[string]*MethodSummary
}

// of finds d's method: by plan_index, or by name in a document narrowed to
// one method, whose indices no longer match.
func (ms *summaryMethods) of(d *Delegate) *MethodSummary {
	if m := ms.byIndex[d.PlanIndex]; m != nil && m.Name == d.Plan {
		return m
	}
	m := ms.byName[d.Plan]
	if m != nil {
		m.Index = d.PlanIndex
	}
	return m
}

// addMethods adds a summary of each method of p to s.
func (s *Summary) addMethods(p *Program) *summaryMethods {
	ms := &summaryMethods{byIndex: map[int]*MethodSummary{}, byName: map[string]*MethodSummary{}}
	if p == nil {
		return ms
	}
	for i, ep := range p.ExecutionPlan {
		if ep == nil {
			continue
		}
		m := planSummary(ep)
		m.Index = i
		s.Methods = append(s.Methods, m)
		s.MethodCount++
		ms.byIndex[i] = m
		if ms.byName[ep.Name] == nil {
			ms.byName[ep.Name] = m
		}
	}
	return ms
}

// backendIDsOf returns the distinct backend ids of the delegates of p, in
// order of first use; only those of the method named method when it is not
// empty. The result is never nil.
func backendIDsOf(p *pte.Program, method string) []string {
	return backendIDs(len(p.ExecutionPlan), func(i int) (string, []*pte.BackendDelegate) {
		if ep := p.ExecutionPlan[i]; ep != nil {
			return ep.Name, ep.Delegates
		}
		return "", nil
	}, method)
}

// neededKeysOf returns the keys of p's EXTERNAL tensors (constants and
// memory-planned), without repeats, in first-use order: what a program
// needs from data files.
func neededKeysOf(p *pte.Program) []string {
	var nk neededKeys
	r := ptd.Resolve(p, nil)
	for i := range r.Methods {
		nk.add(&r.Methods[i])
	}
	return nk.keys
}
