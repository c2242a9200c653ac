package pte

import (
	"cmp"
	"slices"

	"github.com/ptekit/ptekit/internal/fbverify"
)

// RegionLayout says what the bytes of a program's flatbuffer region (file
// bytes [0, program size)) hold. Every byte is counted exactly once: the
// fields sum to the region's size. A byte two objects share (a string or a
// table that several places refer to) counts for the first one met, in
// file order of where objects start.
type RegionLayout struct {
	// Size is the region's size in bytes.
	Size int64
	// Prefix is the root table offset and the file identifier (8 bytes).
	Prefix int64
	// Header is the extended header's stored length (its fields); the
	// zero padding after it counts as Padding. 0 without a header.
	Header int64
	// Plans has one entry per execution plan.
	Plans []PlanLayout
	// InlineDelegateData has one entry per Program.backend_delegate_data
	// element: its table, its data vector and its vtable-free share of
	// the region.
	InlineDelegateData []int64
	// ConstantBuffer is the deprecated inline constant data
	// (Program.constant_buffer): its tables and storage.
	ConstantBuffer int64
	// Tables is every other table, vector and string: the Program table,
	// segments, constant segment offsets, mutable data segments, named
	// data entries and keys, and the vectors of plans and inline data.
	Tables int64
	// Vtables is every vtable, whoever uses it (writers share them).
	Vtables int64
	// Padding is what no table, vtable, vector or string holds: alignment
	// between objects, and the header's zero padding.
	Padding int64
}

// PlanLayout is what one execution plan's tables, vectors and strings take
// in the region (vtables aside).
type PlanLayout struct {
	// Instructions is the chains: their instructions, arguments and
	// stacktraces.
	Instructions int64
	// Values is the values table (EValues, tensors, lists, and their
	// shapes, names and allocation details).
	Values int64
	// Operators is the operator table (names and overloads).
	Operators int64
	// Delegates is the BackendDelegate tables: ids, data references and
	// compile specs.
	Delegates int64
	// Other is the plan's own table, name, inputs, outputs, container
	// metadata and buffer sizes.
	Other int64
}

// Total is the sum of p's parts.
func (p PlanLayout) Total() int64 {
	return p.Instructions + p.Values + p.Operators + p.Delegates + p.Other
}

// Layout categories of a span, as layoutSpan.cat holds them: >= 0 is a
// plan part (layoutParts per plan) or, past the plans, an inline data
// entry; the negative ones count in the RegionLayout field of their name.
const (
	catPrefix = -1 - iota
	catHeader
	catTables
	catVtables
	catConstantBuffer
)

// Plan parts, in PlanLayout order.
const (
	partInstructions = iota
	partValues
	partOperators
	partDelegates
	partOther
	layoutParts
)

// planParts is the part of a plan each of its fields counts in; the
// others are partOther.
var planParts = map[string]int{"chains": partInstructions, "values": partValues,
	"operators": partOperators, "delegates": partDelegates}

type layoutSpan struct {
	start, end uint64
	cat        int
}

// RegionLayout computes what the region's bytes hold from its tables
// (already verified when the File was opened). It reads no payload and
// decodes no plan; its cost is one walk over the region's objects.
func (f *File) RegionLayout() *RegionLayout {
	size := uint64(len(f.region))
	nplans := f.Program.NumPlans()
	l := &RegionLayout{Size: int64(size), Plans: make([]PlanLayout, nplans),
		InlineDelegateData: make([]int64, len(f.Program.BackendDelegateData))}
	spans := []layoutSpan{{0, min(8, size), catPrefix}}
	if f.Header != nil {
		spans = append(spans, layoutSpan{8, min(8+uint64(f.Header.Length), size), catHeader})
	}
	fbverify.Walk(f.region, fbProgram, func(start, end uint64, kind fbverify.SpanKind, path []fbverify.Step) {
		spans = append(spans, layoutSpan{start, end, layoutCat(kind, path, nplans, len(l.InlineDelegateData))})
	})
	slices.SortFunc(spans, func(a, b layoutSpan) int {
		return cmp.Or(cmp.Compare(a.start, b.start), a.cat-b.cat) // fixed categories (negative) first
	})
	var high uint64 // bytes below high are counted
	var counted int64
	for _, s := range spans {
		from := max(s.start, high)
		end := min(s.end, size)
		if end <= from {
			continue
		}
		n := int64(end - from)
		high = end
		counted += n
		switch {
		case s.cat < 0:
			*[]*int64{&l.Prefix, &l.Header, &l.Tables, &l.Vtables, &l.ConstantBuffer}[-1-s.cat] += n
		case s.cat < nplans*layoutParts:
			p := &l.Plans[s.cat/layoutParts]
			*[]*int64{&p.Instructions, &p.Values, &p.Operators, &p.Delegates, &p.Other}[s.cat%layoutParts] += n
		default:
			l.InlineDelegateData[s.cat-nplans*layoutParts] += n
		}
	}
	l.Padding = int64(size) - counted
	return l
}

// layoutCat classifies an object the walk met by its kind and path.
func layoutCat(kind fbverify.SpanKind, path []fbverify.Step, nplans, ninline int) int {
	if kind == fbverify.SpanVtable {
		return catVtables
	}
	if len(path) == 0 {
		return catTables
	}
	top := path[0]
	switch top.Field {
	case "execution_plan":
		if top.Index < 0 || top.Index >= nplans {
			return catTables
		}
		part := partOther
		if len(path) > 1 {
			if p, ok := planParts[path[1].Field]; ok {
				part = p
			}
		}
		return top.Index*layoutParts + part
	case "backend_delegate_data":
		if top.Index < 0 || top.Index >= ninline {
			return catTables
		}
		return nplans*layoutParts + top.Index
	case "constant_buffer":
		return catConstantBuffer
	}
	return catTables
}
