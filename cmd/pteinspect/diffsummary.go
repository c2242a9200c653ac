package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/input"
)

// writeDiffSummary prints the change summary of two programs: the verdict
// first, then each method that differs, methods on one side, named data
// and TensorRT delegates. structural says whether the path diff found
// differences (a file can differ in layout only).
func writeDiffSummary(w io.Writer, names [2]string, s *inspect.DiffSummary, diffs []inspect.Difference) {
	structural := len(diffs) > 0
	// Every line is escaped whole: names and values come from the files.
	p := func(format string, args ...any) { fmt.Fprintln(w, escText(fmt.Sprintf(format, args...))) }
	na, nb := esc(input.Display(names[0])), esc(input.Display(names[1]))
	switch {
	case s.BitwiseEqual:
		p("%s and %s are bitwise equal (%d bytes)", na, nb, s.SizeA)
		return
	case !structural:
		p("%s (%d bytes) and %s (%d bytes) differ only in layout: where things are in the file (--layout)", na, s.SizeA, nb, s.SizeB)
		return
	}
	p("%s (%d bytes) and %s (%d bytes) differ", na, s.SizeA, nb, s.SizeB)
	if s.SpecsOnly {
		p("Only compile specs differ:")
		writeSpecs(p, s.SpecChanges)
	}
	for _, m := range s.Methods {
		writeMethodDiff(p, m)
	}
	if len(s.ExtraMethodsInA) > 0 {
		p("Methods only in A: %s", strings.Join(each(s.ExtraMethodsInA, esc), ", "))
	}
	if len(s.ExtraMethodsInB) > 0 {
		p("Methods only in B: %s", strings.Join(each(s.ExtraMethodsInB, esc), ", "))
	}
	if nd := s.NamedData; len(nd.OnlyInA)+len(nd.OnlyInB)+len(nd.Changed) > 0 {
		p("Named data:")
		listLine(p, "only in A", nd.OnlyInA)
		listLine(p, "only in B", nd.OnlyInB)
		listLine(p, "different bytes", nd.Changed)
	}
	if !s.SpecsOnly {
		// The compile specs of delegates the TensorRT part does not show.
		type at struct{ plan, del int }
		shown := map[at]bool{}
		for _, t := range s.TensorRT {
			shown[at{t.MethodIndex, t.DelegateIndex}] = true
		}
		var rest []inspect.SpecChange
		for _, c := range s.SpecChanges {
			if !shown[at{c.MethodIndex, c.DelegateIndex}] {
				rest = append(rest, c)
			}
		}
		if len(rest) > 0 {
			p("Compile specs:")
			writeSpecs(p, rest)
		}
	}
	if len(s.TensorRT) > 0 {
		p("TensorRT delegates:")
		if s.SpecsOnly {
			// Every engine is unchanged and the specs are listed above:
			// alike delegates are one line.
			var items []groupItem
			for _, t := range s.TensorRT {
				items = append(items, groupItem{key: budgetChange(t), where: delegateAt(t.Method, t.DelegateIndex), single: trtLine(t), trt: t})
			}
			printGrouped(p, items, func(key string, g []groupItem) string {
				return "engines unchanged (" + engineSizes(g) + "), " + key
			})
		} else {
			for _, t := range s.TensorRT {
				p("  %s", trtLine(t))
				for _, c := range t.Specs {
					p("    %s", specLine(c))
				}
			}
		}
	}
	if !s.SpecsOnly && len(s.Methods)+len(s.ExtraMethodsInA)+len(s.ExtraMethodsInB)+len(s.TensorRT) == 0 &&
		len(s.NamedData.OnlyInA)+len(s.NamedData.OnlyInB)+len(s.NamedData.Changed) == 0 {
		// Nothing the summary names: show the structural differences.
		p("Other differences:")
		for i, d := range diffs {
			if i == maxOtherLines {
				p("  ... %d more (diff --paths lists every one)", len(diffs)-i)
				break
			}
			p("  %s", d.String())
		}
	}
}

// maxOtherLines is how many structural differences the summary lists when
// it has nothing else to say.
const maxOtherLines = 20

// listLine prints "  WHAT: a, b, c", or nothing when v is empty.
func listLine(p func(string, ...any), what string, v []string) {
	if len(v) > 0 {
		p("  %s: %s", what, strings.Join(each(v, esc), ", "))
	}
}

// writeSpecs prints compile spec changes, one line for a change alike in
// several delegates.
func writeSpecs(p func(string, ...any), changes []inspect.SpecChange) {
	var items []groupItem
	for _, c := range changes {
		items = append(items, groupItem{
			key:    esc(c.Backend) + " " + esc(c.Key) + ": " + specValues(c),
			where:  delegateAt(c.Method, c.DelegateIndex),
			single: specLine(c),
		})
	}
	printGrouped(p, items, func(key string, _ []groupItem) string { return key })
}

