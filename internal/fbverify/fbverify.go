// Package fbverify is ptekit's FlatBuffers verifier. The Go flatbuffers
// runtime has none, so packages pte and ptd run this over every flatbuffer
// region before a decoder or a generated accessor reads it; afterwards every
// offset, vector and string those follow is known to lie inside the buffer.
//
// A schema is described by Table values, field by vtable slot. The rules are
// those of the C++ flatbuffers::Verifier that ExecuTorch uses (see RULES
// below, and docs/verifier-rules.md), plus resource limits that bound what a
// hostile buffer can make a decoder do. Where ptekit checks something the C++
// verifier does not (for example the alignment of 8-byte vector elements),
// the result is a Warning, not an error: a verifier stricter than the runtime
// it models would refuse files that ExecuTorch loads.
package fbverify

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
)

// Limits of the C++ verifier's defaults, and of FlatBuffers itself.
const (
	// MaxDepth is the deepest table nesting accepted (Verifier max_depth).
	MaxDepth = 64
	// MaxTables is the most table visits accepted (Verifier max_tables).
	MaxTables = 1000000
	// MaxBufferSize is FLATBUFFERS_MAX_BUFFER_SIZE (2 GiB - 1).
	MaxBufferSize = 1<<31 - 1
)

// Kind says how a field is stored.
type Kind uint8

// Field kinds.
const (
	KindScalar    Kind = iota // inline scalar of Field.Size bytes
	KindString                // offset to a string
	KindTable                 // offset to a table
	KindVector                // offset to a vector of Field.Size-byte scalars
	KindTableVec              // offset to a vector of offsets to tables
	KindUnionType             // u8 union tag; the next slot holds the value
	KindUnion                 // offset to a union member table
)

// Field describes one vtable slot of a table.
type Field struct {
	Name  string
	Kind  Kind
	Size  uint32   // KindScalar/KindVector: (element) size in bytes
	Alias bool     // KindVector: the decoder aliases the bytes instead of copying them
	Table *Table   // KindTable, KindTableVec
	Union []*Table // KindUnion: member table per tag; nil = NONE or unknown
}

// width is the bytes the field takes in its table: a scalar's size, or a
// 4-byte offset.
func (f *Field) width() uint64 {
	if f.Kind == KindScalar || f.Kind == KindUnionType {
		return uint64(f.Size)
	}
	return 4
}

// Table describes a table: its fields indexed by vtable slot.
type Table struct {
	Name   string
	Fields []Field
}

// Scalar is an inline scalar field of size bytes.
func Scalar(name string, size uint32) Field { return Field{Name: name, Kind: KindScalar, Size: size} }

// String is a string field.
func String(name string) Field { return Field{Name: name, Kind: KindString} }

// Sub is a field holding a table of type t.
func Sub(name string, t *Table) Field { return Field{Name: name, Kind: KindTable, Table: t} }

// Vector is a vector of scalars of size bytes each, copied when decoded.
func Vector(name string, size uint32) Field { return Field{Name: name, Kind: KindVector, Size: size} }

// Bytes is a byte vector that decoding aliases rather than copies.
func Bytes(name string) Field { return Field{Name: name, Kind: KindVector, Size: 1, Alias: true} }

// TableVector is a vector of tables of type t.
func TableVector(name string, t *Table) Field { return Field{Name: name, Kind: KindTableVec, Table: t} }

// UnionType is the u8 tag slot of a union.
func UnionType(name string) Field { return Field{Name: name, Kind: KindUnionType, Size: 1} }

// Union is the value slot of a union; members[tag] is the table of that tag.
func Union(name string, members ...*Table) Field {
	return Field{Name: name, Kind: KindUnion, Union: members}
}

// Error is a verification failure: where and what. Callers wrap it in their
// own error type with the error class their loader reports.
type Error struct {
	// Off is the byte offset in the buffer.
	Off int64
	// Path names the field, e.g. "named_data[1].tensor_layout.sizes".
	Path string
	// Msg says what is wrong.
	Msg string
}

// Error formats the error with its path, when it has one.
func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s (at byte %d)", e.Msg, e.Off)
	}
	return fmt.Sprintf("%s: %s (at byte %d)", e.Path, e.Msg, e.Off)
}

