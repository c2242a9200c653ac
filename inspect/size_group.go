package inspect

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// SizeGroup is the items of a SizeReport that belong together: one
// method's, or the program's of one kind (Groups).
type SizeGroup struct {
	// Name is "method NAME", or "header", "program tables", "constants",
	// "mutable data", "named data", "unreferenced segments", "padding".
	Name string
	// Size is the sum of the items' sizes.
	Size int64
	// Items are the group's items, largest first (file order among
	// equals).
	Items []SizeItem
}

// SizeLine is the items of a group of one part and backend, summed
// (SizeGroup.Lines).
type SizeLine struct {
	Part, Backend string
	// Count is how many items it sums.
	Count int
	Size  int64
}

// Label names the line: the part, with its backend and count when it has
// them.
func (l SizeLine) Label() string {
	s := l.Part
	if l.Backend != "" {
		s = l.Backend + " " + s
	}
	if l.Count > 1 {
		s += fmt.Sprintf(" (%d)", l.Count)
	}
	return s
}

// GroupName returns the name of the group it belongs to: "method NAME"
// ("method #I" for an unnamed method I), or a part of the program.
func (it SizeItem) GroupName() string {
	if it.Plan >= 0 {
		if it.Method == "" {
			return fmt.Sprintf("method #%d", it.Plan) // unnamed
		}
		return "method " + it.Method
	}
	return cmp.Or(programGroups[it.Part], "program tables")
}

// programGroups names the group of each part of the program's that is not
// in "program tables".
var programGroups = map[string]string{
	PartPrefix: "header", PartHeader: "header", PartConstants: "constants", PartMutableData: "mutable data",
	PartNamedData: "named data", PartUnreferenced: "unreferenced segments",
	PartPadding: "padding", PartTrailing: "padding", PartRegionPadding: "padding",
}

// Label names the item within its group (which names the method): its
// part, and its delegate, backend, key and segment where it has them.
func (it SizeItem) Label() string {
	s := it.Part
	if it.Key != "" {
		s += " " + quoteLabel(it.Key)
	}
	if it.Delegate >= 0 {
		short := map[string]string{PartDelegatePayload: "payload", PartInlineDelegateData: "inline data"}[it.Part]
		s = fmt.Sprintf("delegate %d %s %s", it.Delegate, it.Backend, cmp.Or(short, s))
	}
	if it.Segment >= 0 {
		s += fmt.Sprintf(", segment %d", it.Segment)
	}
	return s
}

// quoteLabel quotes a key from the file when it is not plain text.
func quoteLabel(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '"' }) {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// Groups returns r's items by group, largest group first (then by name).
func (r *SizeReport) Groups() []SizeGroup {
	at := map[string]int{}
	var gs []SizeGroup
	for _, it := range r.Items {
		name := it.GroupName()
		k, ok := at[name]
		if !ok {
			k = len(gs)
			at[name] = k
			gs = append(gs, SizeGroup{Name: name})
		}
		gs[k].Size += it.Size
		gs[k].Items = append(gs[k].Items, it)
	}
	for i := range gs {
		slices.SortStableFunc(gs[i].Items, func(a, b SizeItem) int { return cmp.Compare(b.Size, a.Size) })
	}
	slices.SortStableFunc(gs, func(a, b SizeGroup) int {
		return cmp.Or(cmp.Compare(b.Size, a.Size), cmp.Compare(a.Name, b.Name))
	})
	return gs
}

// Lines sums g's items by part and backend, largest first.
func (g SizeGroup) Lines() []SizeLine {
	ls := sumLines(g.Items, func(it SizeItem) (SizeLine, bool) { return SizeLine{Part: it.Part, Backend: it.Backend}, true })
	slices.SortStableFunc(ls, func(a, b SizeLine) int { return cmp.Compare(b.Size, a.Size) })
	return ls
}

// Backends sums the delegate data (payloads in segments and inline data)
// of r by backend, largest first: Part is "", Count the number of
// payloads counted (a shared one once).
func (r *SizeReport) Backends() []SizeLine {
	ls := sumLines(r.Items, func(it SizeItem) (SizeLine, bool) {
		return SizeLine{Backend: it.Backend}, it.Part == PartDelegatePayload || it.Part == PartInlineDelegateData
	})
	slices.SortStableFunc(ls, func(a, b SizeLine) int {
		return cmp.Or(cmp.Compare(b.Size, a.Size), cmp.Compare(a.Backend, b.Backend))
	})
	return ls
}

// sumLines sums the items line gives a line of (ok), alike lines (by part
// and backend) summed into the first, in the order first met.
func sumLines(items []SizeItem, line func(SizeItem) (SizeLine, bool)) []SizeLine {
	at := map[SizeLine]int{}
	var ls []SizeLine
	for _, it := range items {
		l, ok := line(it)
		if !ok {
			continue
		}
		k, seen := at[l]
		if !seen {
			k = len(ls)
			at[l] = k
			ls = append(ls, l)
		}
		ls[k].Count++
		ls[k].Size += it.Size
	}
	return ls
}
