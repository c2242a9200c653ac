package ptd

import (
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"slices"

	"github.com/ptekit/ptekit/pte"
)

// Source is one data file given to a program, in the order given: either an
// open File or the error opening it produced.
type Source struct {
	// Name is how the file was named (a path or URL), for reports.
	Name string
	// File is the open file, nil when Err is set.
	File *File
	// Err is why the file could not be opened.
	Err error
}

// Load opens name as a Source: a failed open is kept in Source.Err (the
// caller must Close Source.File when set).
func Load(name string) Source {
	f, err := Open(name)
	return Source{Name: name, File: f, Err: err}
}

// Status is the outcome of one step as ExecuTorch would report it.
type Status struct {
	// Code is CodeOk on success, else ExecuTorch's error.
	Code pte.Code
	// Undefined is set when ExecuTorch has no check for the problem and its
	// behaviour is undefined (recorded runs crash); Code is then ptekit's
	// best description, not an upstream result.
	Undefined bool
	// Err says what and where; nil on success.
	Err error
}

// OK reports whether the step succeeded.
func (s Status) OK() bool { return s.Code == pte.CodeOk && !s.Undefined && s.Err == nil }

// String is the code name ("Ok" on success), or "undefined (crash)".
func (s Status) String() string {
	if s.Undefined {
		return "undefined (crash)"
	}
	return s.Code.String()
}

// statusOf makes a Status of an error.
func statusOf(err error) Status {
	if err == nil {
		return Status{}
	}
	if fe, ok := errors.AsType[*FormatError](err); ok {
		return Status{Code: fe.Code, Undefined: fe.Undefined, Err: err}
	}
	if _, ok := errors.AsType[*fs.PathError](err); ok || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		// FileDataLoader::from fails to open or read the file.
		return Status{Code: pte.CodeAccessFailed, Err: err}
	}
	return Status{Code: pte.CodeInternal, Err: err}
}

// FileResult is how ExecuTorch's FlatTensorDataMap::load fares on a source.
type FileResult struct {
	Name string
	// Load is FlatTensorDataMap::load's result (AccessFailed when the file
	// cannot be opened).
	Load Status
	// Keys are the keys the loaded map lists (get_key), in order.
	Keys []string
	// Legacy is set for a file in the pre-2025-06 layout.
	Legacy bool

	absentKey bool // a named_data entry has no key string
}

// TensorRow is one EXTERNAL tensor of a method and where its data comes
// from.
type TensorRow struct {
	// Value is the index of the tensor in ExecutionPlan.Values.
	Value int
	// Key is extra_tensor_info.fully_qualified_name.
	Key string
	// Planned is set for a memory-planned tensor (it has allocation_info:
	// its bytes are copied into planned memory); otherwise it is an
	// external constant.
	Planned bool
	// File indexes Resolution.Files: the data file holding Key; -1 when no
	// usable data map holds it.
	File int
	// Entry indexes that file's NamedData; -1 when not found.
	Entry int
	// Layout is the key's layout in the data file, nil if none.
	Layout *TensorLayout
	// Offset and Size locate the payload in the data file (-1 when
	// unknown).
	Offset, Size int64
	// Status is the error ExecuTorch reports for this tensor.
	Status Status
}

// KeyRow is a key of the program's own named_data that delegates may reach
// through the merged map, and whether an external file holds it too.
type KeyRow struct {
	Key string
	// File indexes Resolution.Files when a data file holds the same key
	// (ExecuTorch then refuses the merge), -1 otherwise.
	File int
}

// MethodResult is the outcome for one execution plan.
type MethodResult struct {
	Name string
	// Status is what Method::load returns as far as external data decides it
	// (CodeOk when external data does not stop it).
	Status Status
	// Tensors lists every EXTERNAL tensor, constants and memory-planned, in
	// value order.
	Tensors []TensorRow
	// NamedData lists the program's own named_data keys.
	NamedData []KeyRow
	// Constants is Method::parse_external_constants's result: Ok when the
	// method has no external constants, else InvalidState without a data
	// map or the first failing constant's status. Memory-planned tensors
	// are checked later, value by value (their rows' Status), and the
	// named-data merge after that (NamedDataMerge): a loader that
	// interleaves its own checks uses these steps in that order.
	Constants Status
	// NamedDataMerge is the merge of the program's named_data with the
	// external map that Method::init makes for delegates, before the
	// first delegate is initialized (InvalidArgument when a key is in
	// both).
	NamedDataMerge Status
}

