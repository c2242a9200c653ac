package inspect

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/ptekit/ptekit/executor"
	"github.com/ptekit/ptekit/pte"
)

// DiffSummary is the change summary of two programs: what ExecuTorch's own
// diff (devtools/pte_tool/diff_pte.py) reports, with the same meaning and
// member names where it has them, and what it leaves out: compile spec
// changes, TensorRT engines and named data compared by content.
// SummarizeDiff computes it from the programs' model values.
type DiffSummary struct {
	// BitwiseEqual says the two files hold the same bytes.
	BitwiseEqual bool  `json:"bitwise_equal"`
	SizeA        int64 `json:"size_a"`
	SizeB        int64 `json:"size_b"`
	// SpecsOnly says the programs differ only in compile specs (a budget
	// re-baked, a target changed): SpecChanges lists each change.
	SpecsOnly bool `json:"specs_only"`
	// SpecChanges lists every compile spec that differs between delegates
	// at the same method and delegate index; [] when none.
	SpecChanges []SpecChange `json:"spec_changes"`
	// Methods holds one entry per method index where the methods differ
	// (matched by index, as upstream); [] when none.
	Methods []*MethodDiff `json:"methods"`
	// ExtraMethodsInA and ExtraMethodsInB name the methods past the other
	// program's last index (upstream's extra_plans_in_a/b).
	ExtraMethodsInA []string `json:"extra_methods_in_a"`
	ExtraMethodsInB []string `json:"extra_methods_in_b"`
	// NamedData compares named data by key.
	NamedData NamedDataDiff `json:"named_data"`
	// TensorRT lists the TensorRT delegates present at the same method and
	// delegate index in both programs that differ; [] when none.
	TensorRT []*TRTDiff `json:"tensorrt"`
}

// SpecChange is one compile spec that differs between the delegates at the
// same method and delegate index of two programs.
type SpecChange struct {
	MethodIndex   int    `json:"method_index"`
	Method        string `json:"method"` // A's name
	DelegateIndex int    `json:"delegate_index"`
	Backend       string `json:"backend"`
	// Key is the spec's key; a key repeated in one list gets "#2", "#3"...
	Key string `json:"key"`
	// A and B are the values (as text when UTF-8, else "hex:..."); null on
	// the side that lacks the key.
	A *string `json:"a"`
	B *string `json:"b"`
}

// MethodDiff is how the methods at one index differ. Slices are [] when
// nothing is only on one side; the A/B pairs are null when equal.
type MethodDiff struct {
	Index int `json:"index"`
	// Name is A's name of the method.
	Name string `json:"name"`
	// NameA and NameB are both set when the names differ (null otherwise);
	// the methods are still compared by index, as upstream does.
	NameA *string `json:"name_a"`
	NameB *string `json:"name_b"`
	// IndexInB is, when the names differ, the index in B of the method
	// named NameA (-1 when B has none): where a by-name match would go.
	IndexInB *int `json:"index_in_b,omitempty"`
	// Operators (NAME.OVERLOAD, sorted, each once) and delegates (backend
	// ids, sorted, with repeats) found on one side only.
	OperatorsOnlyInA    []string    `json:"operators_only_in_a"`
	OperatorsOnlyInB    []string    `json:"operators_only_in_b"`
	DelegatesOnlyInA    []string    `json:"delegates_only_in_a"`
	DelegatesOnlyInB    []string    `json:"delegates_only_in_b"`
	NonConstBufferSizes *[2][]int64 `json:"non_const_buffer_sizes"`
	ValueCount          *[2]int     `json:"value_count"`
	InstructionCount    *[2]int     `json:"instruction_count"`
	// Tensors lists the values that are tensors on both sides and differ in
	// metadata or constant bytes.
	Tensors []*TensorDiff `json:"tensors"`
	// Values lists the values at the same index that are not both tensors
	// and differ in type or content (upstream's evalue_diffs).
	Values []*ValueDiff `json:"values"`
	// TensorsOnlyInA and TensorsOnlyInB are the tensors past the other
	// method's last value.
	TensorsOnlyInA []*TensorRef `json:"tensors_only_in_a"`
	TensorsOnlyInB []*TensorRef `json:"tensors_only_in_b"`
}