// specLine is one compile spec change: where, key, old and new value.
func specLine(c inspect.SpecChange) string {
	return fmt.Sprintf("%s (%s) %s: %s", delegateAt(c.Method, c.DelegateIndex), esc(c.Backend), esc(c.Key), specValues(c))
}

// specValues writes a spec's old and new value: `"A" -> "B"`, (absent)
// for a side without it.
func specValues(c inspect.SpecChange) string {
	side := func(v *string) string {
		if v == nil {
			return "(absent)"
		}
		return strconv.Quote(*v)
	}
	return side(c.A) + " -> " + side(c.B)
}

// trtLine is a TensorRT delegate's line: engine, metadata, budget.
func trtLine(t *inspect.TRTDiff) string {
	a, b := engineSize(t.EngineSize[0]), engineSize(t.EngineSize[1])
	engine := "engine unchanged (" + a + " bytes)"
	switch {
	case t.PayloadChanged && a == b:
		engine = "payload changed, engine " + a + " bytes"
	case t.PayloadChanged:
		engine = "payload changed, engine " + a + " -> " + b + " bytes"
	}
	if t.MetadataChanged {
		engine += ", metadata changed"
	}
	return delegateAt(t.Method, t.DelegateIndex) + ": " + engine + ", " + budgetChange(t)
}

func engineSize(v *uint64) string {
	if v == nil {
		return "unreadable"
	}
	return strconv.FormatUint(*v, 10)
}

// engineSizes writes the engine sizes of a group of delegates: "N bytes",
// or "N to M bytes".
func engineSizes(g []groupItem) string {
	var sizes []uint64
	for _, it := range g {
		if it.trt.EngineSize[0] == nil {
			return "some unreadable"
		}
		sizes = append(sizes, *it.trt.EngineSize[0])
	}
	if lo, hi := slices.Min(sizes), slices.Max(sizes); lo != hi {
		return fmt.Sprintf("%d to %d bytes", lo, hi)
	}
	return fmt.Sprintf("%d bytes each", sizes[0])
}

// budgetChange writes a TensorRT delegate's budget: "budget X", or
// "budget X -> Y".
func budgetChange(t *inspect.TRTDiff) string {
	budget := func(v *string) string {
		if v == nil {
			return "none"
		}
		return *v
	}
	if a, b := budget(t.Budget[0]), budget(t.Budget[1]); a != b {
		return "budget " + a + " -> " + b
	}
	return "budget " + budget(t.Budget[0])
}

// delegateAt names a delegate: "METHOD delegate I".
func delegateAt(method string, i int) string {
	return fmt.Sprintf("%s delegate %d", esc(method), i)
}

// groupItem is a line of a list whose alike lines are printed as one:
// key is what alike lines share, where the delegate, single the line of
// a group of one.
type groupItem struct {
	key, where, single string
	trt                *inspect.TRTDiff
}

// groupShown is how many delegates a group's line names.
const groupShown = 3

// printGrouped prints items in the order of their first appearance, a
// group of alike items as one line: "N delegates (a, b, c and K more):
// TEXT", with TEXT from text.
func printGrouped(p func(string, ...any), items []groupItem, text func(key string, g []groupItem) string) {
	var order []string
	groups := map[string][]groupItem{}
	for _, it := range items {
		if _, ok := groups[it.key]; !ok {
			order = append(order, it.key)
		}
		groups[it.key] = append(groups[it.key], it)
	}
	for _, k := range order {
		g := groups[k]
		if len(g) == 1 {
			p("  %s", g[0].single)
			continue
		}
		where := strings.Join(each(g[:min(len(g), groupShown)], func(it groupItem) string { return it.where }), ", ")
		if len(g) > groupShown {
			where += fmt.Sprintf(" and %d more", len(g)-groupShown)
		}
		p("  %d delegates (%s): %s", len(g), where, text(k, g))
	}
}