// Resolution is how ExecuTorch resolves a program's external data against
// the given data files: per file, the merge, and per method.
type Resolution struct {
	// Files has one entry per Source, in order.
	Files []FileResult
	// Merge is MergedDataMap::load over the maps that loaded (maps with no
	// keys are dropped; none left or a key in two files is
	// InvalidArgument). Zero (Ok) when no data files were given.
	Merge Status
	// Keys lists the merged map's keys in order (files in order, each
	// file's keys in order) when the merge succeeded.
	Keys []string
	// Module is what Module::load returns: the first failed file load, else
	// the merge result.
	Module Status
	// HaveMap reports whether methods get a data map: files were given, all
	// loaded, and the merge succeeded. Methods are resolved without one
	// otherwise, which is what the recorded runs show.
	HaveMap bool
	// Crashed is set when a data file makes ExecuTorch's loader crash
	// (undefined behaviour) before any method loads.
	Crashed bool
	// Methods has one entry per execution plan.
	Methods []MethodResult
}

// Resolve resolves the EXTERNAL tensors and named data of every method of
// p against srcs, following ExecuTorch's Module::load (each file loaded, then
// merged), Method::parse_external_constants and the tensor parser:
//
//   - external constants (no allocation_info), if a method has any, need a
//     data map (InvalidState), a key present in it (NotFound, or the
//     lookup's InvalidExternalData), a layout equal to the tensor's
//     (InvalidExternalData), and bytes inside the file (InvalidExternalData);
//   - memory-planned EXTERNAL tensors need a data map (InvalidExternalData),
//     the key and an equal layout, and layout.nbytes bytes inside the file
//     (InvalidArgument);
//   - a missing fully_qualified_name is InvalidExternalData;
//   - then the program's own named_data is merged with the external map for
//     delegates (a key in both is InvalidArgument).
//
// A method's Status is the first failure in that order; every tensor row
// carries its own status. Keys compare as C strings. The plans are read one
// at a time, each plan's name, and its values only when it has an EXTERNAL
// tensor (pte.Program.PlanHasExternalData): a program read with
// pte.OpenOptions.LazyPlans is never decoded whole.
func Resolve(p *pte.Program, srcs []Source) *Resolution {
	return ResolveEach(p, srcs, nil)
}

// ResolveEach is Resolve for a caller that looks at one method at a time:
// it calls fn with each method's result, in plan order, and the Resolution
// it returns has no Methods, so that its memory does not grow with the
// number of methods. A nil fn makes it Resolve.
func ResolveEach(p *pte.Program, srcs []Source, fn func(plan int, m *MethodResult)) *Resolution {
	r := &Resolution{}
	var loaded []int
	for i, s := range srcs {
		fr := FileResult{Name: s.Name}
		switch {
		case s.Err != nil:
			fr.Load = statusOf(s.Err)
		case s.File == nil:
			fr.Load = Status{Code: pte.CodeInvalidArgument, Err: fmt.Errorf("ptd: source %q has no file", s.Name)}
		default:
			fr.Keys = s.File.Keys()
			fr.Legacy = s.File.Legacy != nil
			fr.absentKey = slices.ContainsFunc(s.File.NamedData, func(nd NamedData) bool { return nd.KeyAbsent })
			loaded = append(loaded, i)
		}
		r.Crashed = r.Crashed || fr.Load.Undefined
		if !fr.Load.OK() && r.Module.OK() {
			r.Module = fr.Load
		}
		r.Files = append(r.Files, fr)
	}
	keyFile := map[string]int{} // merged key -> index in srcs
	if len(srcs) > 0 {
		r.Merge = merge(r.Files, loaded, keyFile)
		r.Crashed = r.Crashed || r.Merge.Undefined
		if r.Merge.OK() {
			for _, i := range loaded {
				r.Keys = append(r.Keys, r.Files[i].Keys...)
			}
		}
		if r.Module.OK() {
			r.Module = r.Merge
		}
		r.HaveMap = r.Module.OK()
	}
	if r.Crashed && !r.Merge.Undefined {
		r.Merge = Status{Undefined: true, Code: pte.CodeInternal, Err: errors.New("ptd: the loader crashed on a data file before merging")}
	}
	if !r.HaveMap {
		clear(keyFile)
	}
	for i := range p.NumPlans() {
		ep := &pte.ExecutionPlan{Name: p.PlanName(i)}
		if p.PlanHasExternalData(i) { // else no value makes a row
			ep.Values = p.PlanValues(i)
		}
		m := resolveMethod(p, ep, srcs, keyFile, r.HaveMap, r.Crashed)
		if fn != nil {
			fn(i, &m)
		} else {
			r.Methods = append(r.Methods, m)
		}
	}
	return r
}