// Usage is one use of a value: argument Arg of operator Name
// ("aten::add.out") or of a delegate call ("delegate:TensorRTBackend").
type Usage struct {
	Name string `json:"name"`
	Arg  int    `json:"arg"`
}

// TensorRef identifies a tensor of one side.
type TensorRef struct {
	Index      int     `json:"index"` // value index
	ScalarType string  `json:"scalar_type"`
	Sizes      []int32 `json:"sizes"`
	// FQN is extra_tensor_info.fully_qualified_name; null when absent.
	FQN           *string `json:"fqn"`
	DataBufferIdx uint32  `json:"data_buffer_idx"`
	// UsedBy lists every argument the value is passed as, in instruction
	// order; [] when none.
	UsedBy []Usage `json:"used_by"`
}

// FieldDiff is one member that differs, with its value on each side as
// the JSON form of the program member writes it.
type FieldDiff struct {
	Field string `json:"field"`
	A     any    `json:"a"`
	B     any    `json:"b"`
}

// TensorDiff is one tensor that differs.
type TensorDiff struct {
	A *TensorRef `json:"a"`
	B *TensorRef `json:"b"`
	// Fields lists the Tensor members that differ, in schema order.
	Fields []FieldDiff `json:"fields"`
	// ByteSizeA and ByteSizeB are the sizes of the constant buffers the
	// tensor's data_buffer_idx names, as upstream measures them: offsets[i]
	// to offsets[i+1] (or the segment end) of the constant segment, or the
	// inline buffer's storage; 0 when there is none.
	ByteSizeA   int64 `json:"byte_size_a"`
	ByteSizeB   int64 `json:"byte_size_b"`
	BytesDiffer bool  `json:"bytes_differ"`
	// Data compares the elements when the bytes differ; null otherwise.
	Data *DataDiff `json:"data"`
}

// DataDiff compares the constant data of a tensor element by element: the
// first Elements elements of both buffers (A's element count and both
// buffers' lengths bound it), both decoded as A's scalar type, as upstream
// does.
type DataDiff struct {
	// Decoded is false when A's scalar type is one upstream does not
	// decode (quantized, float8, bits): the counts are then 0.
	Decoded   bool  `json:"decoded"`
	Elements  int64 `json:"elements"`
	Differing int64 `json:"differing"`
	// MaxAbs and MeanAbs are over the differing elements (0 when none);
	// the difference of two elements is |a-b| in float64.
	MaxAbs  Float `json:"max_abs_diff"`
	MeanAbs Float `json:"mean_abs_diff"`
	// Samples are the first MaxDiffSamples differing elements.
	Samples []ElementDiff `json:"samples"`
	// NotCompared, when not empty, says why the elements were not
	// compared (Differing, the differences and Samples are then zero and
	// empty; Elements is what would have been compared).
	NotCompared string `json:"not_compared,omitempty"`
}

// MaxDiffSamples is how many differing elements a DataDiff lists.
const MaxDiffSamples = 10

// ElementDiff is one differing element: its flat index, its index in A's
// shape, and both values.
type ElementDiff struct {
	Flat  int64   `json:"flat"`
	Index []int64 `json:"index"`
	A     Float   `json:"a"`
	B     Float   `json:"b"`
}

// ValueDiff is a value at the same index that is not a tensor on both
// sides and differs: in type, or in content (Fields).
type ValueDiff struct {
	Index   int         `json:"index"`
	TypeA   string      `json:"type_a"`
	TypeB   string      `json:"type_b"`
	Fields  []FieldDiff `json:"fields"`
	UsedByA []Usage     `json:"used_by_a"`
	UsedByB []Usage     `json:"used_by_b"`
}

// NamedDataDiff compares named data by key (the first entry of a key, as
// ExecuTorch looks it up); each list is sorted and [] when empty.
type NamedDataDiff struct {
	OnlyInA []string `json:"only_in_a"`
	OnlyInB []string `json:"only_in_b"`
	// Changed lists the keys whose bytes differ (SHA-256 or size).
	Changed []string `json:"changed"`
}

