package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/ptekit/ptekit/check"
	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/executor"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/input"
	"github.com/ptekit/ptekit/pte"
)

// table writes rows of cells aligned in columns, indented by indent,
// exactly as text/tabwriter with padding 2 and no flags lays them out, but
// without its byte-by-byte state machine: -l prints a table per delegate.
// Rows are held until flush. A table whose rows all have the same number
// of cells, none holding a byte tabwriter gives a meaning (a tab or
// newline, which split a cell or a line there; an escape, a vertical tab
// or a form feed, which the views escape before printing), is laid out
// here as printAligned lays it out, which is then tabwriter's layout;
// any other is handed to tabwriter.
type table struct {
	w      io.Writer
	indent string
	cells  []string // every row's cells, one row after another
	ends   []int    // where each row's cells end in cells
	// bufs is where cells, ends and flush's buffer come from: taken from
	// tableBufsPool at the first row, given back by flush.
	bufs *tableBufs
}

// tableBufs is a table's storage, kept between tables: -l prints half a
// dozen small tables per method, and making their slices anew each time
// was a sixth of what it allocated.
type tableBufs struct {
	cells []string
	ends  []int
	buf   []byte
}

var tableBufsPool = sync.Pool{New: func() any { return new(tableBufs) }}

// maxPooledCells bounds the tables whose storage is kept for the next:
// the few with thousands of rows (a segment per engine) would hold it.
const maxPooledCells = 1 << 12

func newTable(w io.Writer, indent string) *table {
	return &table{w: w, indent: indent}
}

func (t *table) row(cols ...string) {
	if t.bufs == nil {
		t.bufs = tableBufsPool.Get().(*tableBufs)
		t.cells, t.ends = t.bufs.cells[:0], t.bufs.ends[:0]
	}
	t.cells = append(t.cells, cols...) // a copy: the caller may reuse cols
	t.ends = append(t.ends, len(t.cells))
}

// tablePadding is the space after the widest cell of a column.
const tablePadding = 2

func (t *table) flush() {
	if len(t.ends) == 0 {
		return
	}
	defer t.release()
	rows := func(yield func([]string) bool) {
		start := 0
		for _, end := range t.ends {
			if !yield(t.cells[start:end]) {
				return
			}
			start = end
		}
	}
	plain := !slices.ContainsFunc(t.cells, tabwriterByte)
	for i, end := range t.ends {
		plain = plain && end == (i+1)*t.ends[0] // rows of one shape
	}
	if !plain {
		tw := tabwriter.NewWriter(t.w, 0, 0, tablePadding, ' ', 0)
		for cells := range rows {
			fmt.Fprintln(tw, t.indent+strings.Join(cells, "\t"))
		}
		tw.Flush()
		return
	}
	widths, _ := measureAligned(t.indent, rows)
	buf := t.bufs.buf[:0]
	for cells := range rows {
		buf = appendCells(buf, t.indent, cells, widths)
	}
	t.w.Write(buf)
	t.bufs.buf = buf
}

// release gives the table's storage back to the pool, its cells cleared
// so that the pool keeps no string alive; the table starts empty.
func (t *table) release() {
	b := t.bufs
	t.bufs = nil
	clear(t.cells)
	b.cells, b.ends = t.cells[:0], t.ends[:0]
	t.cells, t.ends = nil, nil
	if cap(b.cells) <= maxPooledCells {
		tableBufsPool.Put(b)
	}
}

// tabwriterByte reports whether c holds a byte text/tabwriter gives a
// meaning of its own.
func tabwriterByte(c string) bool {
	for i := range len(c) {
		switch c[i] {
		case '\t', '\n', '\v', '\f', tabwriter.Escape:
			return true
		}
	}
	return false
}

