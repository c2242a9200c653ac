package inspect

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// Parts of a file a SizeItem names (SizeItem.Part). The JSON form
// (docs/json.md) uses these strings.
const (
	PartPrefix             = "prefix"               // root offset and file identifier
	PartHeader             = "extended header"      // eh00 (FH01 in a .ptd): its stored length
	PartInstructions       = "instructions"         // a method's chains
	PartValues             = "values"               // a method's value table
	PartOperators          = "operators"            // a method's operator table
	PartDelegateTables     = "delegate tables"      // a method's BackendDelegate tables and compile specs
	PartPlanTables         = "plan tables"          // the rest of a method's tables
	PartInlineDelegateData = "inline delegate data" // backend_delegate_data used by a delegate
	PartUnusedInlineData   = "unused inline data"   // backend_delegate_data no delegate uses
	PartConstantBuffer     = "constant buffer"      // deprecated inline constants
	PartTables             = "tables"               // every other table, vector and string
	PartVtables            = "vtables"              // every vtable
	PartRegionPadding      = "region padding"       // alignment inside the flatbuffer region
	PartDelegatePayload    = "delegate payload"     // a segment a delegate uses
	PartConstants          = "constants"            // the constant segment (per method that uses it)
	PartMutableData        = "mutable data"         // a mutable data segment
	PartNamedData          = "named data"           // a segment named data (or a .ptd key) uses
	PartUnreferenced       = "unreferenced segment" // a segment nothing uses
	PartPadding            = "padding"              // between the region and the segments, or between segments
	PartTrailing           = "trailing bytes"       // after the last segment (or the region)
)

// SizeReport says where the bytes of a file go: Items count every byte of
// the file exactly once, so their sizes sum to Size. It is built from the
// file's metadata alone (no payload byte is read): Size reads what opening
// the file read.
type SizeReport struct {
	// Kind is "pte" or "ptd".
	Kind string
	// Size is the file's size in bytes.
	Size int64
	// Items is what holds the bytes, in order: the head, the flatbuffer
	// region, then the segment area in file order.
	Items []SizeItem
	// Shared lists the segments (and inline data) that several users
	// share: each is counted once, for its first user.
	Shared []SizeShared
	// DedupSaved is what sharing saved: the bytes the Shared entries
	// would take again if every user had its own copy.
	DedupSaved int64
	// External is, with SizeOptions.Data, the external data each method
	// needs from the data files (bytes not in this file).
	External []SizeExternal
}

// SizeItem is one part of a file and its size.
type SizeItem struct {
	// Part says what the bytes are (one of the Part constants).
	Part string
	// Plan is the index of the method the bytes belong to (-1: the
	// program's), and Method its name.
	Plan   int
	Method string
	// Backend is the backend id of the delegate the bytes belong to.
	Backend string
	// Delegate is the index of that delegate in its method (-1: none).
	Delegate int
	// Key is the named data key (or the .ptd key).
	Key string
	// Segment is the segment index (-1: not a segment).
	Segment int
	// Size is the number of bytes.
	Size int64
}

// SizeShared is a segment or inline data entry several users share.
type SizeShared struct {
	// Part is PartDelegatePayload, PartNamedData, ... of the first user,
	// or PartInlineDelegateData.
	Part string
	// Segment is the segment index, -1 for inline delegate data.
	Segment int
	// Inline is the backend_delegate_data index, -1 for a segment.
	Inline int
	// Users is how many references share it.
	Users int
	// Size is the bytes counted once.
	Size int64
	// Saved is Size times the users past the first.
	Saved int64
}

// SizeExternal is the external data one method needs from one data file.
type SizeExternal struct {
	Method string
	// File is the data file's name, "" when no data file holds the
	// tensors (Missing counts them).
	File string
	// Tensors is how many EXTERNAL tensors it takes from File.
	Tensors int
	// Size is their bytes in File.
	Size int64
}

// SizeOptions tunes Size. Nil is the zero value.
type SizeOptions struct {
	// Data, when set, is the program's external data resolution
	// (ptd.Resolve): Size then lists what each method needs from it.
	Data *ptd.Resolution
}

// Total returns the sum of the items' sizes, which is Size for a report
// that Size made.
func (r *SizeReport) Total() int64 {
	var n int64
	for _, it := range r.Items {
		n += it.Size
	}
	return n
}