// TRTDiff is a TensorRT delegate that differs between the two programs.
type TRTDiff struct {
	MethodIndex   int    `json:"method_index"`
	Method        string `json:"method"`
	DelegateIndex int    `json:"delegate_index"`
	// PayloadChanged says the delegate's bytes (header, metadata, engine)
	// differ; MetadataChanged that the blob's metadata differs.
	PayloadChanged  bool `json:"payload_changed"`
	MetadataChanged bool `json:"metadata_changed"`
	// EngineSize is the engine's size on each side (null when unreadable).
	EngineSize [2]*uint64 `json:"engine_size"`
	// Budget is the weight_streaming_budget compile spec on each side, as
	// the summary view shows it (null when absent).
	Budget [2]*string `json:"budget"`
	// Specs lists every compile spec change of this delegate.
	Specs []SpecChange `json:"specs"`
}

// DiffSummaryOptions gives SummarizeDiff what the caller already has.
type DiffSummaryOptions struct {
	// Docs are both programs' documents built with Options.Hash (by
	// BuildDiffPair); nil: SummarizeDiff builds them.
	Docs [2]*Document
	// Differences is DiffDocuments of Docs; nil: SummarizeDiff computes it.
	Differences []Difference
	// Constants is the constant data compared by the pass that built Docs
	// (BuildDiffPair); nil with Docs: the constant bytes are read again
	// where they may differ.
	Constants *ConstantComparison
}

// SummarizeDiff compares two programs and returns the change summary.
// Plans are read one method at a time from each file. Payload digests come
// from the documents and the constant data comparisons from the pass that
// built them (BuildDiffPair; without Docs SummarizeDiff makes it). When
// Docs come without Constants, each comparison reads the tensor's constant
// bytes again, only when they may differ.
func SummarizeDiff(a, b *pte.File, opts *DiffSummaryOptions) (*DiffSummary, error) {
	if a == nil || b == nil || a.Program == nil || b.Program == nil {
		return nil, errors.New("inspect: diff summary: both files need a program")
	}
	var o DiffSummaryOptions
	if opts != nil {
		o = *opts
	}
	if o.Docs[0] == nil || o.Docs[1] == nil {
		da, db, cc, err := BuildDiffPair(a, b, nil)
		if err != nil {
			return nil, err
		}
		o.Docs = [2]*Document{da, db}
		o.Differences, o.Constants = nil, cc
	}
	if o.Differences == nil {
		var err error
		if o.Differences, err = DiffDocuments(o.Docs[0], o.Docs[1], nil); err != nil {
			return nil, err
		}
	}
	da, db := o.Docs[0], o.Docs[1]
	s := &DiffSummary{
		SizeA: a.Size, SizeB: b.Size,
		SpecChanges: []SpecChange{}, Methods: []*MethodDiff{},
		ExtraMethodsInA: []string{}, ExtraMethodsInB: []string{},
		TensorRT: []*TRTDiff{},
	}
	s.BitwiseEqual = a.Size == b.Size && da.File.SHA256.Hex != "" && da.File.SHA256 == db.File.SHA256
	if s.BitwiseEqual {
		return s, nil // the same bytes: nothing differs
	}
	cmp := newConstComparer(a, b, da, db, o.Constants)
	na, nb := a.Program.NumPlans(), b.Program.NumPlans()
	for i := range max(na, nb) {
		switch {
		case i >= nb:
			s.ExtraMethodsInA = append(s.ExtraMethodsInA, a.Program.PlanName(i))
			continue
		case i >= na:
			s.ExtraMethodsInB = append(s.ExtraMethodsInB, b.Program.PlanName(i))
			continue
		}
		pa, pb := a.Program.Plan(i), b.Program.Plan(i)
		if pa == nil || pb == nil {
			return nil, fmt.Errorf("inspect: diff summary: method %d cannot be read", i)
		}
		md, err := diffMethod(i, pa, pb, cmp)
		if err != nil {
			return nil, err
		}
		if md != nil {
			if md.NameA != nil {
				md.IndexInB = new(b.PlanIndex(*md.NameA))
			}
			s.Methods = append(s.Methods, md)
		}
	}
	s.delegates(da, db)
	s.NamedData = diffNamedData(a, b, da, db)
	s.SpecsOnly = len(o.Differences) > 0 && !slices.ContainsFunc(o.Differences, func(d Difference) bool {
		return !strings.Contains(d.Path, ".compile_specs")
	})
	return s, nil
}