// path is a lazily formatted field path such as
// "execution_plan[2].delegates[0].processed.index".
type path struct {
	parent *path
	name   string
	index  int // -1: no index
	level  int // nodes above it
}

// child returns the path of a field (index -1) or element (name "") of p.
// The node is the Verifier's slot for its level: the nodes of one level
// are used one after another (siblings are verified in turn), and an
// error or warning formats its path at once, so verifying a buffer
// allocates no path nodes.
func (v *Verifier) child(p *path, name string, index int) *path {
	level := 0
	if p != nil {
		level = p.level + 1
	}
	var n *path
	if level < len(v.paths) {
		n = &v.paths[level]
	} else {
		n = new(path) // deeper than a verified buffer gets: kept for safety
	}
	*n = path{parent: p, name: name, index: index, level: level}
	return n
}

// String formats p, "" for no path (nil).
func (p *path) String() string {
	if p == nil {
		return ""
	}
	s := p.parent.String()
	if p.name != "" && s != "" {
		s += "."
	}
	s += p.name
	if p.index >= 0 {
		s += "[" + strconv.Itoa(p.index) + "]"
	}
	return s
}

// Verifier is the result of a successful Verify: the warnings it found and
// what a decoder needs to know about shared strings.
//
// Besides the C++ limits it bounds the work and memory a hostile buffer can
// cause by pointing many offsets at one table or vector (FlatBuffers offsets
// form a DAG, and writers legitimately share strings, as
// FlatBufferBuilder.CreateSharedString does):
//   - table visits are limited to one per 4 bytes of buffer, because decoding
//     expands a shared table once per reference;
//   - each distinct vector or string (by position and element size) is
//     verified once and its bytes counted once; their total may not exceed
//     twice the buffer size (only overlapping vectors get there);
//   - vectors that decoding copies (Vector, not Bytes) are also counted once
//     per reference, and that total may not exceed twice the buffer size
//     either. Strings are not: a decoder copies a shared string once (see
//     SharedString).
//
// Decoding a verified buffer therefore allocates O(len(buf)) bytes. These
// limits have no upstream counterpart; no real writer comes near them.
type Verifier struct {
	// Warnings lists what ExecuTorch accepts but ptekit finds suspect, in
	// the order met.
	Warnings []Error

	buf       []byte
	depth     int
	tables    int
	vecBytes  uint64  // bytes of distinct vectors and strings
	copyBytes uint64  // bytes of copied vectors, once per reference
	seen      []uint8 // seen* bits by position/4 of a vector's length prefix
	// shared lists the positions of shared strings, as they are found,
	// then ascending once verification is done (seen is dropped then).
	shared []uint32
	// paths holds the path nodes (see child): a table level adds at most
	// a field and an element.
	paths [2*MaxDepth + 4]path
}

// Bits of Verifier.seen. Vector and string positions are 4-aligned, so one
// byte per 4 bytes of buffer records every kind of use of a position.
const (
	seenString uint8 = 1 << iota // verified as a string
	seenShared                   // referenced as a string more than once
	seenVec1                     // verified as a vector of 1-byte elements
	seenVec4                     // ... of 4-byte elements
	seenVec8                     // ... of 8-byte elements
)

// Verify checks buf as a flatbuffer whose root table has type root. buf
// starts at the root offset (the identifier, if any, is the caller's to
// check). A returned error is an *Error.
func Verify(buf []byte, root *Table) (*Verifier, error) {
	v := &Verifier{buf: buf}
	if len(buf) > MaxBufferSize {
		return nil, v.fail(0, nil, "flatbuffer of %d bytes exceeds the FlatBuffers limit of %d", len(buf), MaxBufferSize)
	}
	if !v.within(0, 8) {
		return nil, v.fail(0, nil, "flatbuffer of %d bytes is shorter than the 8-byte prefix", len(buf))
	}
	v.seen = make([]uint8, len(buf)/4+1)
	r, err := v.offset(0, nil, "root table offset")
	if err != nil {
		return nil, err
	}
	if err := v.table(r, root, nil); err != nil {
		return nil, err
	}
	// A decoder needs only the shared strings, listed as they were found
	// (not by a pass over the bits): let the per-position bits (a quarter
	// of the buffer's size) go.
	slices.Sort(v.shared)
	v.seen = nil
	return v, nil
}

