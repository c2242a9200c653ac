package inspect

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/ptekit/ptekit/pte"
)

// DiffOptions control DiffDocuments. The zero value (or nil) compares what
// a program is, not where its parts are in the file.
type DiffOptions struct {
	// Layout also compares where things are: the file size and root
	// offset; the extended header's program_size, segment_base_offset and
	// segment_data_size; each segment's offset, file_offset and resolvable;
	// and the metadata_offset and engine_offset of TensorRT blobs. These
	// follow from any change in the size of the flatbuffer.
	Layout bool
}

// DiffDocuments compares two programs structurally and returns one
// Difference per fact that differs, in a stable order. Both documents
// should be built by Build without Options.Method or Options.Backend, and
// with Options.Hash so that payload bytes are compared (without it only
// their sizes are).
//
// The comparison sees a program as these paths (docs/json.md, section
// "diff", has the full list):
//
//	file.file_identifier
//	extended_header                      null or {magic, length}
//	version
//	methods[NAME]                        execution plans, matched by name
//	methods[NAME].values[i].TAG...       EValues by position; TAG is the union member, e.g. Tensor
//	methods[NAME].chains[i].instructions[j].TAG...
//	methods[NAME].operators[NAME.OVERLOAD]
//	methods[NAME].delegates[i]           {id, location, index, size, sha256, compile_specs, tensorrt}
//	methods[NAME].delegates[i].compile_specs[KEY]   the value as text, or {"hex": ...}
//	segments[i]                          {size, sha256, used_by}
//	constant_buffer[i], backend_delegate_data[i], constant_segment,
//	mutable_data_segments[i], named_data[KEY]
//
// Named lists (methods, operators, compile specs, named data) are matched
// by name; a repeated name gets "#2", "#3", ... in the order of the list. A
// method present on one side only whose content equals that of a method
// present on the other side only is reported as one rename, at
// methods[OLD].name. Values, instructions, delegates and segments are
// matched by position, as the program refers to them by index.
//
// Each fact is reported once: the payload of a delegate (its size and
// SHA-256) is reported under the delegate, and a segment or inline data
// entry that only delegates use shows only its used_by list. Lists of
// scalars that fit on a line (shapes, argument lists) differ as a whole.
func DiffDocuments(a, b *Document, opts *DiffOptions) ([]Difference, error) {
	if a == nil || b == nil || a.Program == nil || b.Program == nil {
		return nil, errors.New("inspect: diff: both documents need a program")
	}
	if opts == nil {
		opts = &DiffOptions{}
	}
	var vs [2]*viewer
	for i, doc := range []*Document{a, b} {
		var err error
		if vs[i], err = newViewer(doc, opts.Layout); err != nil {
			return nil, err
		}
	}
	matchRenames(vs[0], vs[1])
	d := differ{compact: true}
	d.walk("", vs[0].root(), vs[1].root())
	return d.out, nil
}

// viewer builds the structural view of one document.
type viewer struct {
	doc    *Document
	layout bool
	// w writes (and hashes) the document's model values.
	w *modelWriter
	// keys[i] is the key of execution_plan[i] in methods[...]; methods[i]
	// is its view.
	keys    []string
	methods []*node
}

func newObject() *node { return &node{kind: 'o', obj: map[string]*node{}} }

func newKeyed() *node { return &node{kind: 'm', obj: map[string]*node{}} }

func newString(s string) *node { return &node{kind: 's', str: s} }

func newNumber[T int64 | uint64](v T) *node { return &node{kind: 'n', str: fmt.Sprint(v)} }

// optNumber is the number *p, or nil (null) for nil.
func optNumber[T int64 | uint64](p *T) *node {
	if p == nil {
		return nil
	}
	return newNumber(*p)
}

// set sets member k of the object n.
func (n *node) set(k string, v *node) *node {
	if v == nil {
		v = &node{kind: 'z'}
	}
	if _, ok := n.obj[k]; !ok {
		n.keys = append(n.keys, k)
	}
	n.obj[k] = v
	return n
}

// setUnique adds v under k, or under "k#2", "k#3", ... when k is taken, and
// returns the key used.
func (n *node) setUnique(k string, v *node) string {
	key := k
	if _, taken := n.obj[key]; taken {
		if n.repeats == nil {
			n.repeats = map[string]int{}
		}
		i := max(n.repeats[k], 1)
		for taken {
			i++
			key = k + "#" + strconv.Itoa(i)
			_, taken = n.obj[key]
		}
		n.repeats[k] = i
	}
	n.set(key, v)
	return key
}

// jsonNode returns the JSON form of v as a node.
func jsonNode(v any) (*node, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("inspect: diff: %w", err)
	}
	return parse(data)
}