// delegates fills SpecChanges and TensorRT from the delegates at the same
// method and delegate index.
func (s *DiffSummary) delegates(da, db *Document) {
	type key struct{ plan, del int }
	bs := map[key]*Delegate{}
	for _, d := range db.Delegates {
		bs[key{d.PlanIndex, d.DelegateIndex}] = d
	}
	for _, x := range da.Delegates {
		y := bs[key{x.PlanIndex, x.DelegateIndex}]
		if y == nil || y.ID != x.ID {
			continue
		}
		specs := nonNil(diffSpecs(x, y))
		s.SpecChanges = append(s.SpecChanges, specs...)
		if x.TensorRT == nil || y.TensorRT == nil {
			continue
		}
		t := &TRTDiff{
			MethodIndex: x.PlanIndex, Method: x.Plan, DelegateIndex: x.DelegateIndex,
			PayloadChanged: x.SHA256 != y.SHA256 || !equalPtr(x.Size, y.Size),
			EngineSize:     [2]*uint64{x.TensorRT.EngineSize, y.TensorRT.EngineSize},
			Budget:         [2]*string{budgetOf(x), budgetOf(y)},
			Specs:          specs,
		}
		// The same payload holds the same metadata.
		t.MetadataChanged = t.PayloadChanged && !sameJSON(x.TensorRT.Metadata, y.TensorRT.Metadata)
		if t.PayloadChanged || t.MetadataChanged || len(specs) > 0 {
			s.TensorRT = append(s.TensorRT, t)
		}
	}
}

func equalPtr[T comparable](x, y *T) bool {
	return (x == nil) == (y == nil) && (x == nil || *x == *y)
}

// sameJSON compares two values by their JSON forms (for the blob metadata,
// whose values are JSON's own).
func sameJSON(x, y any) bool {
	d, err := Diff(x, y)
	return err == nil && len(d) == 0
}

// specText is a compile spec value as the summary shows it: the text when
// it is UTF-8, else "hex:" and its bytes.
func specText(c *CompileSpecRaw) string {
	if c.ValueUTF8 != nil {
		return *c.ValueUTF8
	}
	return "hex:" + c.ValueHex
}

// specKeys returns the specs of d by key, a repeated key numbered "#2"...:
// the keys in order, and each spec.
func specKeys(d *Delegate) (keys []string, vals map[string]*CompileSpecRaw) {
	vals = map[string]*CompileSpecRaw{}
	seen := map[string]int{}
	for _, c := range d.CompileSpecs {
		if c == nil {
			continue
		}
		k := c.Key
		if seen[c.Key]++; seen[c.Key] > 1 {
			k += "#" + strconv.Itoa(seen[c.Key])
		}
		keys = append(keys, k)
		vals[k] = c
	}
	return keys, vals
}

// budgetOf returns a TensorRT delegate's budget as the summary shows it,
// or nil when it has none.
func budgetOf(d *Delegate) *string {
	if s, _ := delegateBudget(d); s != "" {
		return &s
	}
	return nil
}

// diffSpecs lists the compile spec changes between two delegates: A's keys
// in order, then B's new ones.
func diffSpecs(x, y *Delegate) []SpecChange {
	ka, va := specKeys(x)
	kb, vb := specKeys(y)
	var out []SpecChange
	add := func(k string) {
		a, okA := va[k]
		b, okB := vb[k]
		if okA && okB && bytes.Equal(specValue(a), specValue(b)) {
			return
		}
		c := SpecChange{MethodIndex: x.PlanIndex, Method: x.Plan, DelegateIndex: x.DelegateIndex, Backend: x.ID, Key: k}
		if okA {
			c.A = new(specText(a))
		}
		if okB {
			c.B = new(specText(b))
		}
		out = append(out, c)
	}
	for _, k := range ka {
		add(k)
	}
	for _, k := range kb {
		if _, ok := va[k]; !ok {
			add(k)
		}
	}
	return out
}

// diffNamedData compares named data by key: the first entry of each key,
// its segment's SHA-256 and size.
func diffNamedData(a, b *pte.File, da, db *Document) NamedDataDiff {
	ka, kb := namedSegments(a, da), namedSegments(b, db)
	out := NamedDataDiff{OnlyInA: []string{}, OnlyInB: []string{}, Changed: []string{}}
	for k, x := range ka {
		y, ok := kb[k]
		switch {
		case !ok:
			out.OnlyInA = append(out.OnlyInA, k)
		case x == nil || y == nil || x.Size != y.Size || x.SHA256.Hex == "" || x.SHA256 != y.SHA256:
			out.Changed = append(out.Changed, k)
		}
	}
	for k := range kb {
		if _, ok := ka[k]; !ok {
			out.OnlyInB = append(out.OnlyInB, k)
		}
	}
	for _, l := range [][]string{out.OnlyInA, out.OnlyInB, out.Changed} {
		slices.Sort(l)
	}
	return out
}

