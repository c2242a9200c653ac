package fbverify

import "encoding/binary"

// SpanKind says what a byte range that Walk reports holds.
type SpanKind uint8

// Span kinds.
const (
	SpanTable  SpanKind = iota // a table's inline fields, from its vtable offset to its last field
	SpanVtable                 // a vtable
	SpanVector                 // a vector: length prefix and elements
	SpanString                 // a string: length prefix, bytes and NUL terminator
)

// Step is one level of the path Walk gives to an object: a field of a
// table and, for an element of a vector of tables, its index (-1 for the
// field itself).
type Step struct {
	Field string
	Index int
}

// Walk visits every table, vtable, vector and string reachable from the
// root of buf, which Verify accepted with root, and calls fn with its byte
// range [start, end), its kind and the path to it from the root table (an
// empty path for the root table itself; fn must not keep the slice). It
// goes depth first in slot order, and reports a table, vtable, vector or
// string reached more than once only the first time, so a byte shared by
// several objects may still be reported by each of them. Walk reads only
// inside buf: on a buffer Verify did not accept it stops where a reference
// leaves it, without failing.
func Walk(buf []byte, root *Table, fn func(start, end uint64, kind SpanKind, path []Step)) {
	w := &walker{buf: buf, fn: fn, seen: map[uint64]bool{}}
	if len(buf) < 8 {
		return
	}
	w.table(uint64(binary.LittleEndian.Uint32(buf)), root, 0)
}

type walker struct {
	buf  []byte
	fn   func(start, end uint64, kind SpanKind, path []Step)
	seen map[uint64]bool // positions of tables, vtables, vectors and strings reported (keys of vtables are odd-shifted)
	path []Step
}

func (w *walker) within(off, n uint64) bool { return within(w.buf, off, n) }

func (w *walker) u32(off uint64) uint64 { return uint64(binary.LittleEndian.Uint32(w.buf[off:])) }

// target returns where the uoffset at off points, and whether it is usable.
func (w *walker) target(off uint64) (uint64, bool) {
	if !w.within(off, 4) {
		return 0, false
	}
	u := w.u32(off)
	if u == 0 || !w.within(off+u, 1) {
		return 0, false
	}
	return off + u, true
}

// once reports whether key is met for the first time.
func (w *walker) once(key uint64) bool {
	if w.seen[key] {
		return false
	}
	w.seen[key] = true
	return true
}

func (w *walker) table(pos uint64, t *Table, depth int) {
	if t == nil || depth > MaxDepth || !w.within(pos, 4) || !w.once(pos<<2) {
		return
	}
	at := int64(pos) - int64(int32(w.u32(pos)))
	if at < 0 || !w.within(uint64(at), 4) {
		return
	}
	vt := uint64(at)
	vtSize := uint64(binary.LittleEndian.Uint16(w.buf[vt:]))
	if !w.within(vt, vtSize) {
		return
	}
	if w.once(vt<<2 | 1) {
		w.fn(vt, vt+vtSize, SpanVtable, w.path)
	}
	// The table's extent: the size its vtable states, or its last field
	// when that lies further (the Python builder stores sizes that leave
	// the last field out).
	end := pos + 4
	if vtSize >= 4 {
		end = max(end, pos+uint64(binary.LittleEndian.Uint16(w.buf[vt+2:])))
	}
	type ref struct {
		abs uint64
		f   *Field
		tag byte
	}
	var refs []ref
	var tag byte
	for slot := range t.Fields {
		vo := uint64(4 + 2*slot)
		if vo+2 > vtSize {
			break
		}
		fo := uint64(binary.LittleEndian.Uint16(w.buf[vt+vo:]))
		f := &t.Fields[slot]
		if fo == 0 {
			if f.Kind == KindUnionType {
				tag = 0
			}
			continue
		}
		width := f.width()
		if !w.within(pos+fo, width) {
			continue
		}
		end = max(end, pos+fo+width)
		switch f.Kind {
		case KindUnionType:
			tag = w.buf[pos+fo]
		case KindScalar:
		default:
			refs = append(refs, ref{pos + fo, f, tag})
		}
	}
	if !w.within(pos, end-pos) {
		end = uint64(len(w.buf))
	}
	w.fn(pos, end, SpanTable, w.path)
	for _, r := range refs {
		w.path = append(w.path, Step{Field: r.f.Name, Index: -1})
		w.value(r.abs, r.f, r.tag, depth)
		w.path = w.path[:len(w.path)-1]
	}
}

// value walks what the reference field f at abs points to.
func (w *walker) value(abs uint64, f *Field, tag byte, depth int) {
	target, ok := w.target(abs)
	if !ok {
		return
	}
	switch f.Kind {
	case KindString:
		w.vector(target, 1, 1, SpanString)
	case KindTable:
		w.table(target, f.Table, depth+1)
	case KindVector:
		w.vector(target, uint64(f.Size), 0, SpanVector)
	case KindTableVec:
		n, ok := w.vector(target, 4, 0, SpanVector)
		if !ok {
			return
		}
		last := len(w.path) - 1
		for i := uint64(0); i < n; i++ {
			w.path[last].Index = int(i)
			if t, ok := w.target(target + 4 + 4*i); ok {
				w.table(t, f.Table, depth+1)
			}
		}
		w.path[last].Index = -1
	case KindUnion:
		if int(tag) < len(f.Union) {
			w.table(target, f.Union[tag], depth+1)
		}
	}
}

// vector reports the vector (or string, with extra 1 for its NUL) at pos
// and returns its element count; ok is false when it does not fit in buf.
// A vector reported before returns its count without being reported
// again.
func (w *walker) vector(pos, elem, extra uint64, kind SpanKind) (n uint64, ok bool) {
	if !w.within(pos, 4) {
		return 0, false
	}
	n = w.u32(pos)
	if n > uint64(len(w.buf))/elem || !w.within(pos+4, n*elem+extra) {
		return 0, false
	}
	if w.once(pos<<2 | 2) {
		w.fn(pos, pos+4+n*elem+extra, kind, w.path)
	}
	return n, true
}