// model returns the node of a part of the program (modelWriter's form).
func (v *viewer) model(part any) *node {
	return v.w.model(reflect.ValueOf(part), false)
}

// newViewer returns the viewer of doc, with each method's key and view.
func newViewer(doc *Document, layout bool) (*viewer, error) {
	v := &viewer{doc: doc, layout: layout, w: &modelWriter{hash: doc.Program.Hash}}
	p := doc.Program
	summaries := map[[2]int]*Delegate{}
	for _, d := range v.doc.Delegates {
		if d != nil && p.Plan(d.PlanIndex) != nil && p.Plan(d.PlanIndex).Name == d.Plan {
			summaries[[2]int{d.PlanIndex, d.DelegateIndex}] = d
		}
	}
	taken := newKeyed()
	for pi, ep := range p.Plans() {
		var n *node
		name := ""
		if ep != nil {
			name = ep.Name
			var err error
			if n, err = v.method(ep, func(di int) *Delegate { return summaries[[2]int{pi, di}] }); err != nil {
				return nil, err
			}
		}
		v.keys = append(v.keys, taken.setUnique(name, n))
		v.methods = append(v.methods, n)
	}
	return v, nil
}

// method is the view of a method given the summary of each delegate:
// its plan, with unions named by their member and operators keyed by
// name, and the view of its delegates. The plan's members stay model
// values, opened (and so rewritten) only where the two sides differ.
func (v *viewer) method(ep *pte.ExecutionPlan, summary func(di int) *Delegate) (*node, error) {
	plan := *ep
	plan.Delegates = nil
	n := v.model(&plan).open()
	unions(n.obj["values"], "val_type", "val")
	n.obj["chains"].then = func(chains *node) *node {
		for _, ch := range chains.arr {
			ch.then = func(ch *node) *node {
				unions(ch.obj["instructions"], "instr_args_type", "instr_args")
				return ch
			}
		}
		return chains
	}
	n.obj["operators"].then = func(ops *node) *node {
		keyed := newKeyed()
		for _, op := range ops.arr {
			key := ""
			if op = op.open(); op.kind == 'o' {
				key = op.obj["name"].str
				if ov := op.obj["overload"].str; ov != "" {
					key += "." + ov
				}
			}
			keyed.setUnique(key, op)
		}
		return keyed
	}
	if ep.Delegates == nil {
		return n.set("delegates", nil), nil
	}
	dels := &node{kind: 'a', arr: []*node{}}
	for di, d := range ep.Delegates {
		dn, err := v.delegate(d, summary(di))
		if err != nil {
			return nil, err
		}
		dels.arr = append(dels.arr, dn)
	}
	return n.set("delegates", dels), nil
}

// unions makes the list of union-holding tables n (a model value) open as
// [{TAG: MEMBER}] rather than [{"T_type": TAG, "T": MEMBER}], so that
// paths name the member.
func unions(n *node, typeKey, valKey string) {
	n.then = func(list *node) *node {
		for i, e := range list.arr {
			if e = e.open(); e.kind == 'o' {
				u := newObject()
				u.union = true
				e = u.set(e.obj[typeKey].str, e.obj[valKey])
			}
			list.arr[i] = e
		}
		return list
	}
}

// delegate is the view of one delegate: the program's reference and
// compile specs with the payload facts of its summary s (nil when the
// document has none).
func (v *viewer) delegate(d *pte.BackendDelegate, s *Delegate) (*node, error) {
	if d == nil {
		return &node{kind: 'z'}, nil
	}
	n := newObject().set("id", newString(d.ID))
	var loc, idx *node
	if r := d.Processed; r != nil {
		loc, idx = newString(enum(r.Location, int64(r.Location)).String()), newNumber(int64(r.Index))
	}
	n.set("location", loc).set("index", idx)
	if s != nil {
		n.set("size", optNumber(s.Size))
		if !s.SHA256.IsZero() {
			n.set("sha256", digestNode(s.SHA256))
		}
	}
	specs := newKeyed()
	switch {
	case d.CompileSpecs == nil:
		specs = nil
	case s != nil && len(s.CompileSpecs) == len(d.CompileSpecs):
		for _, cs := range s.CompileSpecs {
			val := newObject().set("hex", newString(cs.ValueHex))
			if cs.ValueUTF8 != nil {
				val = newString(*cs.ValueUTF8)
			}
			specs.setUnique(cs.Key, val)
		}
	default:
		for _, cs := range d.CompileSpecs {
			if cs == nil {
				continue
			}
			specs.setUnique(cs.Key, v.model(cs.Value))
		}
	}
	n.set("compile_specs", specs)
	if s != nil && s.TensorRT != nil {
		t, err := jsonNode(s.TensorRT)
		if err != nil {
			return nil, err
		}
		// The deployed view is summarised by the hazards, which say how it
		// differs from the metadata.
		t.remove("deployed")
		if !v.layout {
			t.remove("metadata_offset")
			t.remove("engine_offset")
		}
		n.set("tensorrt", t)
	}
	return n, nil
}