func writeMethodDiff(p func(string, ...any), m *inspect.MethodDiff) {
	switch {
	case m.NameA != nil:
		where := "B has no method of that name"
		if m.IndexInB != nil && *m.IndexInB >= 0 {
			where = fmt.Sprintf("%s is method %d in B", esc(*m.NameA), *m.IndexInB)
		}
		colon := ":"
		if m.NameOnly() {
			colon = ""
		}
		p("Method %d: %s in A, %s in B (compared by index; %s)%s", m.Index, esc(*m.NameA), esc(*m.NameB), where, colon)
	default:
		p("Method %d %s:", m.Index, esc(m.Name))
	}
	listLine(p, "operators only in A", m.OperatorsOnlyInA)
	listLine(p, "operators only in B", m.OperatorsOnlyInB)
	listLine(p, "delegates only in A", m.DelegatesOnlyInA)
	listLine(p, "delegates only in B", m.DelegatesOnlyInB)
	if v := m.NonConstBufferSizes; v != nil {
		p("  non_const_buffer_sizes: %s -> %s", ints(v[0], ", "), ints(v[1], ", "))
	}
	if v := m.ValueCount; v != nil {
		p("  values: %d -> %d", v[0], v[1])
	}
	if v := m.InstructionCount; v != nil {
		p("  instructions: %d -> %d", v[0], v[1])
	}
	if len(m.Tensors) > 0 {
		p("  tensors that differ (%d):", len(m.Tensors))
		for _, t := range m.Tensors {
			writeTensorDiff(p, t)
		}
	}
	if len(m.Values) > 0 {
		p("  values that differ (%d):", len(m.Values))
		for _, v := range m.Values {
			head := fmt.Sprintf("    [%d] %s", v.Index, esc(v.TypeA))
			if v.TypeA != v.TypeB {
				head += " -> " + esc(v.TypeB)
			}
			for _, f := range v.Fields {
				head += fmt.Sprintf(", %s: %s -> %s", f.Field, jsonText(f.A), jsonText(f.B))
			}
			p("%s", head)
			if u := usesText(v.UsedByA); u != "" {
				p("        used in A as %s", u)
			}
			if u := usesText(v.UsedByB); u != "" {
				p("        used in B as %s", u)
			}
		}
	}
	for _, side := range []struct {
		name string
		refs []*inspect.TensorRef
	}{{"A", m.TensorsOnlyInA}, {"B", m.TensorsOnlyInB}} {
		if len(side.refs) > 0 {
			p("  tensors only in %s (%d):", side.name, len(side.refs))
			for _, r := range side.refs {
				p("    %s", refText(r))
			}
		}
	}
}

// refText names a tensor: index, constant or not, type and shape, name.
func refText(r *inspect.TensorRef) string {
	kind := "T"
	if r.DataBufferIdx > 0 {
		kind = "CT" // upstream's mark of a tensor with a constant buffer
	}
	s := fmt.Sprintf("[%d] %s %s%s", r.Index, kind, strings.ToLower(esc(r.ScalarType)), ints(r.Sizes, ", "))
	if r.FQN != nil {
		s += " " + esc(*r.FQN)
	}
	return s
}

// usesText lists uses as "arg 0 of aten::add.out, arg 1 of ...".
func usesText(us []inspect.Usage) string {
	return strings.Join(each(us, func(u inspect.Usage) string { return fmt.Sprintf("arg %d of %s", u.Arg, esc(u.Name)) }), ", ")
}

// jsonText writes a field value compactly, as its JSON form.
func jsonText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func writeTensorDiff(p func(string, ...any), t *inspect.TensorDiff) {
	head := "    " + refText(t.A)
	if u := usesText(t.A.UsedBy); u != "" {
		head += ", used as " + u
	}
	p("%s", head)
	if ub := usesText(t.B.UsedBy); ub != usesText(t.A.UsedBy) {
		if ub == "" {
			ub = "nothing"
		}
		p("        in B used as %s", ub)
	}
	for _, f := range t.Fields {
		p("        %s: %s -> %s", f.Field, jsonText(f.A), jsonText(f.B))
	}
	if t.ByteSizeA != t.ByteSizeB {
		p("        constant bytes: %d -> %d", t.ByteSizeA, t.ByteSizeB)
	}
	d := t.Data
	if d == nil {
		return
	}
	switch {
	case d.NotCompared != "":
		p("        constant data differs (elements not compared: %s)", d.NotCompared)
	case !d.Decoded:
		p("        constant data differs (%s elements not decoded)", strings.ToLower(esc(t.A.ScalarType)))
	case d.Elements == 0:
		// Nothing in common to compare: the byte sizes say it.
	case d.Differing == 0:
		p("        constant data differs in bytes only: %d elements compared, all equal", d.Elements)
	default:
		p("        constant data: %d of %d elements differ, max |diff| %s, mean |diff| %s",
			d.Differing, d.Elements, num(float64(d.MaxAbs)), num(float64(d.MeanAbs)))
		for _, e := range d.Samples {
			p("          %s (flat %d): %s -> %s", ints(e.Index, ", "), e.Flat, num(float64(e.A)), num(float64(e.B)))
		}
		if rest := d.Differing - int64(len(d.Samples)); rest > 0 {
			p("          ... %d more", rest)
		}
	}
}

// num writes a value with the shortest form that reads back the same.
func num(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}