// SharedString reports whether the string at pos was referenced more than
// once; decoders copy those once.
func (v *Verifier) SharedString(pos uint32) bool {
	_, found := slices.BinarySearch(v.shared, pos)
	return found
}

func (v *Verifier) fail(off uint64, p *path, format string, args ...any) error {
	return &Error{Off: int64(off), Path: p.String(), Msg: fmt.Sprintf(format, args...)}
}

func (v *Verifier) warn(off uint64, p *path, format string, args ...any) {
	v.Warnings = append(v.Warnings, Error{Off: int64(off), Path: p.String(), Msg: fmt.Sprintf(format, args...)})
}

func (v *Verifier) within(off, n uint64) bool { return within(v.buf, off, n) }

// within reports whether [off, off+n) lies inside buf.
func within(buf []byte, off, n uint64) bool {
	size := uint64(len(buf))
	return off <= size && n <= size-off
}

func (v *Verifier) u16(off uint64) uint16 { return binary.LittleEndian.Uint16(v.buf[off:]) }
func (v *Verifier) u32(off uint64) uint32 { return binary.LittleEndian.Uint32(v.buf[off:]) }

// offset reads the uoffset at off and returns its target.
// RULES (C++ Verifier::VerifyOffset): the offset is 4-aligned and inside the
// buffer, non-zero, not negative as a signed 32-bit value, and its target
// is inside the buffer.
func (v *Verifier) offset(off uint64, p *path, what string) (uint64, error) {
	if off%4 != 0 {
		return 0, v.fail(off, p, "%s at byte %d is not 4-byte aligned", what, off)
	}
	if !v.within(off, 4) {
		return 0, v.fail(off, p, "%s is outside the %d-byte flatbuffer", what, len(v.buf))
	}
	u := uint64(v.u32(off))
	if u == 0 {
		return 0, v.fail(off, p, "%s is zero", what)
	}
	if u > MaxBufferSize {
		return 0, v.fail(off, p, "%s %d is negative as a signed offset", what, u)
	}
	if !v.within(off+u, 1) {
		return 0, v.fail(off, p, "%s %d points to byte %d, past the %d-byte flatbuffer", what, u, off+u, len(v.buf))
	}
	return off + u, nil
}

// table verifies the table at pos against its description.
// RULES (C++ VerifyTableStart, VerifyField, VerifyOffset): depth and table
// count limits; the table is 4-aligned and inside the buffer; its vtable is
// 2-aligned, inside the buffer, of even size; each present field lies inside
// the buffer, aligned to its own size (scalars) or to 4 (offsets).
func (v *Verifier) table(pos uint64, t *Table, p *path) error {
	if err := v.enterTable(pos, t, p); err != nil {
		return err
	}
	vt, vtSize, err := v.vtable(pos, t, p)
	if err != nil {
		return err
	}
	// The table size stored in the vtable is not checked against field
	// positions: the Python flatbuffers builder that writes current .pte
	// files stores sizes that exclude the last field (the C++ verifier does
	// not look at it either). Every field is checked against the buffer.
	var unionTag byte
	for slot := range t.Fields {
		vo := uint64(4 + 2*slot)
		if vo+2 > vtSize {
			break
		}
		fo := uint64(v.u16(vt + vo))
		f := &t.Fields[slot]
		if fo == 0 {
			if f.Kind == KindUnionType {
				unionTag = 0
			}
			continue
		}
		abs := pos + fo
		if err := v.fieldPlace(abs, vt+vo, fo, f, t, p); err != nil {
			return err
		}
		switch f.Kind {
		case KindScalar:
			continue
		case KindUnionType:
			unionTag = v.buf[abs]
			continue
		}
		if err := v.fieldValue(abs, f, unionTag, v.child(p, f.Name, -1)); err != nil {
			return err
		}
	}
	v.depth--
	return nil
}