// Size accounts for every byte of the program f: the header, the
// flatbuffer region by method and part (pte.File.RegionLayout), each
// segment by what uses it, padding and trailing bytes. It reads no
// payload.
func Size(f *pte.File, opts *SizeOptions) (*SizeReport, error) {
	p := f.Program
	r := &SizeReport{Kind: "pte", Size: f.Size}
	names := MethodNames(f)
	add := r.add
	// item is an item of part of method plan (-1: the program's).
	item := func(part string, plan, seg int, size int64) SizeItem {
		it := newSizeItem(part, seg, size)
		if plan >= 0 {
			it.Plan, it.Method = plan, names[plan]
		}
		return it
	}
	// use adds u, a user's item, for size bytes of segment seg.
	use := func(u SizeItem, seg int, size int64) {
		u.Segment, u.Size = seg, size
		add(u)
	}

	// Who uses what: delegates first (in method and delegate order), then
	// constants, mutable data and named data.
	segUsers := make([][]SizeItem, len(p.Segments))
	inlineUsers := make([][]SizeItem, len(p.BackendDelegateData))
	for i := range names {
		for d, bd := range f.Program.PlanDelegates(i) {
			if bd == nil || bd.Processed == nil {
				continue
			}
			u := item(PartDelegatePayload, i, -1, 0)
			u.Backend, u.Delegate = bd.ID, d
			switch bd.Processed.Location {
			case pte.DataLocationSEGMENT:
				appendAt(segUsers, bd.Processed.Index, u)
			case pte.DataLocationINLINE:
				u.Part = PartInlineDelegateData
				appendAt(inlineUsers, bd.Processed.Index, u)
			}
		}
	}
	constSeg := -1
	if cs := p.ConstantSegment; cs != nil && len(cs.Offsets) > 1 &&
		appendAt(segUsers, cs.SegmentIndex, newSizeItem(PartConstants, -1, 0)) {
		constSeg = int(cs.SegmentIndex)
	}
	for _, m := range p.MutableDataSegments {
		if m != nil {
			appendAt(segUsers, m.SegmentIndex, newSizeItem(PartMutableData, -1, 0))
		}
	}
	for _, nd := range p.NamedData {
		if nd != nil {
			appendAt(segUsers, nd.SegmentIndex, SizeItem{Part: PartNamedData, Plan: -1, Delegate: -1, Key: nd.Key})
		}
	}

	// The head and the flatbuffer region.
	l := f.RegionLayout()
	add(newSizeItem(PartPrefix, -1, l.Prefix))
	add(newSizeItem(PartHeader, -1, l.Header))
	add(newSizeItem(PartTables, -1, l.Tables))
	add(newSizeItem(PartVtables, -1, l.Vtables))
	add(newSizeItem(PartConstantBuffer, -1, l.ConstantBuffer))
	for j, n := range l.InlineDelegateData {
		users := inlineUsers[j]
		if len(users) == 0 {
			add(newSizeItem(PartUnusedInlineData, -1, n))
			continue
		}
		use(users[0], -1, n)
		r.share(PartInlineDelegateData, -1, j, len(users), n)
	}
	for i, pl := range l.Plans {
		for _, part := range []struct {
			name string
			n    int64
		}{{PartInstructions, pl.Instructions}, {PartValues, pl.Values}, {PartOperators, pl.Operators},
			{PartDelegateTables, pl.Delegates}, {PartPlanTables, pl.Other}} {
			add(item(part.name, i, -1, part.n))
		}
	}
	add(newSizeItem(PartRegionPadding, -1, l.Padding))

	// The segment area: each segment's bytes that no earlier one holds,
	// in file order; the gaps are padding, what follows the last one
	// trailing bytes.
	// Without a segment base the segments have no place in the file.
	var spans []segSpan
	if h := f.Header; h != nil && h.SegmentBaseOffset != 0 {
		spans = fileSpans(len(p.Segments), h.SegmentBaseOffset, f.Size, func(i int) (uint64, uint64, bool) {
			s := p.Segments[i]
			return s.Offset, s.Size, s != nil
		})
	}
	r.segmentArea(spans, l.Size, func(s segSpan, from, to int64) {
		users := segUsers[s.seg]
		switch {
		case to == from:
		case len(users) == 0:
			add(newSizeItem(PartUnreferenced, s.seg, to-from))
			return
		case s.seg == constSeg:
			order, bytesOf := constantOwners(f, len(names), s.start, from, to)
			for _, plan := range order {
				add(item(PartConstants, plan, s.seg, bytesOf[plan]))
			}
		default:
			use(users[0], s.seg, to-from)
		}
		if len(users) > 1 {
			r.share(users[0].Part, s.seg, -1, len(users), to-from)
		}
	})
	if opts != nil && opts.Data != nil {
		r.External = externalNeeds(opts.Data)
	}
	return r.checked()
}