// appendCells appends a line of cells to buf, after indent, each cell but
// the last padded to its column's width (widths[j], which counts the
// indent in the first column) and tablePadding more, and a newline.
func appendCells(buf []byte, indent string, cells []string, widths []int) []byte {
	buf = append(buf, indent...)
	for j, c := range cells {
		buf = append(buf, c...)
		if j == len(cells)-1 {
			break
		}
		pad := widths[j] + tablePadding - utf8.RuneCountInString(c)
		if j == 0 {
			pad -= utf8.RuneCountInString(indent)
		}
		for range pad {
			buf = append(buf, ' ')
		}
	}
	return append(buf, '\n')
}

// printAligned prints n rows (row(i) gives the cells of row i, every row
// the same number) aligned exactly as a table does, but without holding
// them: a first pass measures the columns, a second prints. row is called
// twice per row and must give the same cells both times.
func printAligned(w io.Writer, indent string, n int, row func(i int) []string) {
	rows := func(yield func([]string) bool) {
		for i := range n {
			if !yield(row(i)) {
				return
			}
		}
	}
	widths, _ := measureAligned(indent, rows)
	printMeasured(w, indent, rows, widths)
}

// measureAligned is printAligned's first pass, over the rows rows yields
// (which it ranges over once; printMeasured, once more): the width of each
// column but the last (the indent counted in the first), and the number
// of rows.
func measureAligned(indent string, rows iter.Seq[[]string]) (widths []int, n int) {
	in := utf8.RuneCountInString(indent)
	for cells := range rows {
		n++
		for j, c := range cells[:max(len(cells)-1, 0)] {
			if j == len(widths) {
				widths = append(widths, 0)
			}
			w := utf8.RuneCountInString(c)
			if j == 0 {
				w += in
			}
			widths[j] = max(widths[j], w)
		}
	}
	return widths, n
}

// printMeasured is printAligned's second pass.
func printMeasured(w io.Writer, indent string, rows iter.Seq[[]string], widths []int) {
	var buf []byte
	for cells := range rows {
		buf = appendCells(buf[:0], indent, cells, widths)
		w.Write(buf)
	}
}

// printHuman prints the --long view of a program, each method as st reads
// it, and returns st's document (for its problems). A read error part way
// leaves what was read before it printed.
func printHuman(w io.Writer, name string, f *pte.File, st *inspect.Stream, o *options) (*inspect.Document, error) {
	doc := st.Document()
	p := f.Program
	t := newTable(w, "")
	t.row("file", esc(input.Display(name)))
	t.row("size", fmt.Sprintf("%s (%d bytes)", compilespec.FormatSizeApprox(f.Size), f.Size))
	if doc.File.SHA256.Hex != "" {
		t.row("sha256", doc.File.SHA256.Hex)
	}
	t.row("identifier", fmt.Sprintf("%s, root table at byte %d", f.Identifier, f.RootOffset))
	if h := f.Header; h != nil {
		t.row("header", fmt.Sprintf("%s length %d: program %s, segment base %d, segment data %s",
			h.Magic, h.Length, compilespec.FormatSizeApprox(h.ProgramSize), h.SegmentBaseOffset, compilespec.FormatSizeApprox(h.SegmentDataSize)))
	} else {
		t.row("header", "none")
	}
	t.row("version", strconv.FormatUint(uint64(p.Version), 10))
	t.row("methods", fmt.Sprintf("%d: %s", f.Program.NumPlans(), joinOr(each(inspect.MethodNames(f), esc))))
	t.flush()

	printSegmentTable(w, len(doc.Segments), func(i int) segmentRow {
		s := doc.Segments[i]
		return segmentRow{s.Index, s.FileOffset, s.Size, s.Resolvable, "", s.UsedBy, s.SHA256}
	})
	// Printed: let them go before the methods are read (one per engine in
	// a program of many small engines).
	doc.Segments = nil
	if len(p.ConstantBuffer) > 0 {
		var total int
		for _, b := range p.ConstantBuffer {
			if b != nil {
				total += len(b.Storage)
			}
		}
		fmt.Fprintf(w, "\nconstant buffers (deprecated inline): %d, %s\n", len(p.ConstantBuffer), compilespec.FormatSizeApprox(total))
	}

	// Each delegate is printed as it is read and then let go: a method of
	// 65536 engines holds one at a time.
	if err := st.EachDelegate(func(m *inspect.MethodView) error {
		printMethod(w, m, o)
		return nil
	}, func(m *inspect.MethodView, d *inspect.Delegate) error {
		printDelegate(w, d, m.Plan.Delegates[d.DelegateIndex])
		return nil
	}); err != nil {
		return nil, err
	}
	printExternalData(w, f, doc.ExternalData)
	printProblems(w, doc.Problems)
	return doc, nil
}