// merge mirrors MergedDataMap::load over the loaded maps, filling keyFile.
func merge(files []FileResult, loaded []int, keyFile map[string]int) Status {
	var valid []int
	for _, i := range loaded {
		if files[i].absentKey {
			// Listing keys dereferences the absent key string.
			return Status{Code: pte.CodeInvalidExternal, Undefined: true,
				Err: fmt.Errorf("ptd: %s has a named_data entry without a key: ExecuTorch dereferences null listing its keys", files[i].Name)}
		}
		if len(files[i].Keys) > 0 {
			valid = append(valid, i)
		}
	}
	if len(valid) == 0 {
		return Status{Code: pte.CodeInvalidArgument, Err: errors.New("ptd: no data file with keys to merge")}
	}
	for _, i := range valid {
		for _, k := range files[i].Keys {
			if j, dup := keyFile[k]; !dup {
				keyFile[k] = i
			} else if j != i {
				return Status{Code: pte.CodeInvalidArgument,
					Err: fmt.Errorf("ptd: duplicate key %q in %s and %s", k, files[j].Name, files[i].Name)}
			}
		}
	}
	return Status{}
}

// resolveMethod resolves one execution plan.
func resolveMethod(p *pte.Program, ep *pte.ExecutionPlan, srcs []Source, keyFile map[string]int, haveMap, crashed bool) MethodResult {
	m := MethodResult{Name: ep.Name}
	var constants, planned []int // indices into m.Tensors
	for vi, ev := range ep.Values {
		if ev == nil {
			continue
		}
		t, ok := ev.Val.(*pte.Tensor)
		if !ok || t == nil || t.ExtraTensorInfo == nil || t.ExtraTensorInfo.Location != pte.TensorDataLocationEXTERNAL {
			continue
		}
		row := TensorRow{Value: vi, Key: t.ExtraTensorInfo.FullyQualifiedName, Planned: t.AllocationInfo != nil,
			File: -1, Entry: -1, Offset: -1, Size: -1}
		row.Status = resolveTensor(&row, t, srcs, keyFile, haveMap)
		if row.Planned {
			planned = append(planned, len(m.Tensors))
		} else {
			constants = append(constants, len(m.Tensors))
		}
		m.Tensors = append(m.Tensors, row)
	}
	for _, nd := range p.NamedData {
		if nd == nil {
			continue
		}
		kr := KeyRow{Key: nd.Key, File: -1}
		if j, ok := keyFile[cString(nd.Key)]; ok {
			kr.File = j
		}
		m.NamedData = append(m.NamedData, kr)
	}
	if crashed {
		m.Status = Status{Undefined: true, Code: pte.CodeInternal, Err: errors.New("ptd: the loader crashed on a data file")}
		m.Constants = m.Status
		return m
	}
	if len(constants) > 0 && !haveMap {
		first := m.Tensors[constants[0]].Key
		more := ""
		if len(constants) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(constants)-1)
		}
		m.Constants = Status{Code: pte.CodeInvalidState,
			Err: fmt.Errorf("ptd: tensor %q is an external constant%s and there is no data map: no .ptd file was given, or the given files cannot be used", first, more)}
	}
	m.Constants = firstFailure(m.Constants, m.Tensors, constants)
	for _, kr := range m.NamedData { // without a map, keyFile is empty
		if kr.File >= 0 {
			m.NamedDataMerge = Status{Code: pte.CodeInvalidArgument,
				Err: fmt.Errorf("ptd: program named_data key %q is also in %s: merging it with the external data fails", kr.Key, srcs[kr.File].Name)}
			break
		}
	}
	m.Status = firstFailure(m.Constants, m.Tensors, planned)
	if m.Status.OK() {
		m.Status = m.NamedDataMerge
	}
	return m
}

// firstFailure is st when it failed, else the status of the first of the
// rows named by order that failed (or of the last one).
func firstFailure(st Status, rows []TensorRow, order []int) Status {
	for _, i := range order {
		if !st.OK() {
			break
		}
		st = rows[i].Status
	}
	return st
}