// appendAt appends v to lists[i] when i is in range, and says whether it is.
func appendAt[T any](lists [][]T, i uint32, v T) bool {
	ok := int64(i) < int64(len(lists))
	if ok {
		lists[i] = append(lists[i], v)
	}
	return ok
}

// segmentArea counts the segment area, which starts at end: each span's
// bytes that no earlier span holds, in file order, by what count makes of
// them (the bytes from to to of span s; from == to when they are all
// counted already), the gaps as padding, what follows the last as trailing
// bytes.
func (r *SizeReport) segmentArea(spans []segSpan, end int64, count func(s segSpan, from, to int64)) {
	for _, s := range spans {
		from, to := max(s.start, end), s.end
		if to <= from {
			count(s, from, from)
			continue
		}
		if from > end {
			r.add(newSizeItem(PartPadding, -1, from-end))
		}
		end = to
		count(s, from, to)
	}
	if end < r.Size {
		r.add(newSizeItem(PartTrailing, -1, r.Size-end))
	}
}

// add lists it, unless it holds no byte.
func (r *SizeReport) add(it SizeItem) {
	if it.Size > 0 {
		r.Items = append(r.Items, it)
	}
}

// newSizeItem is an item of part of size bytes that belongs to no method
// or delegate, and to segment seg (-1: none).
func newSizeItem(part string, seg int, size int64) SizeItem {
	return SizeItem{Part: part, Plan: -1, Delegate: -1, Segment: seg, Size: size}
}

// checked returns r when its items sum to its size, as every byte is
// counted once by construction; a mismatch is a bug.
func (r *SizeReport) checked() (*SizeReport, error) {
	if total := r.Total(); total != r.Size {
		return nil, fmt.Errorf("inspect: size breakdown sums to %d bytes, not the file's %d", total, r.Size)
	}
	return r, nil
}

// share notes a segment or inline entry shared by users references.
func (r *SizeReport) share(part string, seg, inline, users int, size int64) {
	if users < 2 {
		return
	}
	saved := size * int64(users-1)
	r.Shared = append(r.Shared, SizeShared{Part: part, Segment: seg, Inline: inline, Users: users, Size: size, Saved: saved})
	r.DedupSaved += saved
}

// segSpan is the file range of a segment.
type segSpan struct {
	seg        int
	start, end int64
}

// fileSpans places n segments (offset and size of each, relative to base)
// in a file of size bytes, clipped to it and ordered by start (then
// index).
func fileSpans(n int, base uint64, size int64, seg func(i int) (off, n uint64, ok bool)) []segSpan {
	spans := make([]segSpan, 0, n)
	for i := range n {
		off, sz, ok := seg(i)
		if !ok {
			continue
		}
		start := base + off
		if start < off || start >= uint64(size) {
			continue // outside the file: holds none of its bytes
		}
		end := min(start+sz, uint64(size))
		if end < start {
			end = uint64(size)
		}
		spans = append(spans, segSpan{i, int64(start), int64(end)})
	}
	slices.SortFunc(spans, func(a, b segSpan) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.seg, b.seg))
	})
	return spans
}

// constantOwners splits the counted bytes [from, to) of the constant
// segment (which starts at start) by the method (of plans) that first uses
// each constant; bytes no method uses are the program's (-1), as splitAt.
func constantOwners(f *pte.File, plans int, start, from, to int64) (order []int, bytesOf map[int]int64) {
	offs := f.Program.ConstantSegment.Offsets
	// owner[k]: the first plan whose tensors use constant index k.
	owner := slices.Repeat([]int{-1}, len(offs))
	for i := range plans {
		for _, ev := range f.Program.PlanValues(i) {
			t, ok := ev.Val.(*pte.Tensor)
			if !ok || t.AllocationInfo != nil || t.DataBufferIdx == 0 || int64(t.DataBufferIdx) >= int64(len(owner)) {
				continue
			}
			if t.ExtraTensorInfo != nil && t.ExtraTensorInfo.Location == pte.TensorDataLocationEXTERNAL {
				continue
			}
			if owner[t.DataBufferIdx] < 0 {
				owner[t.DataBufferIdx] = i
			}
		}
	}
	// Each distinct offset starts an entry running to the next one; the
	// entry goes to the first plan using any index at that offset.
	return splitAt(start, from, to, offs, func(k int) int { return owner[k] })
}