func digestNode(d Digest) *node {
	if d.Hex == "" {
		return &node{kind: 'z'}
	}
	return newString(d.Hex)
}

// matchRenames gives a method that only b has the key of a method that
// only a has when the two are equal but for their names: when their views
// have the same fingerprint (linear in their size, where walking every
// pair is quadratic in the number of methods).
func matchRenames(a, b *viewer) {
	inA := map[string]bool{}
	for _, k := range a.keys {
		inA[k] = true
	}
	inB := map[string]bool{}
	for _, k := range b.keys {
		inB[k] = true
	}
	candidates := map[[sha256.Size]byte][]int{} // a's methods by fingerprint, in order
	for i, ka := range a.keys {
		if !inB[ka] && a.methods[i] != nil {
			fp := fingerprint(a.methods[i], "name")
			candidates[fp] = append(candidates[fp], i)
		}
	}
	if len(candidates) == 0 {
		return
	}
	for j, kb := range b.keys {
		if inA[kb] || b.methods[j] == nil {
			continue
		}
		fp := fingerprint(b.methods[j], "name")
		if c := candidates[fp]; len(c) > 0 {
			b.keys[j], candidates[fp] = a.keys[c[0]], c[1:]
		}
	}
}

// fingerprint is a digest of object n opened in full, member skip left
// out, of an unambiguous encoding of what the walk compares (members by
// key, nil members left out, numbers by value): two objects have the same
// fingerprint when the walk finds no difference between them.
func fingerprint(n *node, skip string) [sha256.Size]byte {
	h := sha256.New()
	var buf []byte
	put := func(kind byte, s string) {
		buf = binary.AppendUvarint(append(buf[:0], kind), uint64(len(s)))
		h.Write(append(buf, s...))
	}
	var feed func(n *node, skip string)
	feed = func(n *node, skip string) {
		switch n = n.open(); n.kind {
		case 'o', 'm':
			keys := slices.Sorted(slices.Values(n.keys))
			keys = slices.DeleteFunc(keys, func(k string) bool { return k == skip || n.obj[k] == nil })
			put(n.kind, strconv.Itoa(len(keys)))
			for _, k := range keys {
				put('k', k)
				feed(n.obj[k], "")
			}
		case 'a':
			arr := n.arr
			for len(arr) > 0 && arr[len(arr)-1] == nil {
				arr = arr[:len(arr)-1] // the walk finds nothing past the other's end
			}
			put('a', strconv.Itoa(len(arr)))
			for _, e := range arr {
				if e == nil {
					put('-', "")
					continue
				}
				feed(e, "")
			}
		case 'n':
			put('n', numberKey(n.str))
		default:
			put(n.kind, n.str)
		}
	}
	feed(n, skip)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// numberKey is the same text for JSON numbers sameNumber finds equal:
// integers as big.Int writes them, others as float64s (zero unsigned).
func numberKey(x string) string {
	if !strings.ContainsAny(x, ".eE") {
		var b big.Int
		if _, ok := b.SetString(x, 10); ok {
			return "i" + b.String()
		}
		return "?" + x
	}
	f, err := strconv.ParseFloat(x, 64)
	if err != nil {
		return "?" + x
	}
	if f == 0 {
		f = 0 // -0 is 0
	}
	return "f" + strconv.FormatFloat(f, 'g', -1, 64)
}

// root builds the whole view; matchRenames comes first.
func (v *viewer) root() *node {
	p := v.doc.Program
	root := v.header()
	var methods *node
	if p.HasPlans() {
		methods = newKeyed()
		for i, k := range v.keys {
			methods.set(k, v.methods[i])
		}
	}
	root.set("methods", methods)
	segUsers, inlineUsers := v.users()
	root.set("segments", v.segments(segUsers))
	root.set("constant_buffer", v.model(p.ConstantBuffer))
	root.set("backend_delegate_data", v.inlineData(inlineUsers))
	root.set("constant_segment", v.model(p.ConstantSegment))
	root.set("mutable_data_segments", v.model(p.MutableDataSegments))
	return root.set("named_data", namedData(p.NamedData))
}

// header is the root object with file, extended_header and version.
func (v *viewer) header() *node {
	doc := v.doc
	file := newObject().set("file_identifier", newString(doc.File.FileIdentifier))
	if v.layout {
		file.set("size", newNumber(doc.File.Size))
		file.set("root_offset", newNumber(int64(doc.File.RootOffset)))
	}
	var eh *node
	if h := doc.ExtendedHeader; h != nil {
		eh = newObject().set("magic", newString(h.Magic)).set("length", newNumber(int64(h.Length)))
		if v.layout {
			eh.set("program_size", newNumber(h.ProgramSize))
			eh.set("segment_base_offset", newNumber(h.SegmentBaseOffset))
			eh.set("segment_data_size", newNumber(h.SegmentDataSize))
		}
	}
	return newObject().set("file", file).set("extended_header", eh).set("version", newNumber(int64(doc.Program.Version)))
}

// segments is the segments array; users names what refers to each.
func (v *viewer) segments(users map[int][]string) *node {
	segs := &node{kind: 'a', arr: []*node{}}
	for i, s := range v.doc.Segments {
		sha := s.SHA256
		if s.Size == 0 && !v.layout {
			// No bytes to compare: whether an empty segment can be located
			// only depends on the header.
			sha = Digest{}
		}
		n := storage(users[i], newNumber(s.Size), sha)
		if v.layout {
			n.set("offset", newNumber(s.Offset))
			n.set("file_offset", newNumber(s.FileOffset))
			n.set("resolvable", &node{kind: 'b', str: strconv.FormatBool(s.Resolvable)})
		}
		segs.arr = append(segs.arr, n)
	}
	return segs
}

// inlineData is the backend_delegate_data array (nil when absent).
func (v *viewer) inlineData(users map[int][]string) *node {
	p := v.doc.Program
	if p.BackendDelegateData == nil {
		return nil
	}
	inline := &node{kind: 'a', arr: []*node{}}
	for i, d := range p.BackendDelegateData {
		switch {
		case d == nil:
			inline.arr = append(inline.arr, &node{kind: 'z'})
		case d.Data == nil:
			inline.arr = append(inline.arr, newObject().set("data", nil))
		default:
			var sha Digest
			if p.Hash {
				sum := v.w.sum(d.Data)
				sha.Hex = hex.EncodeToString(sum[:])
			}
			inline.arr = append(inline.arr, storage(users[i], newNumber(int64(len(d.Data))), sha))
		}
	}
	return inline
}

// namedData is the named_data object keyed by key (nil when absent).
func namedData(list []*pte.NamedData) *node {
	if list == nil {
		return nil
	}
	named := newKeyed()
	for _, nd := range list {
		if nd == nil {
			named.setUnique("", nil)
			continue
		}
		named.setUnique(nd.Key, newObject().set("segment_index", newNumber(int64(nd.SegmentIndex))))
	}
	return named
}

// users lists, for each segment and each inline data entry, the paths of
// what refers to it. Only delegates refer to inline data.
func (v *viewer) users() (seg, inline map[int][]string) {
	p := v.doc.Program
	seg, inline = map[int][]string{}, map[int][]string{}
	if cs := p.ConstantSegment; cs != nil {
		seg[int(cs.SegmentIndex)] = append(seg[int(cs.SegmentIndex)], "constant_segment")
	}
	for i, m := range p.MutableDataSegments {
		if m != nil {
			seg[int(m.SegmentIndex)] = append(seg[int(m.SegmentIndex)], "mutable_data_segments["+strconv.Itoa(i)+"]")
		}
	}
	named := newKeyed()
	for _, nd := range p.NamedData {
		if nd != nil {
			key := named.setUnique(nd.Key, nil)
			seg[int(nd.SegmentIndex)] = append(seg[int(nd.SegmentIndex)], "named_data["+formatKey(key)+"]")
		}
	}
	for pi, ep := range p.Plans() {
		if ep == nil {
			continue
		}
		for di, d := range ep.Delegates {
			if d == nil || d.Processed == nil {
				continue
			}
			path := "methods[" + formatKey(v.keys[pi]) + "].delegates[" + strconv.Itoa(di) + "]"
			idx := int(d.Processed.Index)
			switch d.Processed.Location {
			case pte.DataLocationSEGMENT:
				seg[idx] = append(seg[idx], path)
			case pte.DataLocationINLINE:
				inline[idx] = append(inline[idx], path)
			}
		}
	}
	return seg, inline
}

// storage is the view of a segment or inline data entry: its users, and its
// size and digest unless only delegates use it (their view has both).
func storage(users []string, size *node, sha Digest) *node {
	n := newObject()
	onlyDelegates := len(users) > 0 && !slices.ContainsFunc(users, func(u string) bool { return !strings.HasPrefix(u, "methods[") })
	if !onlyDelegates {
		n.set("size", size)
		if !sha.IsZero() {
			n.set("sha256", digestNode(sha))
		}
	}
	list := &node{kind: 'a', arr: []*node{}}
	for _, u := range users {
		list.arr = append(list.arr, newString(u))
	}
	return n.set("used_by", list)
}
