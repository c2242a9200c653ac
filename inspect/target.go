package inspect

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ptekit/ptekit/pte"
)

// ParseDelegateRef reads a reference to one delegate, PLAN:DELEGATE (the
// form pteinspect --extract takes): PLAN is a method name or, when no
// method has that name, a method index; DELEGATE is the delegate's index in
// that method. It returns the indices to pass to pte.File.DelegateData,
// checked against p.
func ParseDelegateRef(p *pte.Program, s string) (method, delegate int, err error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return 0, 0, fmt.Errorf("want PLAN:DELEGATE, e.g. forward:0 or 0:0")
	}
	ms, ds := s[:i], s[i+1:]
	delegate, err = strconv.Atoi(ds)
	if err != nil || delegate < 0 {
		return 0, 0, fmt.Errorf("delegate %q is not an index", ds)
	}
	method = -1
	for pi, ep := range p.Plans() {
		if ep != nil && ep.Name == ms {
			method = pi
			break
		}
	}
	if method < 0 {
		n, err := strconv.Atoi(ms)
		if err != nil || n < 0 || n >= p.NumPlans() {
			var names []string
			for i, ep := range p.Plans() {
				if ep != nil {
					names = append(names, fmt.Sprintf("%d=%s", i, ep.Name))
				}
			}
			return 0, 0, fmt.Errorf("no method %q (methods: %s)", ms, orNone(names))
		}
		method = n
	}
	ep := p.Plan(method)
	if ep == nil {
		return 0, 0, fmt.Errorf("method %d is absent", method)
	}
	if delegate >= len(ep.Delegates) {
		return 0, 0, fmt.Errorf("method %q has %d delegate(s)", ep.Name, len(ep.Delegates))
	}
	return method, delegate, nil
}