// enterTable counts a table visit against the nesting, table count and
// visit limits and checks that the table's own offset is in the buffer.
func (v *Verifier) enterTable(pos uint64, t *Table, p *path) error {
	v.depth++
	v.tables++
	if v.depth > MaxDepth {
		return v.fail(pos, p, "tables nested deeper than %d", MaxDepth)
	}
	if v.tables > MaxTables {
		return v.fail(pos, p, "more than %d tables", MaxTables)
	}
	if v.tables > len(v.buf)/4+1 { // the most visits an unshared buffer needs
		return v.fail(pos, p, "more table visits (%d) than a %d-byte flatbuffer can hold without sharing tables", v.tables, len(v.buf))
	}
	if pos%4 != 0 {
		return v.fail(pos, p, "%s table at byte %d is not 4-byte aligned", t.Name, pos)
	}
	if !v.within(pos, 4) {
		return v.fail(pos, p, "%s table is outside the %d-byte flatbuffer", t.Name, len(v.buf))
	}
	return nil
}

// vtable returns the position and size of the vtable of the table at pos,
// both checked to lie within the buffer.
func (v *Verifier) vtable(pos uint64, t *Table, p *path) (vt, size uint64, err error) {
	soff := int64(int32(v.u32(pos)))
	at := int64(pos) - soff
	if at < 0 || at%2 != 0 || !v.within(uint64(at), 2) {
		return 0, 0, v.fail(pos, p, "%s table's vtable offset %d points to byte %d, outside the flatbuffer or misaligned", t.Name, soff, at)
	}
	vt = uint64(at)
	size = uint64(v.u16(vt))
	if size%2 != 0 || !v.within(vt, size) {
		return 0, 0, v.fail(vt, p, "%s vtable size %d is odd or runs past the flatbuffer", t.Name, size)
	}
	if size < 4 {
		// The C++ verifier accepts it (every field then reads as absent); no
		// FlatBuffers builder writes one.
		v.warn(vt, p, "%s vtable size %d is shorter than its 4-byte header: every field reads as absent", t.Name, size)
	}
	return vt, size, nil
}

// fieldPlace checks that a present field f of table t (at path p), at abs
// (its vtable entry at entry, holding offset fo), lies within the buffer
// and is aligned. The field's path is made only for a finding: most
// fields are scalars, which need no path to be verified.
func (v *Verifier) fieldPlace(abs, entry, fo uint64, f *Field, t *Table, p *path) error {
	width := f.width()
	if !v.within(abs, width) {
		return v.fail(entry, v.child(p, f.Name, -1), "field offset %d puts the field outside the flatbuffer", fo)
	}
	if fo < 4 {
		// The C++ verifier only bounds fields by the buffer.
		v.warn(entry, v.child(p, f.Name, -1), "field offset %d overlaps the %s table's own vtable offset", fo, t.Name)
	}
	if abs%width != 0 {
		return v.fail(abs, v.child(p, f.Name, -1), "field at byte %d is not %d-byte aligned", abs, width)
	}
	return nil
}

// offsetNames names the offset a field of each reference kind holds.
var offsetNames = [...]string{KindString: "string offset", KindTable: "table offset", KindVector: "vector offset",
	KindTableVec: "vector offset", KindUnion: "union value offset"}

// fieldValue verifies what the field at abs refers to: a string, table,
// vector or union value (scalars hold nothing further). unionTag is the
// type of the table's union, read from its preceding _type field.
func (v *Verifier) fieldValue(abs uint64, f *Field, unionTag byte, fp *path) error {
	target, err := v.offset(abs, fp, offsetNames[f.Kind])
	if err != nil {
		return err
	}
	switch f.Kind {
	case KindString:
		return v.string(target, fp)
	case KindTable:
		return v.table(target, f.Table, fp)
	case KindVector:
		_, err = v.vector(target, uint64(f.Size), !f.Alias, fp)
		return err
	case KindTableVec:
		return v.tableVector(target, f.Table, fp)
	case KindUnion:
		// Unknown tags are accepted, as the C++ verifier does; callers'
		// validators report them.
		if int(unionTag) < len(f.Union) && f.Union[unionTag] != nil {
			return v.table(target, f.Union[unionTag], fp)
		}
	}
	return nil
}

