package pte

import (
	"fmt"
	"github.com/ptekit/ptekit/internal/quote"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Runtime limits (runtime/core/portable_type/scalar_type.h, method.cpp).
const (
	numScalarTypes      = 30  // ScalarType codes accepted by the runtime: [0, 30)
	maxTensorRank       = 16  // kTensorDimensionLimit
	maxOperatorNameSize = 100 // kernel name + "." + overload, incl. NUL
)

// elementSizes gives the element size of every runtime ScalarType code,
// including the codes the schema leaves out (complex, bits).
var elementSizes = [numScalarTypes]uint64{
	1, 1, 2, 4, 8, 2, 4, 8, // BYTE CHAR SHORT INT LONG HALF FLOAT DOUBLE
	4, 8, 16, // ComplexHalf ComplexFloat ComplexDouble
	1, 1, 1, 4, 2, 1, 1, // BOOL QINT8 QUINT8 QINT32 BFLOAT16 QUINT4X2 QUINT2X4
	1, 1, 1, 1, // Bits1x8 Bits2x4 Bits4x2 Bits8
	2, 1, 1, 1, 1, // BITS16 FLOAT8E5M2 FLOAT8E4M3FN FLOAT8E5M2FNUZ FLOAT8E4M3FNUZ
	2, 4, 8, // UINT16 UINT32 UINT64
}

// tensorBytes returns numel * element size, ok=false on an invalid type,
// a negative size or overflow.
func tensorBytes(t *Tensor) (numel, nbytes uint64, ok bool) {
	numel = 1
	for _, s := range t.Sizes {
		if s < 0 {
			return 0, 0, false
		}
		hi, lo := bits.Mul64(numel, uint64(s))
		if hi != 0 || lo > 1<<63-1 {
			return 0, 0, false
		}
		numel = lo
	}
	if !validScalarType(t.ScalarType) {
		return numel, 0, false
	}
	hi, lo := bits.Mul64(numel, elementSizes[t.ScalarType])
	if hi != 0 {
		return numel, 0, false
	}
	return numel, lo, true
}

// checkLoad applies what Program::load checks with InternalConsistency
// verification once the flatbuffer verified: validate_program, named data
// and the constant segment.
func (f *File) checkLoad() error {
	p := f.Program
	if !f.Program.HasPlans() {
		return &FormatError{Off: f.dec.posOf(p), Path: "execution_plan", Msg: "program has no execution_plan", Code: CodeInvalidProgram}
	}
	for i, n := 0, f.Program.NumPlans(); i < n; i++ {
		if err := f.checkPlanValuesAt(i); err != nil {
			return err
		}
	}
	if p.NamedData != nil && p.Segments == nil {
		return &FormatError{Off: f.dec.posOf(p), Path: "segments",
			Msg: "program has named_data but no segments table", Code: CodeInvalidArgument}
	}
	if cs := p.ConstantSegment; cs != nil && len(cs.Offsets) > 1 {
		if len(p.ConstantBuffer) > 0 {
			return &FormatError{Off: f.dec.posOf(cs), Path: "constant_buffer",
				Msg:  fmt.Sprintf("both constant_buffer (%d entries) and constant_segment (%d offsets) are used", len(p.ConstantBuffer), len(cs.Offsets)),
				Code: CodeInvalidProgram}
		}
		if p.Segments == nil {
			return &FormatError{Off: f.dec.posOf(cs), Path: "segments", Msg: "constant_segment is used but the program has no segments table", Code: CodeInvalidProgram}
		}
		if uint64(cs.SegmentIndex) >= uint64(len(p.Segments)) {
			return &FormatError{Off: f.dec.posOf(cs), Path: "constant_segment.segment_index",
				Msg: fmt.Sprintf("constant segment index %d out of range (%d segments)", cs.SegmentIndex, len(p.Segments)), Code: CodeInvalidProgram}
		}
		// Program::load reads the whole constant segment from
		// segment_base_offset (0 without a header) + offset.
		var base uint64
		if f.Header != nil {
			base = f.Header.SegmentBaseOffset
		}
		if _, err := f.segmentSpan(int(cs.SegmentIndex), base); err != nil {
			return err
		}
	}
	return nil
}

// checkPlanValuesAt is checkPlanValues of plan i. With lazy plans it
// decodes only the plan's values, without positions, and again with them
// only to report a refusal: Open checks every plan, and a decoded plan is
// several times its size in the region.
func (f *File) checkPlanValuesAt(i int) error {
	if !f.lazy {
		ep, d := f.planAt(i, true)
		return checkPlanValues(i, ep, d)
	}
	t, _ := rootTab(f.region).tableAt(slotProgramPlans, i)
	var ep *ExecutionPlan
	check := func(positions bool) error {
		d := f.decoder(positions)
		ep = &ExecutionPlan{Values: d.decodeExecutionPlanValues(t)}
		d.at(ep, t)
		return checkPlanValues(i, ep, d)
	}
	if check(false) == nil {
		// Noted now, while the values are decoded, for
		// PlanHasExternalData.
		if hasExternalData(ep.Values) {
			if f.external == nil {
				f.external = make([]bool, f.Program.NumPlans())
			}
			f.external[i] = true
		}
		return nil
	}
	return check(true)
}

// hasExternalData reports whether a tensor among values keeps its data
// outside the program.
func hasExternalData(values []*EValue) bool {
	return slices.ContainsFunc(values, func(ev *EValue) bool {
		if ev == nil {
			return false
		}
		t, ok := ev.Val.(*Tensor)
		return ok && t != nil && t.ExtraTensorInfo != nil && t.ExtraTensorInfo.Location == TensorDataLocationEXTERNAL
	})
}

// checkPlanValues is validate_program for one plan; d knows the positions
// of its tables.
func checkPlanValues(i int, ep *ExecutionPlan, d *fbDecoder) error {
	if ep.Values == nil {
		return &FormatError{Off: d.posOf(ep), Path: fmt.Sprintf("execution_plan[%d].values", i), Msg: "execution plan has no values table", Code: CodeInvalidProgram}
	}
	for j, ev := range ep.Values {
		// Paths are built only for an error: Open checks every value.
		vpath := func() string { return fmt.Sprintf("execution_plan[%d].values[%d].val", i, j) }
		switch x := ev.Val.(type) {
		case *Tensor:
			if x == nil {
				return &FormatError{Off: d.posOf(ev), Path: vpath(), Msg: "Tensor value has no Tensor table", Code: CodeInvalidProgram}
			}
			if x.Sizes == nil {
				return &FormatError{Off: d.posOf(x), Path: vpath() + ".sizes", Msg: "tensor has no sizes", Code: CodeInvalidProgram}
			}
			if !validScalarType(x.ScalarType) {
				return &FormatError{Off: d.posOf(x), Path: vpath() + ".scalar_type",
					Msg: fmt.Sprintf("invalid scalar type %d", int8(x.ScalarType)), Code: CodeInvalidProgram}
			}
			if _, _, ok := tensorBytes(x); !ok {
				return &FormatError{Off: d.posOf(x), Path: vpath() + ".sizes",
					Msg: fmt.Sprintf("tensor sizes %v are negative or overflow the element count", x.Sizes), Code: CodeInvalidProgram}
			}
		case *TensorList:
			if x == nil {
				return &FormatError{Off: d.posOf(ev), Path: vpath(), Msg: "TensorList value has no TensorList table", Code: CodeInvalidProgram}
			}
			if x.Items == nil {
				return &FormatError{Off: d.posOf(ev), Path: vpath() + ".items", Msg: "TensorList has no items", Code: CodeInvalidProgram}
			}
			for k, it := range x.Items {
				if it < 0 || int(it) >= len(ep.Values) {
					return &FormatError{Off: d.posOf(ev), Path: fmt.Sprintf("%s.items[%d]", vpath(), k),
						Msg: fmt.Sprintf("TensorList item %d out of range (%d values)", it, len(ep.Values)), Code: CodeInvalidProgram}
				}
				if _, isT := ep.Values[it].Val.(*Tensor); !isT {
					return &FormatError{Off: d.posOf(ev), Path: fmt.Sprintf("%s.items[%d]", vpath(), k),
						Msg: fmt.Sprintf("TensorList item refers to value %d, which is not a Tensor", it), Code: CodeInvalidProgram}
				}
			}
		}
	}
	return nil
}

// validator collects Verify findings.
type validator struct {
	f         *File
	findings  []Finding
	curMethod string
	// dec knows the positions of the current method's tables (see
	// File.planAt).
	dec *fbDecoder
}

func (v *validator) add(sev Severity, code Code, off int64, path, format string, args ...any) {
	v.findings = append(v.findings, Finding{Severity: sev, Method: v.curMethod,
		Err: &FormatError{Off: off, Path: path, Msg: fmt.Sprintf(format, args...), Code: code}})
}

// fieldPath is the path of a model field in a finding, such as
// execution_plan[2].values[0].val: the path of up, name (".values"), then
// [index] when index is not negative, then tail (".val"). It is joined
// only when a finding names it (String): joining every path up front was a
// third of the time Write spends verifying what it writes.
type fieldPath struct {
	up         *fieldPath
	name, tail string
	index      int
}

// String joins the path.
func (p *fieldPath) String() string {
	if p == nil {
		return ""
	}
	s := p.up.String() + p.name
	if p.index >= 0 {
		s += "[" + strconv.Itoa(p.index) + "]"
	}
	return s + p.tail
}

// text warns when a name or key s at path is not valid UTF-8: ExecuTorch
// compares such strings byte by byte and is fine with them, but a tool that
// prints them (or a JSON report) cannot show them faithfully, and a user
// cannot type them to select a method or backend. The path is path+field,
// joined only for a finding.
func (v *validator) text(off int64, path *fieldPath, field, what, s string) {
	if !utf8.ValidString(s) {
		v.add(SeverityWarning, CodeOk, off, path.String()+field, "%s %s is not valid UTF-8", what, quote.String(s))
	}
}

// addErr records a *FormatError returned by a payload accessor.
func (v *validator) addErr(sev Severity, err error) {
	if fe, ok := err.(*FormatError); ok {
		v.findings = append(v.findings, Finding{Severity: sev, Method: v.curMethod, Err: fe})
		return
	}
	v.add(sev, CodeAccessFailed, -1, "", "%v", err)
}

// maxElemFindings is how many findings Verify lists for the elements of one
// vector; the rest are counted in one more finding. This keeps a report
// readable and its size proportional to the kinds of problems rather than
// to the length of a hostile vector.
const maxElemFindings = 8

// elemFindings reports problems of the elements of one vector, whose path
// is path+field, path given to add and done (not kept: a path kept beside
// the validator would be moved to the heap, which Write's check of every
// method would pay for).
type elemFindings struct {
	v             *validator
	sev           Severity
	code          Code
	off           int64
	field         string
	shown, hidden int
}

// elems starts the findings of the vector at path+field, a path joined
// only when there is a finding: Write checks every vector it writes.
func (v *validator) elems(sev Severity, code Code, off int64, field string) elemFindings {
	return elemFindings{v: v, sev: sev, code: code, off: off, field: field}
}

// add reports a problem of element k of the vector at path+field, or
// counts it once maxElemFindings have been reported.
func (e *elemFindings) add(path *fieldPath, k int, format string, args ...any) {
	if e.shown == maxElemFindings {
		e.hidden++
		return
	}
	e.shown++
	e.v.add(e.sev, e.code, e.off, path.String()+e.field+"["+strconv.Itoa(k)+"]", format, args...)
}

// done reports how many element problems add did not list.
func (e *elemFindings) done(path *fieldPath) {
	if e.hidden > 0 {
		e.v.add(e.sev, e.code, e.off, path.String()+e.field, "%d more elements have problems like the ones listed", e.hidden)
	}
}

// segments checks that every segment holding bytes can be located and
// lies within the file.
func (v *validator) segments() {
	f, p := v.f, v.f.Program
	for i, s := range p.Segments {
		if s.Size == 0 {
			continue
		}
		if f.Header == nil || f.Header.SegmentBaseOffset == 0 {
			v.add(SeverityError, CodeNotFound, f.segmentPos(i), fmt.Sprintf("segments[%d]", i),
				"segment holds %d bytes but the file has no extended header, so ExecuTorch cannot locate it", s.Size)
			continue
		}
		if _, _, err := f.segmentRange(i, func() string { return fmt.Sprintf("segments[%d]", i) }, -1); err != nil {
			v.addErr(SeverityError, err)
		}
	}
}

// constantSegment checks the constant data: in a segment, with offsets
// inside it, or in the deprecated inline constant_buffer.
func (v *validator) constantSegment() {
	f, p := v.f, v.f.Program
	cs := p.ConstantSegment
	switch {
	case cs == nil || len(cs.Offsets) == 0:
		if len(p.ConstantBuffer) > 0 {
			v.add(SeverityWarning, CodeInvalidProgram, f.dec.posOf(p), "constant_buffer",
				"program uses the deprecated inline constant_buffer (%d entries); runtimes built with ET_ENABLE_DEPRECATED_CONSTANT_BUFFER=0 refuse it", len(p.ConstantBuffer))
		} else {
			v.add(SeverityWarning, CodeInvalidProgram, f.dec.posOf(p), "constant_segment",
				"program has no constant_segment offsets; runtimes built with ET_ENABLE_DEPRECATED_CONSTANT_BUFFER=0 refuse it")
		}
	default:
		if cs.Offsets[0] != 0 {
			v.add(SeverityWarning, CodeOk, f.dec.posOf(cs), "constant_segment.offsets[0]", "placeholder offset is %d, want 0", cs.Offsets[0])
		}
		if len(cs.Offsets) > 1 {
			if f.Header == nil || f.Header.SegmentBaseOffset == 0 {
				v.add(SeverityError, CodeInvalidProgram, f.dec.posOf(cs), "constant_segment",
					"constant data is in a segment but the file has no extended header: ExecuTorch would read it from file offset 0")
			} else if uint64(cs.SegmentIndex) < uint64(len(p.Segments)) {
				size := p.Segments[cs.SegmentIndex].Size
				path := &fieldPath{name: "constant_segment.offsets", index: -1}
				bad := v.elems(SeverityError, CodeInvalidArgument, f.dec.posOf(cs), "")
				for k, o := range cs.Offsets {
					if o > size {
						bad.add(path, k, "offset %d is past the %d-byte constant segment", o, size)
					}
				}
				bad.done(path)
			}
		}
	}
}

// inlineAlignment checks the 16-byte alignment the schema asks of inline
// constant and delegate data.
func (v *validator) inlineAlignment() {
	f, p := v.f, v.f.Program
	for i, b := range p.ConstantBuffer {
		if start, ok := f.dec.vec[b]; ok && len(b.Storage) > 0 && start%16 != 0 {
			v.add(SeverityWarning, CodeOk, int64(start), fmt.Sprintf("constant_buffer[%d].storage", i),
				"constant data at byte %d is not 16-byte aligned (schema force_align 16)", start)
		}
	}
	for i, d := range p.BackendDelegateData {
		if start, ok := f.dec.vec[d]; ok && len(d.Data) > 0 && start%16 != 0 {
			v.add(SeverityWarning, CodeOk, int64(start), fmt.Sprintf("backend_delegate_data[%d].data", i),
				"inline delegate data at byte %d is not 16-byte aligned (schema force_align 16)", start)
		}
	}
}

// namedData checks each named data entry's key and segment index.
func (v *validator) namedData() {
	f, p := v.f, v.f.Program
	seen := map[string]int{}
	for i, nd := range p.NamedData {
		path := fmt.Sprintf("named_data[%d]", i)
		v.text(f.dec.posOf(nd), &fieldPath{name: path, index: -1}, ".key", "named data key", nd.Key)
		if isAbsent(nd.Absent, "key", nd.Key) {
			v.add(SeverityError, CodeInvalidArgument, f.dec.posOf(nd), path+".key",
				"named data has no key: ExecuTorch fails every lookup that reaches this entry")
		} else if j, dup := seen[nd.Key]; dup {
			v.add(SeverityWarning, CodeOk, f.dec.posOf(nd), path+".key", "key %s repeats named_data[%d]; lookups find only the first", quote.String(nd.Key), j)
		} else {
			seen[nd.Key] = i
		}
		if uint64(nd.SegmentIndex) >= uint64(len(p.Segments)) {
			v.add(SeverityError, CodeInvalidArgument, f.dec.posOf(nd), path+".segment_index",
				"segment index %d out of range (%d segments)", nd.SegmentIndex, len(p.Segments))
		}
	}
}

// mutableSegments checks the mutable data segments ExecuTorch uses.
func (v *validator) mutableSegments() {
	f, p := v.f, v.f.Program
	if len(p.MutableDataSegments) > 1 {
		v.add(SeverityWarning, CodeOk, f.dec.posOf(p), "mutable_data_segments",
			"%d mutable data segments; ExecuTorch uses only the first and EXIR refuses more than one", len(p.MutableDataSegments))
	}
	for i, m := range p.MutableDataSegments {
		if uint64(m.SegmentIndex) >= uint64(len(p.Segments)) {
			v.add(SeverityError, CodeNotFound, f.dec.posOf(m), fmt.Sprintf("mutable_data_segments[%d].segment_index", i),
				"segment index %d out of range (%d segments)", m.SegmentIndex, len(p.Segments))
		}
	}
}

// validScalarType reports whether the runtime accepts s: a code in
// [0, numScalarTypes), including the runtime-only codes the schema omits.
func validScalarType(s ScalarType) bool { return s >= 0 && int(s) < numScalarTypes }