// splitAt divides the counted bytes [from, to) of an area that starts at
// start among entries at offsets offs (relative to start): each distinct
// offset starts a range running to the next larger one or to the end,
// which goes to the first entry there whose owner (ownerOf(k)) is not -1.
// Bytes before the first offset, or that no entry owns, go to -1. It
// returns the bytes of each owner, and the owners in the order met.
func splitAt(start, from, to int64, offs []uint64, ownerOf func(k int) int) (order []int, bytesOf map[int]int64) {
	type entry struct {
		off   uint64
		owner int
	}
	entries := make([]entry, 0, len(offs))
	for k, o := range offs {
		entries = append(entries, entry{o, ownerOf(k)})
	}
	slices.SortStableFunc(entries, func(a, b entry) int { return cmp.Compare(a.off, b.off) })
	bytesOf = make(map[int]int64)
	credit := func(owner int, n int64) {
		if n <= 0 {
			return
		}
		if _, ok := bytesOf[owner]; !ok {
			order = append(order, owner)
		}
		bytesOf[owner] += n
	}
	cursor := from
	for k := 0; k < len(entries); {
		j, owner := k, -1
		for ; j < len(entries) && entries[j].off == entries[k].off; j++ {
			if owner < 0 {
				owner = entries[j].owner
			}
		}
		eStart := start + int64(min(entries[k].off, uint64(to-start)))
		eEnd := to
		if j < len(entries) {
			eEnd = start + int64(min(entries[j].off, uint64(to-start)))
		}
		lo, hi := max(eStart, cursor), min(eEnd, to)
		if lo > cursor {
			credit(-1, lo-cursor) // before the first entry
			cursor = lo
		}
		if hi > lo {
			credit(owner, hi-lo)
			cursor = hi
		}
		k = j
	}
	credit(-1, to-cursor)
	return order, bytesOf
}

// externalNeeds sums, per method and data file, the EXTERNAL tensors a
// resolution found.
func externalNeeds(res *ptd.Resolution) []SizeExternal {
	out := []SizeExternal{}
	for _, m := range res.Methods {
		at := map[int]int{} // file -> index in out
		for _, t := range m.Tensors {
			k, ok := at[t.File]
			if !ok {
				name := ""
				if t.File >= 0 && t.File < len(res.Files) {
					name = res.Files[t.File].Name
				}
				k = len(out)
				at[t.File] = k
				out = append(out, SizeExternal{Method: m.Name, File: name})
			}
			out[k].Tensors++
			if t.Size > 0 {
				out[k].Size += t.Size
			}
		}
	}
	return out
}