// vector verifies the vector whose length prefix is at pos and returns its
// element count. copied says that decoding copies the elements for every
// reference (see Verifier).
// RULES (C++ VerifyVectorOrString): the length prefix is 4-aligned and
// inside the buffer, and the elements fit in the buffer. The C++ verifier
// checks only the prefix's alignment, so 8-byte elements that are not
// 8-aligned (as an empty IntList written at a 4-aligned offset has) are a
// warning here.
func (v *Verifier) vector(pos, elem uint64, copied bool, p *path) (uint64, error) {
	if pos%4 != 0 {
		return 0, v.fail(pos, p, "vector at byte %d is not 4-byte aligned", pos)
	}
	if !v.within(pos, 4) {
		return 0, v.fail(pos, p, "vector length is outside the %d-byte flatbuffer", len(v.buf))
	}
	n := uint64(v.u32(pos))
	bit := seenVec1
	switch elem {
	case 4:
		bit = seenVec4
	case 8:
		bit = seenVec8
	}
	if v.seen[pos/4]&bit == 0 {
		if n >= MaxBufferSize/elem {
			return 0, v.fail(pos, p, "vector length %d is too large", n)
		}
		if !v.within(pos+4, n*elem) {
			return 0, v.fail(pos, p, "vector of %d %d-byte elements runs past the %d-byte flatbuffer", n, elem, len(v.buf))
		}
		if elem == 8 && (pos+4)%8 != 0 {
			if n == 0 {
				v.warn(pos+4, p, "empty vector of 8-byte values starts at byte %d, not 8-byte aligned (ExecuTorch accepts it)", pos+4)
			} else {
				v.warn(pos+4, p, "elements of a vector of %d 8-byte values at byte %d are not 8-byte aligned: ExecuTorch reads them unaligned, which faults on strict-alignment targets", n, pos+4)
			}
		}
		v.vecBytes += n * elem
		if v.vecBytes > 2*uint64(len(v.buf)) {
			return 0, v.fail(pos, p, "distinct vectors and strings hold %d bytes in total, more than twice the %d-byte flatbuffer: they overlap", v.vecBytes, len(v.buf))
		}
		v.seen[pos/4] |= bit
	}
	if copied {
		v.copyBytes += n * elem
		if v.copyBytes > 2*uint64(len(v.buf)) {
			return 0, v.fail(pos, p, "vectors referenced %d bytes in total, more than twice the %d-byte flatbuffer: one vector is shared by too many tables", v.copyBytes, len(v.buf))
		}
	}
	return n, nil
}

// string verifies the string at pos: length, bytes and NUL terminator. A
// string verified before is only marked shared.
// RULES (C++ VerifyString): a byte vector followed by a NUL inside the buffer.
func (v *Verifier) string(pos uint64, p *path) error {
	if pos%4 == 0 && v.within(pos, 4) && v.seen[pos/4]&seenString != 0 {
		if v.seen[pos/4]&seenShared == 0 {
			v.seen[pos/4] |= seenShared
			v.shared = append(v.shared, uint32(pos))
		}
		return nil
	}
	n, err := v.vector(pos, 1, false, p)
	if err != nil {
		return err
	}
	end := pos + 4 + n
	if !v.within(end, 1) {
		return v.fail(pos, p, "string of %d bytes has no room for its NUL terminator", n)
	}
	if v.buf[end] != 0 {
		return v.fail(end, p, "string of %d bytes is not NUL-terminated", n)
	}
	v.seen[pos/4] |= seenString
	return nil
}

// tableVector verifies a vector of tables. Its element tables are visited
// (and counted) for every reference, as decoding expands them.
// RULES (C++ VerifyVectorOfTables).
func (v *Verifier) tableVector(pos uint64, t *Table, p *path) error {
	n, err := v.vector(pos, 4, false, p)
	if err != nil {
		return err
	}
	for i := uint64(0); i < n; i++ {
		ep := v.child(p, "", int(i))
		target, err := v.offset(pos+4+4*i, ep, "element offset")
		if err != nil {
			return err
		}
		if err := v.table(target, t, ep); err != nil {
			return err
		}
	}
	return nil
}
