package inspect

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ptekit/ptekit/executor"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// ExternalData is where a program's EXTERNAL tensors come from given the
// data files of `pteinspect --data` (ptd.Resolve): each file's load, the
// merge, and per method each tensor's file and place or why it is missing.
// It is the "external_data" member of the --json, --plan --json views
// (docs/json.md), present only when data files are given.
type ExternalData struct {
	Files []*DataFile `json:"files"`
	// Merge is MergedDataMap::load over the files that loaded.
	Merge DataStatus `json:"merge"`
	// Methods lists every method (narrowed by --method), in file order.
	Methods []*DataMethod `json:"methods"`
	// Missing lists the keys the program needs that no usable data file
	// provides, in first-use order.
	Missing []string `json:"missing"`
}

// DataStatus is the outcome of one step: ok, or the error ExecuTorch
// returns.
type DataStatus struct {
	OK    bool       `json:"ok"`
	Error *DataError `json:"error"`
}

// DataError is an ExecuTorch error in JSON form.
type DataError struct {
	// Kind is the error class in snake case ("invalid_external_data",
	// "not_found", "invalid_state", "invalid_argument", "access_failed").
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Undefined is true when ExecuTorch has no check for the problem and
	// crashes or reads out of bounds; Kind is then ptekit's description.
	Undefined bool `json:"undefined"`
}

// DataFile is one data file and its load.
type DataFile struct {
	Name string `json:"name"`
	DataStatus
	// Keys are the keys the file provides, in file order.
	Keys []string `json:"keys"`
	// Legacy is true for a file in the pre-2025-06 layout.
	Legacy bool `json:"legacy"`
}

// DataMethod is one method's external data.
type DataMethod struct {
	Name string `json:"name"`
	// OK and Error are what loading the method returns as far as external
	// data decides it.
	DataStatus
	Tensors []*DataTensor `json:"tensors"`
}

// DataTensor is one EXTERNAL tensor of a method.
type DataTensor struct {
	// Value is the tensor's index in the method's values.
	Value int    `json:"value"`
	Key   string `json:"key"`
	// Planned is true for a memory-planned tensor (its bytes are copied
	// into planned memory), false for an external constant.
	Planned bool `json:"planned"`
	// File names the data file that holds the key, null when none does.
	File *string `json:"file"`
	// Offset and Size locate the bytes in that file, null when unknown.
	Offset *int64 `json:"offset"`
	Size   *int64 `json:"size"`
	DataStatus
}

func dataStatus(s ptd.Status) DataStatus {
	if s.OK() {
		return DataStatus{OK: true}
	}
	msg := s.String()
	if s.Err != nil {
		msg = s.Err.Error()
	}
	return DataStatus{Error: &DataError{Kind: executor.KindOf(s.Code), Message: msg, Undefined: s.Undefined}}
}

// NewExternalData describes r, narrowed to method when it is not empty.
func NewExternalData(r *ptd.Resolution, method string) *ExternalData {
	out := &ExternalData{Files: []*DataFile{}, Merge: dataStatus(r.Merge), Methods: []*DataMethod{}, Missing: []string{}}
	for _, f := range r.Files {
		out.Files = append(out.Files, &DataFile{Name: f.Name, DataStatus: dataStatus(f.Load), Keys: nonNil(f.Keys), Legacy: f.Legacy})
	}
	for _, m := range r.Methods {
		if m.Name == "" && m.Tensors == nil || method != "" && m.Name != method {
			continue
		}
		dm := &DataMethod{Name: m.Name, DataStatus: dataStatus(m.Status), Tensors: []*DataTensor{}}
		for _, row := range m.Tensors {
			dt := &DataTensor{Value: row.Value, Key: row.Key, Planned: row.Planned, DataStatus: dataStatus(row.Status)}
			if row.File >= 0 && row.File < len(r.Files) {
				dt.File = &r.Files[row.File].Name
			}
			if row.Offset >= 0 {
				dt.Offset, dt.Size = new(row.Offset), new(row.Size)
			}
			if row.File < 0 && !slices.Contains(out.Missing, row.Key) {
				out.Missing = append(out.Missing, row.Key)
			}
			dm.Tensors = append(dm.Tensors, dt)
		}
		out.Methods = append(out.Methods, dm)
	}
	return out
}

// NeededKeys returns the keys of p's EXTERNAL tensors (constants and
// memory-planned), without repeats, in first-use order: what a program
// needs from data files. It reads one plan at a time (ptd.ResolveEach).
func NeededKeys(p *pte.Program) []string {
	var keys []string
	seen := map[string]bool{}
	ptd.ResolveEach(p, nil, func(_ int, m *ptd.MethodResult) {
		for _, row := range m.Tensors {
			if !seen[row.Key] {
				seen[row.Key] = true
				keys = append(keys, row.Key)
			}
		}
	})
	return keys
}

// DataProblems are the findings of resolving a program against its data
// files: a file that does not load, files that do not merge, and each
// method that fails to load because of external data (an error, with the
// value of the tensor at fault). Narrowed to method when not empty.
func DataProblems(r *ptd.Resolution, method string) []Problem {
	var out []Problem
	for i, f := range r.Files {
		if !f.Load.OK() {
			out = append(out, statusProblem(f.Load, "", fmt.Sprintf("data[%d]", i), "data file "+f.Name+": "))
		}
	}
	loaded := len(r.Files) > 0 && !slices.ContainsFunc(r.Files, func(f ptd.FileResult) bool { return !f.Load.OK() })
	if loaded && !r.Merge.OK() {
		out = append(out, statusProblem(r.Merge, "", "data", "merging the data files: "))
	}
	for pi, m := range r.Methods {
		if m.Status.OK() || (method != "" && m.Name != method) {
			continue
		}
		path := fmt.Sprintf("execution_plan[%d]", pi)
		for _, row := range m.Tensors {
			if !row.Status.OK() && row.Status.Code == m.Status.Code {
				path = fmt.Sprintf("execution_plan[%d].values[%d]", pi, row.Value)
				break
			}
		}
		out = append(out, statusProblem(m.Status, m.Name, path, ""))
	}
	return out
}

// statusProblem is an error Problem for a failed step.
func statusProblem(s ptd.Status, method, path, prefix string) Problem {
	p := Problem{Severity: SeverityError, Method: method, Path: path, Code: s.Code.String(), Message: prefix + s.String()}
	if s.Err != nil {
		p.Message = prefix + s.Err.Error()
	}
	if s.Undefined {
		p.Message += " (ExecuTorch has no check for this and crashes)"
	}
	return p
}

// isExternalNotice reports whether p is the reader's notice that a tensor's
// data is external (pte.File.Verify), which a resolution against data
// files replaces.
func isExternalNotice(p Problem) bool {
	return p.Severity == SeverityWarning && strings.HasSuffix(p.Path, ".extra_tensor_info") &&
		(p.Code == pte.CodeInvalidState.String() || p.Code == pte.CodeInvalidExternal.String())
}

// CheckData is Check for a program given with data files: the reader's
// notices that tensor data is external are replaced by the resolution's
// findings (DataProblems).
func CheckData(f *pte.File, r *ptd.Resolution) ([]Problem, error) {
	probs, err := Check(f)
	if err != nil {
		return nil, err
	}
	probs = slices.DeleteFunc(probs, isExternalNotice)
	return append(probs, DataProblems(r, "")...), nil
}