// printProblems ends the view with what inspect.Check found, so that damage
// is not only visible inline.
func printProblems(w io.Writer, probs []inspect.Problem) {
	if len(probs) == 0 {
		fmt.Fprintf(w, "\nproblems: none\n")
		return
	}
	_, errs, _ := check.FirstError(probs)
	fmt.Fprintf(w, "\nproblems: %d error(s), %d warning(s)\n", errs, len(probs)-errs)
	for _, p := range probs {
		fmt.Fprintf(w, "  %s\n", escText(p.String()))
	}
}

// segmentRow is one line of a segments table, of a program or a .ptd file.
type segmentRow struct {
	index      int
	fileOffset uint64
	size       uint64
	resolvable bool
	note       string // after the offset, e.g. "(past segment data)"
	usedBy     []string
	sha256     inspect.Digest
}

// printSegmentTable prints the n segment rows row gives. A program of many
// small engines has a segment per engine, so the rows are made one at a
// time and the table streams (printAligned), never held whole.
func printSegmentTable(w io.Writer, n int, row func(i int) segmentRow) {
	fmt.Fprintf(w, "\nsegments (%d)\n", n)
	if n == 0 {
		return
	}
	hashed := !row(0).sha256.IsZero()
	printAligned(w, "  ", n+1, func(i int) []string {
		if i == 0 {
			head := []string{"INDEX", "FILE OFFSET", "SIZE", "USED BY"}
			if hashed {
				head = append(head, "SHA256")
			}
			return head
		}
		s := row(i - 1)
		off := strconv.FormatUint(s.fileOffset, 10)
		if !s.resolvable {
			off += " (unreachable)"
		} else if s.note != "" {
			off += " " + s.note
		}
		used := "unused"
		if len(s.usedBy) > 0 {
			used = escText(strings.Join(s.usedBy, ", "))
		}
		cells := []string{strconv.Itoa(s.index), off, compilespec.FormatSizeApprox(s.size), used}
		if hashed {
			cells = append(cells, cmp.Or(s.sha256.Hex, "-"))
		}
		return cells
	})
}

// printMethod prints one method of the --long view up to its delegates'
// header; printDelegate prints each delegate as it comes.
func printMethod(w io.Writer, m *inspect.MethodView, o *options) {
	pi, ep := m.Index, m.Plan
	fmt.Fprintf(w, "\nmethod %s (#%d)\n", esc(ep.Name), pi)
	printIO(w, "inputs", ep.Inputs, ep.Values)
	printIO(w, "outputs", ep.Outputs, ep.Values)

	t := newTable(w, "  ")
	t.row("values", strconv.Itoa(len(ep.Values)))
	t.row("instructions", instructionCounts(ep.Chains))
	ops := slices.DeleteFunc(slices.Clone(ep.Operators), func(op *pte.Operator) bool { return op == nil })
	t.row("operators", joinOr(each(ops, func(op *pte.Operator) string { return esc(executor.OperatorName(op)) })))
	t.row("memory plan", memoryPlan(ep.NonConstBufferSizes))
	t.flush()

	if o.backend != "" {
		fmt.Fprintf(w, "  delegates (%d of %d, backend %s)\n", inspect.SelectedDelegates(ep, o.backend), len(ep.Delegates), esc(o.backend))
	} else {
		fmt.Fprintf(w, "  delegates (%d)\n", len(ep.Delegates))
	}
}

