package inspect

import (
	"encoding/hex"
	"slices"
	"strconv"

	"github.com/ptekit/ptekit/check"
	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/internal/quote"
	"github.com/ptekit/ptekit/pte"
)

// Summary is what a person takes in at a glance about a program: its
// methods, its delegates grouped where they are alike, payload sizes,
// weight streaming budgets and how many problems the checks found
// (pteinspect's default view).
type Summary struct {
	Size int64 // file size in bytes
	// Methods lists every method of the document, in order; only the first
	// Options.SummaryMethods of them when Summarize was asked for fewer.
	Methods []*MethodSummary
	// MethodCount is the number of methods summarized, also those Methods
	// leaves out; the other totals count every method too.
	MethodCount int
	// Backends counts delegates per backend id, in order of first use.
	Backends []BackendCount
	// Payloads is what the delegate payloads that can be located take in
	// the file: a payload several delegates share (one segment or inline
	// buffer) counts once. The sum saturates at math.MaxInt64 rather than
	// wrapping.
	Payloads int64
	// Largest is the delegate with the largest payload; nil when no payload
	// can be located.
	Largest *Delegate
	// Errors and Warnings count the document's problems.
	Errors, Warnings int
}

// BackendCount is the number of delegates of one backend.
type BackendCount struct {
	ID    string
	Count int
}

// MethodSummary is one method at a glance.
type MethodSummary struct {
	// Index is the method's index in the document's program.execution_plan
	// or, when a delegate of the method says, its plan_index (which counts
	// every method also when Options.Method narrowed the document).
	Index   int
	Name    string
	Inputs  int
	Outputs int
	// Instructions counts the instructions of every chain.
	Instructions int
	// Returns holds the method's outputs that are constant values (an int,
	// a bool, a double, a string), as text; a getter method such as
	// get_max_seq_len returns only those. Tensor outputs are not listed.
	Returns []Constant
	// Groups are the method's delegates, alike ones counted together, in
	// order of first appearance.
	Groups []*DelegateGroup
	// Budget sums the weight streaming budgets of the method's TensorRT
	// delegates that state one (saturating at math.MaxInt64); Budgeted
	// counts them and Automatic counts those that state none.
	Budget              int64
	Budgeted, Automatic int
}

// Constant is a constant value a method returns.
type Constant struct {
	Type  string // "Int", "Bool", "Double", "String", "Null"
	Value string // as text: 128, true, 0.5, "text" (quoted)
}

// DelegateGroup is a set of delegates of one method that a person would
// call the same: one backend, one budget, one device.
type DelegateGroup struct {
	ID    string // backend id
	Count int
	// Budget is the weight_streaming_budget compile spec as text: a size
	// (e.g. "512 MiB") when it parses, the value quoted (at most 64 bytes)
	// when it does not, "" when the delegates state none.
	Budget string
	// BudgetBytes is the parsed budget, -1 when there is none or it does
	// not parse.
	BudgetBytes int64
	// Device is where the delegates run: the target_device compile spec
	// ("cuda:0"), or the engine's device ("engine device 0") when no spec
	// pins one; "" when neither says.
	Device string
	// Payloads is what the group's payloads take in the file, a shared
	// one counted once (saturating); Unreachable counts the delegates
	// whose payload cannot be located (a bad reference, a truncated file).
	Payloads    int64
	Unreachable int
	// First is the delegate index of the group's first delegate.
	First int

	stored *storageSet // payloads counted in Payloads
}

// Summarize summarises the document Build(f, opts) makes, without
// building that document: it reads the delegates one at a time
// (Stream.EachDelegate) and keeps only the summary. It also returns the
// Stream's document (head, problems, external data; no segments, delegates
// or program), for what the view shows besides the summary.
func Summarize(f *pte.File, opts *Options) (*Summary, *Document, error) {
	st, err := newStream(f, opts, nil, false)
	if err != nil {
		return nil, nil, err
	}
	s := &Summary{Size: f.Size}
	var t summaryTotals
	keep := st.b.opts.SummaryMethods
	var m *MethodSummary // the method whose delegates come
	// endMethod drops the method's groups and what only adding to them
	// needed.
	endMethod := func() {
		for _, g := range t.groups {
			g.stored = nil
		}
		clear(t.groups)
	}
	if err := st.EachDelegate(func(mv *MethodView) error {
		endMethod()
		m = nil // a method past those kept counts only in the totals
		if s.MethodCount++; keep <= 0 || len(s.Methods) < keep {
			m = planSummary(mv.Plan)
			m.Index = mv.Index
			s.Methods = append(s.Methods, m)
		}
		return nil
	}, func(_ *MethodView, d *Delegate) error {
		s.addDelegate(d, m, &t)
		return nil
	}); err != nil {
		return nil, nil, err
	}
	endMethod()
	doc := st.Document()
	s.countProblems(doc.Problems)
	return s, doc, nil
}

