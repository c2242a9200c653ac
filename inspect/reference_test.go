package inspect

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
	for i, ep := range p.Plans() {
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