func printIO(w io.Writer, what string, idx []int32, values []*pte.EValue) {
	fmt.Fprintf(w, "  %s (%d)\n", what, len(idx))
	if len(idx) == 0 {
		return
	}
	t := newTable(w, "    ")
	t.row("VALUE", "TYPE", "DTYPE", "SHAPE", "DYNAMISM")
	for _, i := range idx {
		var typ, dtype, shape, dynamism string
		if i < 0 || int(i) >= len(values) || values[i] == nil {
			typ = "(index out of range)"
		} else {
			switch x := values[i].Val.(type) {
			case nil:
				typ = "NONE"
			case *pte.UnknownValue:
				typ = "NONE"
				if x != nil {
					typ = "unknown tag " + strconv.Itoa(int(x.Tag))
				}
			case *pte.Tensor:
				typ = "Tensor (no table)"
				if x != nil {
					typ, dtype, shape, dynamism = "Tensor", x.ScalarType.String(), ints(x.Sizes, ", "), x.ShapeDynamism.String()
				}
			default:
				// The other members' KernelType does not read the
				// receiver, which may be nil in a damaged file.
				typ = x.KernelType().String()
			}
		}
		t.row(strconv.Itoa(int(i)), typ, dtype, shape, dynamism)
	}
	t.flush()
}