// SizePTD accounts for every byte of the data file f: its head, its
// flatbuffer tables, each segment by the key that uses it, padding and
// trailing bytes. It reads no payload.
func SizePTD(f *ptd.File) (*SizeReport, error) {
	r := &SizeReport{Kind: "ptd", Size: f.Size}
	add := r.add
	h := f.Header
	clip := func(v uint64) int64 { return int64(min(v, uint64(f.Size))) }
	end := clip(8)
	add(newSizeItem(PartPrefix, -1, end))
	hEnd := max(end, clip(ptd.HeaderOffset+uint64(h.Length)))
	add(newSizeItem(PartHeader, -1, hEnd-end))
	end = hEnd
	fbStart := max(end, clip(h.FlatbufferOffset))
	add(newSizeItem(PartRegionPadding, -1, fbStart-end))
	fbEnd := fbStart
	if h.FlatbufferOffset+h.FlatbufferSize >= h.FlatbufferOffset {
		fbEnd = max(fbStart, clip(h.FlatbufferOffset+h.FlatbufferSize))
	}
	add(newSizeItem(PartTables, -1, fbEnd-fbStart))
	end = fbEnd
	users := make([][]string, len(f.Segments))
	for _, nd := range f.NamedData {
		appendAt(users, nd.SegmentIndex, nd.Key)
	}
	// The older layout packs tensors into segments at offsets.
	var legacy [][]ptd.LegacyTensor
	if f.Legacy != nil {
		legacy = make([][]ptd.LegacyTensor, len(f.Segments))
		for _, lt := range f.Legacy.Tensors {
			appendAt(legacy, lt.SegmentIndex, lt)
		}
	}
	spans := fileSpans(len(f.Segments), h.SegmentBaseOffset, f.Size, func(i int) (uint64, uint64, bool) {
		return f.Segments[i].Offset, f.Segments[i].Size, true
	})
	r.segmentArea(spans, end, func(s segSpan, from, to int64) {
		switch u := users[s.seg]; {
		case to == from:
			r.share(PartNamedData, s.seg, -1, len(u), 0)
		case legacy != nil && len(legacy[s.seg]) > 0:
			ts := legacy[s.seg]
			offs := make([]uint64, len(ts))
			for k, lt := range ts {
				offs[k] = lt.Offset
			}
			order, bytesOf := splitAt(s.start, from, to, offs, func(k int) int { return k })
			for _, k := range order {
				it := newSizeItem(PartUnreferenced, s.seg, bytesOf[k])
				if k >= 0 {
					it.Part, it.Key = PartNamedData, ts[k].FullyQualifiedName
				}
				add(it)
			}
		default:
			it := newSizeItem(PartUnreferenced, s.seg, to-from)
			if len(u) > 0 {
				it.Part, it.Key = PartNamedData, u[0]
				r.share(PartNamedData, s.seg, -1, len(u), to-from)
			}
			add(it)
		}
	})
	return r.checked()
}

// sizeJSON is the JSON form of a SizeReport (docs/json.md, "--size"):
// every member present, null where a value is absent.
type sizeJSON struct {
	Kind       string              `json:"kind"`
	Size       int64               `json:"size"`
	Items      []sizeItemJSON      `json:"items"`
	Shared     []sizeSharedJSON    `json:"shared"`
	DedupSaved int64               `json:"dedup_saved"`
	External   *[]sizeExternalJSON `json:"external,omitempty"`
}

type sizeItemJSON struct {
	Part     string  `json:"part"`
	Plan     *int    `json:"plan"`
	Method   *string `json:"method"`
	Backend  *string `json:"backend"`
	Delegate *int    `json:"delegate"`
	Key      *string `json:"key"`
	Segment  *int    `json:"segment"`
	Size     int64   `json:"size"`
}

type sizeSharedJSON struct {
	Part    string `json:"part"`
	Segment *int   `json:"segment"`
	Inline  *int   `json:"inline"`
	Users   int    `json:"users"`
	Size    int64  `json:"size"`
	Saved   int64  `json:"saved"`
}

type sizeExternalJSON struct {
	Method  string  `json:"method"`
	File    *string `json:"file"`
	Tensors int     `json:"tensors"`
	Size    int64   `json:"size"`
}

// strOrNil and intOrNil give null for "" and for a negative index.
func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func intOrNil(i int) *int {
	if i < 0 {
		return nil
	}
	return &i
}

// MarshalJSON writes the report's JSON form (docs/json.md).
func (r *SizeReport) MarshalJSON() ([]byte, error) {
	j := sizeJSON{Kind: r.Kind, Size: r.Size, Items: []sizeItemJSON{}, Shared: []sizeSharedJSON{}, DedupSaved: r.DedupSaved}
	for _, it := range r.Items {
		j.Items = append(j.Items, sizeItemJSON{it.Part, intOrNil(it.Plan), strOrNil(it.Method), strOrNil(it.Backend), intOrNil(it.Delegate),
			strOrNil(it.Key), intOrNil(it.Segment), it.Size})
	}
	for _, s := range r.Shared {
		j.Shared = append(j.Shared, sizeSharedJSON{s.Part, intOrNil(s.Segment), intOrNil(s.Inline), s.Users, s.Size, s.Saved})
	}
	if r.External != nil {
		ext := []sizeExternalJSON{}
		for _, e := range r.External {
			ext = append(ext, sizeExternalJSON{e.Method, strOrNil(e.File), e.Tensors, e.Size})
		}
		j.External = &ext
	}
	return json.Marshal(j)
}

// WriteSizeJSON writes r's JSON form indented by two spaces, as
// pteinspect --size --json prints it.
func WriteSizeJSON(w io.Writer, r *SizeReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}
