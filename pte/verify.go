package pte

import "fmt"

// Severity says how serious a Finding is.
type Severity uint8

const (
	// SeverityError marks a problem that makes ExecuTorch refuse the program
	// or one of its methods (or that makes it misbehave at run time).
	SeverityError Severity = iota + 1
	// SeverityWarning marks something legal but suspicious or unportable.
	SeverityWarning
)

// String returns "error" or "warning".
func (s Severity) String() string {
	switch s {
	case SeverityError:
		return "error"
	case SeverityWarning:
		return "warning"
	}
	return fmt.Sprintf("Severity(%d)", uint8(s))
}

// A Finding is one problem reported by Verify.
type Finding struct {
	// Severity is SeverityError or SeverityWarning.
	Severity Severity
	// Method is the name of the execution plan the finding is about, empty
	// for program-level findings.
	Method string
	// Err says what and where; Err.Code is the error ExecuTorch reports.
	Err *FormatError
}

// String formats the finding as "error: [method] pte: path: msg (at byte N) [Code]".
func (fd Finding) String() string {
	m := ""
	if fd.Method != "" {
		m = "[" + fd.Method + "] "
	}
	return fmt.Sprintf("%s: %s%v [%v]", fd.Severity, m, fd.Err, fd.Err.Code)
}

// Verify runs every check this package knows beyond what Open already
// enforced, method by method, the way ExecuTorch's Program::method_meta and
// Method::load check a method, plus payload reachability and portability
// warnings. Findings of SeverityError carry the Code ExecuTorch would
// return; a file with no Error findings loads and all its methods load, as
// far as the container can tell (registered kernels and backends aside).
//
// Verify does not look inside delegates: a TensorRT blob the deployed
// reader misreads, or a delegate whose weight_streaming_budget key is given
// twice, passes it. The whole verdict, the one `pteinspect --verify` prints
// and export.Rebake refuses inputs on, is check.Program (package
// github.com/ptekit/ptekit/check), which runs Verify and then every
// delegate's checks: call that to know whether a program will load.
func (f *File) Verify() []Finding {
	v := &validator{f: f}
	if t := f.Truncated; t != nil {
		v.add(SeverityError, t.Code, t.Off, t.Path, "%s", t.Msg)
	}
	for _, w := range f.fbWarnings {
		v.add(SeverityWarning, CodeOk, w.Off, w.Path, "%s", w.Msg)
	}
	// Program-level facts, then each method.
	v.segments()
	v.constantSegment()
	v.inlineAlignment()
	v.namedData()
	v.mutableSegments()
	for i, n := 0, f.Program.NumPlans(); i < n; i++ {
		// A lazily decoded plan is decoded without table positions first,
		// and again with them only when it has findings (the checks are
		// deterministic): most plans have none, and positions cost a map
		// entry per table. A plan read whole has its positions anyway.
		ep, d := f.planAt(i, false)
		mark := len(v.findings)
		v.dec = d
		v.method(i, ep)
		if len(v.findings) > mark && f.lazy && f.positions {
			v.findings = v.findings[:mark]
			ep, v.dec = f.planAt(i, true)
			v.method(i, ep)
		}
	}
	return v.findings
}