func instructionCounts(chains []*pte.Chain) string {
	counts := map[string]int{}
	total := 0
	for _, c := range chains {
		if c == nil {
			continue
		}
		for _, in := range c.Instructions {
			kind := "NONE"
			if in != nil && in.Args != nil {
				kind = in.Args.InstructionType().String()
			}
			counts[kind]++
			total++
		}
	}
	if total == 0 {
		return "0"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	return fmt.Sprintf("%d (%s) in %d chain(s)", total, strings.Join(parts, ", "), len(chains))
}

func memoryPlan(sizes []int64) string {
	if len(sizes) <= 1 {
		return "no planned memory"
	}
	var total int64
	parts := []string{}
	for i, s := range sizes[1:] {
		total = compilespec.AddSizes(total, s)
		parts = append(parts, fmt.Sprintf("#%d %s", i+1, compilespec.FormatSizeApprox(s)))
	}
	return fmt.Sprintf("%d arena(s), %s: %s", len(sizes)-1, compilespec.FormatSizeApprox(total), strings.Join(parts, ", "))
}

func printDelegate(w io.Writer, d *inspect.Delegate, bd *pte.BackendDelegate) {
	where := "no processed data reference"
	if d.Location != nil && d.Index != nil {
		where = fmt.Sprintf("%s #%d", d.Location, *d.Index)
	}
	size := "payload not reachable"
	if d.Size != nil {
		size = compilespec.FormatSizeApprox(*d.Size)
	}
	fmt.Fprintf(w, "    [%d] %s  %s  %s\n", d.DelegateIndex, esc(d.ID), where, size)
	if d.SHA256.Hex != "" {
		fmt.Fprintf(w, "        sha256  %s\n", d.SHA256.Hex)
	}
	if len(bd.CompileSpecs) > 0 {
		fmt.Fprintf(w, "        compile specs\n")
		t := newTable(w, "          ")
		for _, cs := range bd.CompileSpecs {
			if cs != nil {
				t.row(esc(cs.Key), escText(inspect.DecodeSpec(cs.Key, cs.Value)))
			}
		}
		t.flush()
	}
	if trt := d.TensorRT; trt != nil {
		printTensorRT(w, trt, bd)
	}
}

func printTensorRT(w io.Writer, trt *inspect.TensorRT, bd *pte.BackendDelegate) {
	head := "too short for a header"
	if trt.Magic != nil {
		head = "magic " + strconv.Quote(*trt.Magic)
		if isPlain(*trt.Magic) {
			head = *trt.Magic
		}
	}
	if trt.MetadataOffset != nil {
		head += fmt.Sprintf(", metadata %s at %d, engine %s at %d", compilespec.FormatSizeApprox(*trt.MetadataSize), *trt.MetadataOffset,
			compilespec.FormatSizeApprox(*trt.EngineSize), *trt.EngineOffset)
	}
	fmt.Fprintf(w, "        tensorrt blob  %s\n", head)
	t := newTable(w, "          ")
	if m := trt.Metadata; m != nil {
		var in, out []string
		for _, b := range m.IOBindings {
			if b.Input() {
				in = append(in, bindingText(b))
			} else {
				out = append(out, bindingText(b))
			}
		}
		t.row("inputs", joinOr(in))
		t.row("outputs", joinOr(out))
		t.row("aliased io", aliases(m.AliasedIO))
		hw := pyText(m.HardwareCompatible)
		if b, ok := m.HardwareCompatible.(bool); ok {
			hw = yesNo(b)
		}
		pin := ""
		if trt.Deployed != nil && trt.Deployed.OK {
			pin = escText(pinText(pinnedSpec(bd), int(trt.Deployed.DeviceID)))
		}
		t.row("device", fmt.Sprintf("%s, hardware compatible: %s%s", pyText(m.DeviceID), hw, pin))
		if p, ok := m.TargetPlatform.(string); !ok || p != "" {
			t.row("platform", pyText(m.TargetPlatform))
		}
	} else {
		t.row("metadata", "UNREADABLE: "+escText(trt.Error))
	}
	switch {
	case trt.Deployed == nil:
	case !trt.Deployed.OK:
		t.row("deployed", "the C++ reader REJECTS this blob: init fails with InvalidProgram")
	case trt.Metadata == nil:
		t.row("deployed", fmt.Sprintf("the C++ reader accepts it: inputs %s, outputs %s, device %d",
			quoteAll(trt.Deployed.Inputs), quoteAll(trt.Deployed.Outputs), trt.Deployed.DeviceID))
	}
	if len(trt.Hazards) == 0 {
		t.row("hazards", "none")
	}
	t.flush()
	for _, h := range trt.Hazards {
		fmt.Fprintf(w, "          HAZARD: %s\n", escText(h))
	}
}

// bindingText is a binding's quoted name, followed by its dtype and shape
// when the blob records them (the upstream exporter writes "" and []).
func bindingText(b inspect.TRTBinding) string {
	s := quoteValue(b.Name)
	if d, ok := b.DType.(string); !ok || d != "" {
		s += " " + pyText(b.DType)
	}
	if sh, ok := b.Shape.([]any); !ok || len(sh) > 0 {
		s += " " + strings.ReplaceAll(pyText(b.Shape), ",", ", ")
	}
	return s
}

// pyText shows a metadata value as Python's reader holds it: a string as
// is (escaped with esc), anything else as JSON text.
func pyText(v any) string {
	if s, ok := v.(string); ok {
		return esc(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// quoteValue is a string quoted, or any other value as JSON text (so that
// a name that is a number shows as one).
func quoteValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return pyText(v)
}

func isPlain(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x21 || r > 0x7e })
}

func quoteAll(s []string) string {
	return "[" + strings.Join(each(s, strconv.Quote), ", ") + "]"
}

func aliases(a []inspect.TRTAliasedIO) string {
	return joinOr(each(a, func(x inspect.TRTAliasedIO) string {
		return fmt.Sprintf("%s <- %s (%s)", quoteValue(x.Output), quoteValue(x.Input), pyText(x.Kind))
	}))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// pinnedSpec returns the delegate's target_device compile spec, or nil.
func pinnedSpec(bd *pte.BackendDelegate) []byte {
	v, _, _ := compilespec.Get(bd.CompileSpecs, compilespec.KeyTargetDevice)
	return v
}