// namedSegments maps each named data key of f to its segment (nil when
// the index is out of range).
func namedSegments(f *pte.File, d *Document) map[string]*Segment {
	out := map[string]*Segment{}
	for _, nd := range f.Program.NamedData {
		if nd == nil {
			continue
		}
		if _, ok := out[nd.Key]; ok {
			continue
		}
		out[nd.Key] = at(d.Segments, int(nd.SegmentIndex))
	}
	return out
}

// usages maps each value index of plan p to the arguments it is passed as,
// in instruction order.
func usages(p *pte.ExecutionPlan) map[int32][]Usage {
	out := map[int32][]Usage{}
	for _, ch := range p.Chains {
		if ch == nil {
			continue
		}
		for _, ins := range ch.Instructions {
			if ins == nil || isNil(ins.Args) {
				continue
			}
			var name string
			var args []int32
			switch x := ins.Args.(type) {
			case *pte.KernelCall:
				name = fmt.Sprintf("operator#%d", x.OpIndex)
				if op := at(p.Operators, int(x.OpIndex)); op != nil {
					name = executor.OperatorName(op)
				}
				args = x.Args
			case *pte.DelegateCall:
				name = fmt.Sprintf("delegate#%d", x.DelegateIndex)
				if d := at(p.Delegates, int(x.DelegateIndex)); d != nil {
					name = "delegate:" + d.ID
				}
				args = x.Args
			default:
				continue
			}
			for j, v := range args {
				out[v] = append(out[v], Usage{Name: name, Arg: j})
			}
		}
	}
	return out
}

// instructionCount counts the instructions of every chain of p.
func instructionCount(p *pte.ExecutionPlan) int {
	n := 0
	for _, ch := range p.Chains {
		if ch != nil {
			n += len(ch.Instructions)
		}
	}
	return n
}