// countProblems counts the errors and warnings of probs in s.
func (s *Summary) countProblems(probs []Problem) {
	_, s.Errors, _ = check.FirstError(probs)
	s.Warnings = len(probs) - s.Errors
}

// summaryTotals is what adding delegates to a Summary keeps between them:
// where each backend is in Backends, the groups so far and the payloads
// counted.
type summaryTotals struct {
	backends map[string]int // id -> index in Summary.Backends
	groups   map[groupKey]*DelegateGroup
	stored   storageSet
}

// storageKey names where a delegate payload is stored: its location
// (inline or segment) and index.
type storageKey struct{ location, index int64 }

// maxDenseStorage bounds the storage indices a storageSet keeps as bits:
// 128 KiB of them per location at most, whatever a document says.
const maxDenseStorage = 1 << 20

// storageSet is a set of storages, a bit per index for INLINE and SEGMENT
// from the first index added on, and a map for the rest: counting 65536
// payloads once takes 8 KiB, not megabytes.
type storageSet struct {
	// bits[l] has a bit per index from base[l], for location l (INLINE,
	// SEGMENT).
	bits  [2][]uint64
	base  [2]int64
	other map[storageKey]bool
}

// add adds k to the set; false when it was there already.
func (s *storageSet) add(k storageKey) bool {
	if l := k.location; l >= 0 && l < int64(len(s.bits)) && k.index >= 0 {
		if s.bits[l] == nil {
			s.base[l] = k.index &^ 63
		}
		if i := k.index - s.base[l]; i >= 0 && i < maxDenseStorage {
			w, bit := int(i/64), uint64(1)<<(i%64)
			if n := w + 1 - len(s.bits[l]); n > 0 {
				s.bits[l] = append(s.bits[l], make([]uint64, n)...)
			}
			if s.bits[l][w]&bit != 0 {
				return false
			}
			s.bits[l][w] |= bit
			return true
		}
	}
	if s.other[k] {
		return false
	}
	if s.other == nil {
		s.other = map[storageKey]bool{}
	}
	s.other[k] = true
	return true
}

// storageOf returns d's storage; false when processed names none.
func storageOf(d *Delegate) (storageKey, bool) {
	if d.Location == nil || d.Index == nil {
		return storageKey{}, false
	}
	return storageKey{d.Location.Value, int64(*d.Index)}, true
}

// groupKey groups the delegates of a method that share a backend, budget
// and device.
type groupKey struct {
	plan               int
	id, budget, device string
}

// addDelegate counts d in s (payload and backend) and, when its method m
// is not nil, in its group (made the first time and listed under m) and
// in m's budget totals.
func (s *Summary) addDelegate(d *Delegate, m *MethodSummary, t *summaryTotals) {
	if t.backends == nil {
		t.backends = map[string]int{}
	}
	if k, ok := storageOf(d); d.Size != nil && (!ok || t.stored.add(k)) {
		s.Payloads = compilespec.AddSizes(s.Payloads, *d.Size)
	}
	if i, ok := t.backends[d.ID]; ok {
		s.Backends[i].Count++
	} else {
		t.backends[d.ID] = len(s.Backends)
		s.Backends = append(s.Backends, BackendCount{ID: d.ID, Count: 1})
	}
	var size int64
	reachable := d.Size != nil
	if reachable {
		size = *d.Size
		if s.Largest == nil || size > *s.Largest.Size {
			s.Largest = d
		}
	}
	if m == nil {
		return
	}
	if t.groups == nil {
		t.groups = map[groupKey]*DelegateGroup{}
	}
	budget, budgetBytes := delegateBudget(d)
	k := groupKey{d.PlanIndex, d.ID, budget, delegateDevice(d)}
	g := t.groups[k]
	if g == nil {
		g = &DelegateGroup{ID: d.ID, Budget: budget, BudgetBytes: budgetBytes, Device: k.device, First: d.DelegateIndex,
			stored: &storageSet{}}
		t.groups[k] = g
		m.Groups = append(m.Groups, g)
	}
	g.Count++
	if k, ok := storageOf(d); !ok || g.stored.add(k) {
		g.Payloads = compilespec.AddSizes(g.Payloads, size)
	}
	if !reachable {
		g.Unreachable++
	}
	if delegate.IsTensorRT(d.ID) {
		if budgetBytes >= 0 {
			m.Budget = compilespec.AddSizes(m.Budget, budgetBytes)
			m.Budgeted++
		} else if budget == "" {
			m.Automatic++
		}
	}
}