// resolveTensor fills row and returns the tensor's status.
func resolveTensor(row *TensorRow, t *pte.Tensor, srcs []Source, keyFile map[string]int, haveMap bool) Status {
	if slices.Contains(t.ExtraTensorInfo.Absent, "fully_qualified_name") {
		return Status{Code: pte.CodeInvalidExternal, Err: fmt.Errorf("ptd: value %d: EXTERNAL tensor without fully_qualified_name", row.Value)}
	}
	if !haveMap {
		if row.Planned {
			return Status{Code: pte.CodeInvalidExternal, Err: fmt.Errorf("ptd: memory-planned tensor %q is EXTERNAL but no data file was loaded", row.Key)}
		}
		return Status{Code: pte.CodeInvalidState, Err: fmt.Errorf("ptd: external constant %q: no data map", row.Key)}
	}
	fi, ok := keyFile[cString(row.Key)]
	if !ok {
		return statusOf(&FormatError{Off: -1, Code: pte.CodeNotFound, Msg: fmt.Sprintf("no data file has key %q", row.Key)})
	}
	row.File = fi
	f := srcs[fi].File
	entry, err := f.Lookup(row.Key)
	row.Entry = entry
	if err != nil {
		return statusOf(err)
	}
	nd := f.NamedData[entry]
	row.Layout = nd.Layout
	if nd.Layout == nil {
		return statusOf(&FormatError{Off: f.ndPos[entry], Path: fmt.Sprintf("named_data[%d].tensor_layout", entry),
			Code: pte.CodeInvalidExternal, Undefined: true, Msg: fmt.Sprintf("key %q has no tensor_layout: ExecuTorch dereferences null", row.Key)})
	}
	if st := compareLayout(row, t, nd.Layout, f, entry); !st.OK() {
		return st
	}
	seg := f.Segments[nd.SegmentIndex]
	if !row.Planned {
		off, size, err := f.segmentRange(int(nd.SegmentIndex), row.Key)
		if err != nil {
			// get_data fails; parse_external_constants reports it as
			// InvalidExternalData.
			return Status{Code: pte.CodeInvalidExternal, Err: err}
		}
		row.Offset, row.Size = off, size
		return Status{}
	}
	// load_data_into reads layout.nbytes() bytes from the segment start,
	// whatever the segment's size.
	nbytes, ok := nd.Layout.Bytes()
	start := f.Header.SegmentBaseOffset + seg.Offset
	if !ok || start < seg.Offset || start+nbytes < start || start+nbytes > uint64(f.Size) {
		return statusOf(&FormatError{Off: f.segPos[nd.SegmentIndex], Path: fmt.Sprintf("segments[%d]", nd.SegmentIndex), Code: pte.CodeInvalidArgument,
			Msg: fmt.Sprintf("key %q: %d tensor bytes at file offset %d are not inside the %d-byte file", row.Key, nbytes, start, f.Size)})
	}
	row.Offset, row.Size = int64(start), int64(nbytes)
	return Status{}
}

// compareLayout checks the data file's layout against the program's tensor
// as ExecuTorch does: scalar type, rank, each size, each dim order entry.
func compareLayout(row *TensorRow, t *pte.Tensor, l *TensorLayout, f *File, entry int) Status {
	bad := func(format string, args ...any) Status {
		return statusOf(&FormatError{Off: f.ndPos[entry], Path: fmt.Sprintf("named_data[%d].tensor_layout", entry),
			Code: pte.CodeInvalidExternal, Msg: fmt.Sprintf("key %q: ", row.Key) + fmt.Sprintf(format, args...)})
	}
	if l.ScalarType != t.ScalarType {
		return bad("scalar type %v, program wants %v", l.ScalarType, t.ScalarType)
	}
	if len(l.Sizes) != len(t.Sizes) {
		return bad("rank %d, program wants %d", len(l.Sizes), len(t.Sizes))
	}
	if len(l.DimOrder) < len(l.Sizes) {
		// ExecuTorch takes rank dim_order entries and reads past the vector.
		return statusOf(&FormatError{Off: f.ndPos[entry], Path: fmt.Sprintf("named_data[%d].tensor_layout.dim_order", entry), Code: pte.CodeInvalidExternal,
			Undefined: true, Msg: fmt.Sprintf("key %q: %d dim_order entries for rank %d: ExecuTorch reads past the vector", row.Key, len(l.DimOrder), len(l.Sizes))})
	}
	if !slices.Equal(l.Sizes, t.Sizes) {
		return bad("sizes %v, program wants %v", l.Sizes, t.Sizes)
	}
	for i := range l.Sizes {
		if i >= len(t.DimOrder) || l.DimOrder[i] != t.DimOrder[i] {
			return bad("dim_order %v, program wants %v", l.DimOrder[:len(l.Sizes)], t.DimOrder)
		}
	}
	return Status{}
}

// Bytes is TensorLayout::nbytes: numel times the element size; ok=false
// on an unknown type, a negative size or overflow.
func (l *TensorLayout) Bytes() (uint64, bool) {
	es, ok := pte.ElementSize(l.ScalarType)
	if !ok {
		return 0, false
	}
	n := es
	for _, s := range l.Sizes {
		if s < 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(n, uint64(s))
		if hi != 0 {
			return 0, false
		}
		n = lo
	}
	return n, true
}