// onlyIn returns the elements of x not matched in y, sorted; with repeats,
// each element of y cancels one of x.
func onlyIn(x, y []string, repeats bool) []string {
	count := map[string]int{}
	for _, s := range y {
		count[s]++
	}
	out := []string{}
	seen := map[string]bool{}
	for _, s := range x {
		if repeats {
			if count[s] > 0 {
				count[s]--
				continue
			}
		} else if count[s] > 0 || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// diffMethod compares the methods at index i; nil when they agree on
// everything the summary compares.
func diffMethod(i int, pa, pb *pte.ExecutionPlan, cmp *constComparer) (*MethodDiff, error) {
	m := &MethodDiff{Index: i, Name: pa.Name}
	if pa.Name != pb.Name {
		m.NameA, m.NameB = new(pa.Name), new(pb.Name)
	}
	ops := func(p *pte.ExecutionPlan) []string { return names(p.Operators, executor.OperatorName) }
	dels := func(p *pte.ExecutionPlan) []string {
		return names(p.Delegates, func(d *pte.BackendDelegate) string { return d.ID })
	}
	m.OperatorsOnlyInA, m.OperatorsOnlyInB = onlyIn(ops(pa), ops(pb), false), onlyIn(ops(pb), ops(pa), false)
	m.DelegatesOnlyInA, m.DelegatesOnlyInB = onlyIn(dels(pa), dels(pb), true), onlyIn(dels(pb), dels(pa), true)
	if !slices.Equal(pa.NonConstBufferSizes, pb.NonConstBufferSizes) {
		m.NonConstBufferSizes = &[2][]int64{nonNil(pa.NonConstBufferSizes), nonNil(pb.NonConstBufferSizes)}
	}
	if len(pa.Values) != len(pb.Values) {
		m.ValueCount = &[2]int{len(pa.Values), len(pb.Values)}
	}
	if x, y := instructionCount(pa), instructionCount(pb); x != y {
		m.InstructionCount = &[2]int{x, y}
	}
	ua, ub := usages(pa), usages(pb)
	m.Tensors, m.Values = []*TensorDiff{}, []*ValueDiff{}
	m.TensorsOnlyInA, m.TensorsOnlyInB = []*TensorRef{}, []*TensorRef{}
	for k := range max(len(pa.Values), len(pb.Values)) {
		va, vb := valueAt(pa, k), valueAt(pb, k)
		// A tensor whose table is absent compares as a value.
		ta, _ := va.(*pte.Tensor)
		tb, _ := vb.(*pte.Tensor)
		switch {
		case k >= len(pb.Values):
			if ta != nil {
				m.TensorsOnlyInA = append(m.TensorsOnlyInA, tensorRef(k, ta, ua))
			}
		case k >= len(pa.Values):
			if tb != nil {
				m.TensorsOnlyInB = append(m.TensorsOnlyInB, tensorRef(k, tb, ub))
			}
		case ta != nil && tb != nil:
			td, err := cmp.tensor(k, ta, tb, ua, ub)
			if err != nil {
				return nil, err
			}
			if td != nil {
				m.Tensors = append(m.Tensors, td)
			}
		default:
			if vd := diffValue(k, va, vb, ua, ub); vd != nil {
				m.Values = append(m.Values, vd)
			}
		}
	}
	if m.NameA == nil && m.NameOnly() {
		return nil, nil
	}
	return m, nil
}

// names returns name of each element of list that is not nil.
func names[T any](list []*T, name func(*T) string) []string {
	var out []string
	for _, x := range list {
		if x != nil {
			out = append(out, name(x))
		}
	}
	return out
}

// valueAt is value k of p, nil past its values or for an absent one.
func valueAt(p *pte.ExecutionPlan, k int) pte.Value {
	if ev := at(p.Values, k); ev != nil {
		return ev.Val
	}
	return nil
}

// NameOnly reports whether the methods differ in nothing the summary
// compares but, maybe, their names.
func (m *MethodDiff) NameOnly() bool {
	return len(m.OperatorsOnlyInA)+len(m.OperatorsOnlyInB)+len(m.DelegatesOnlyInA)+len(m.DelegatesOnlyInB) == 0 &&
		m.NonConstBufferSizes == nil && m.ValueCount == nil && m.InstructionCount == nil &&
		len(m.Tensors)+len(m.Values)+len(m.TensorsOnlyInA)+len(m.TensorsOnlyInB) == 0
}

func tensorRef(k int, t *pte.Tensor, u map[int32][]Usage) *TensorRef {
	r := &TensorRef{Index: k, ScalarType: t.ScalarType.String(), Sizes: nonNil(t.Sizes),
		DataBufferIdx: t.DataBufferIdx, UsedBy: nonNil(u[int32(k)])}
	if t.ExtraTensorInfo != nil && t.ExtraTensorInfo.FullyQualifiedName != "" {
		r.FQN = new(t.ExtraTensorInfo.FullyQualifiedName)
	}
	return r
}

// typeName is the name of a value's type: its union tag's ("Tensor",
// "Int"...), "NONE" for none.
func typeName(v pte.Value) string {
	if u, ok := v.(*pte.UnknownValue); v == nil || ok && u == nil {
		return "NONE" // a nil *UnknownValue has lost its tag
	}
	return v.KernelType().String() // the member types' methods do not read their receiver
}

// diffValue compares two values that are not both tensors.
func diffValue(k int, va, vb pte.Value, ua, ub map[int32][]Usage) *ValueDiff {
	d := &ValueDiff{Index: k, TypeA: typeName(va), TypeB: typeName(vb), Fields: []FieldDiff{},
		UsedByA: nonNil(ua[int32(k)]), UsedByB: nonNil(ub[int32(k)])}
	if d.TypeA != d.TypeB {
		return d
	}
	if !isNil(va) && !isNil(vb) && reflect.TypeOf(va) == reflect.TypeOf(vb) {
		d.Fields = fieldDiffs(reflect.ValueOf(va).Elem(), reflect.ValueOf(vb).Elem())
	} else if !isNil(va) || !isNil(vb) {
		// A tag without its table, or a table of a tag this reader does
		// not know, on one side at least: the values compare as their
		// JSON forms, which say what is known.
		d.Fields = append(d.Fields, FieldDiff{Field: "val", A: unionMember(va), B: unionMember(vb)})
	}
	if len(d.Fields) == 0 {
		return nil
	}
	return d
}