// planSummary is the summary of a decoded plan.
func planSummary(ep *pte.ExecutionPlan) *MethodSummary {
	m := &MethodSummary{Name: ep.Name, Inputs: len(ep.Inputs), Outputs: len(ep.Outputs), Instructions: instructionCount(ep)}
	for _, i := range ep.Outputs {
		if c, ok := constant(valueAt(ep, int(i))); ok {
			m.Returns = append(m.Returns, c)
		}
	}
	return m
}

// constant returns the text of a constant value, false for anything else
// (tensors, lists).
func constant(v pte.Value) (Constant, bool) {
	if isNil(v) {
		return Constant{}, false // a tag without its table
	}
	switch x := v.(type) {
	case *pte.Int:
		return Constant{"Int", strconv.FormatInt(x.IntVal, 10)}, true
	case *pte.Bool:
		return Constant{"Bool", strconv.FormatBool(x.BoolVal)}, true
	case *pte.Double:
		return Constant{"Double", strconv.FormatFloat(float64(x.DoubleVal), 'g', -1, 64)}, true
	case *pte.String:
		return Constant{"String", quote.String(x.StringVal)}, true
	case *pte.Null:
		return Constant{"Null", "None"}, true
	}
	return Constant{}, false
}

// specValue returns a compile spec value's bytes.
func specValue(cs *CompileSpecRaw) []byte {
	if cs.full != nil {
		return cs.full
	}
	if cs.ValueUTF8 != nil {
		return []byte(*cs.ValueUTF8)
	}
	b, _ := hex.DecodeString(cs.ValueHex)
	return b
}

// specOf returns the first compile spec of d whose key is key (with
// ExecuTorch's C-string key comparison), or nil.
func specOf(d *Delegate, key string) *CompileSpecRaw {
	if i := slices.IndexFunc(d.CompileSpecs, func(cs *CompileSpecRaw) bool { return cs != nil && compilespec.CKeyEqual(cs.Key, key) }); i >= 0 {
		return d.CompileSpecs[i]
	}
	return nil
}

// delegateBudget returns a TensorRT delegate's budget as the summary shows
// it, and in bytes (-1 when none or unreadable).
func delegateBudget(d *Delegate) (string, int64) {
	if !delegate.IsTensorRT(d.ID) {
		return "", -1
	}
	cs := specOf(d, compilespec.KeyWeightStreamingBudget)
	if cs == nil {
		return "", -1
	}
	v := specValue(cs)
	b, err := compilespec.ParseBudgetSpec(v)
	if err != nil {
		return "invalid " + quote.String(string(v)), -1
	}
	n, _ := b.Bytes()
	return b.String(), n
}

// delegateDevice returns where a delegate runs, as the summary shows it.
func delegateDevice(d *Delegate) string {
	if cs := specOf(d, compilespec.KeyTargetDevice); cs != nil {
		v := specValue(cs)
		if len(v) > quote.MaxBytes {
			return quote.String(string(v))
		}
		return string(v)
	}
	if t := d.TensorRT; t != nil && t.Deployed != nil && t.Deployed.OK {
		return "engine device " + strconv.Itoa(int(t.Deployed.DeviceID))
	}
	return ""
}

// Delegates is the number of delegates summarised: those of every backend.
func (s *Summary) Delegates() int {
	n := 0
	for _, b := range s.Backends {
		n += b.Count
	}
	return n
}
