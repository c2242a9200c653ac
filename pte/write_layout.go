package pte

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"
)

// CongruentMin is the smallest part of a payload that a page-congruent
// layout (WriteOptions.PageCongruent) places at its source offset modulo
// 4096. Below it the padding that placement costs (up to 4095 bytes) is
// not worth what a kernel copy saves.
const CongruentMin = 64 << 10

// WideCongruentMin is the smallest payload whose anchored part a
// page-congruent layout places at its source offset modulo WideCongruence
// rather than modulo 4096. The kernel copies (and Linux caches) a large
// file range much faster when source and destination agree on more than
// the page (docs/performance.md run 15); the padding it costs, under 64
// KiB, is under 3.2% of such a part.
const WideCongruentMin = 2 << 20

// WideCongruence is the modulus of a wide anchor (WideCongruentMin).
const WideCongruence = 64 << 10

// MinHeadRoom is the smallest head room File.SegmentAlignment and
// File.HeadRoom recognise, 1 KiB: less padding than that, beyond what the
// alignment leaves, reads as another writer's layout.
const MinHeadRoom = 1 << 10

// MaxHeadRoom is the largest WriteOptions.HeadRoom, 1 GiB: the size of
// the largest program region ptekit reads by default.
const MaxHeadRoom = 1 << 30

// maxInferredAlignment caps the alignment File.SegmentAlignment reports.
const maxInferredAlignment = 1 << 20

// anchor is the part of a payload whose offset modulo the page size a
// page-congruent layout keeps: the largest part of at least CongruentMin
// bytes that is a range of a file (see Composite), the parts the kernel
// can copy (WriteOptions.CongruentAnyReader adds any part not in memory).
// Payloads from memory keep ExecuTorch's layout.
type anchor struct {
	src uint64 // offset of the part in the reader it comes from
	at  uint64 // offset of the part in the payload
	n   uint64 // size of the payload (what File.SegmentAlignment sees)
	ok  bool
}

// modulus is what a's part keeps its source offset modulo.
func (a anchor) modulus() uint64 {
	if a.n >= WideCongruentMin {
		return WideCongruence
	}
	return shareAlign
}

// anchorOf returns the anchor of the first n bytes of src: a part read
// from a file, or with anyReader from any reader not in memory.
func anchorOf(src *io.SectionReader, n int64, anyReader bool) anchor {
	var a anchor
	var best, pos int64
	for _, p := range sourceParts(src, n) {
		ra, off, _ := p.Outer()
		_, _, file := fileSection(p)
		if (file || anyReader && !inMemory(ra)) && p.Size() >= CongruentMin && p.Size() > best {
			a, best = anchor{src: uint64(off), at: uint64(pos), n: uint64(n), ok: true}, p.Size()
		}
		pos += p.Size()
	}
	return a
}

// inMemory reports whether ra is a reader over memory.
func inMemory(ra io.ReaderAt) bool {
	switch ra.(type) {
	case *bytes.Reader, *strings.Reader:
		return true
	}
	return false
}

// segmentLayout is where the segments go, relative to the segment base.
type segmentLayout struct {
	offsets  []uint64
	dataSize uint64 // end of the last segment
	hasData  bool   // some segment holds a byte
	// congruent is set when an anchored segment fixed the base's offset
	// modulo mod to b0: mod is WideCongruence when an anchor is wide,
	// else the page size.
	congruent bool
	b0, mod   uint64
	headRoom  uint64 // WriteOptions.HeadRoom, added to the program size by base
}

// placeSegments lays out segments of the given sizes as ExecuTorch's
// serializer does: each at the end of the previous one rounded up to
// align, so a 0-byte segment shares the offset of the next one.
//
// With anchors (a page-congruent layout; align must divide the page size),
// an anchored segment goes instead at the first offset from there at which
// its anchor lands at its source offset modulo the page size, so that the
// kernel can copy (or share) those pages. The first anchored segment fixes
// the base's offset modulo the page size (b0, a multiple of align, so the
// base keeps its alignment) and moves by less than align; later ones move
// by less than a page, or a wide anchor's (WideCongruentMin) by less than
// WideCongruence, modulo which the base is then fixed. A segment that errs
// is reported by its position.
func placeSegments(sizes []uint64, anchors []anchor, align uint64) (*segmentLayout, int, error) {
	l := &segmentLayout{offsets: make([]uint64, len(sizes)), mod: shareAlign}
	if shareAlign%align != 0 {
		anchors = nil
	}
	for _, a := range anchors {
		if a.ok {
			l.mod = max(l.mod, a.modulus())
		}
	}
	var end uint64
	for k, size := range sizes {
		off := roundUp(end, align)
		if off < end || off > math.MaxInt64/4 {
			return nil, k, fmt.Errorf("segment offset %d overflows", off)
		}
		if k < len(anchors) && anchors[k].ok {
			a := anchors[k]
			// want is where the segment starts, modulo m, for its
			// anchor to keep its offset modulo m: base+off+at = src.
			m := a.modulus()
			want := (a.src%m + 2*m - a.at%m) % m
			if !l.congruent {
				r := (want + l.mod - off%l.mod) % l.mod
				l.b0, l.congruent = r-r%align, true
			}
			off += (want + 2*m - l.b0%m - off%m) % m
		}
		if off+size < off || off+size > math.MaxInt64/2 {
			return nil, k, fmt.Errorf("segment offset %d + size %d overflows", off, size)
		}
		l.offsets[k] = off
		end = off + size
		l.dataSize = end
		l.hasData = l.hasData || size > 0
	}
	return l, 0, nil
}

// base returns the segment base for a program region of programSize
// bytes (plus the head room): the size rounded up to align, or in a
// page-congruent layout the first offset from there that is b0 modulo the
// page size.
func (l *segmentLayout) base(programSize, align uint64) uint64 {
	programSize += l.headRoom // both far below 2^63
	if !l.congruent {
		return roundUp(programSize, align)
	}
	return programSize + (l.b0+l.mod-programSize%l.mod)%l.mod
}

// SegmentAlignment returns the segment alignment with which Write, with
// PageCongruent set and f's segments as payloads (SegmentReaders), lays
// them out at the offsets they have in f relative to the segment base, and
// puts the base where f has it for f's program size. Re-writing f with it
// keeps f's layout rules (and, when the head grows, keeps large segments
// at their offset modulo the page size).
//
// It prefers ExecuTorch's default, 128, when that reproduces f; otherwise
// it returns the largest alignment up to 1 MiB that does (any value, not
// only a power of two). It returns 128 and true for a file without segment
// data, and 128 and false when no alignment reproduces f (another writer's
// layout, gaps between segments, or a segment table that does not fit).
//
// A file written with head room (WriteOptions.HeadRoom) has its base
// further from the program than its alignment puts it. When no alignment
// reproduces f as it is and the padding before the base is at least
// MinHeadRoom, SegmentAlignment looks for one that reproduces f's segments
// and a base at f's (the program ending anywhere before it), and HeadRoom
// reports the room.
func (f *File) SegmentAlignment() (uint64, bool) {
	a, _, ok := f.segmentLayoutRules()
	return a, ok
}

// HeadRoom returns the head room with which f was written, as
// SegmentAlignment infers it: the bytes between the program region and the
// segment base when the alignment alone would put the base earlier, to be
// passed as WriteOptions.HeadRoom with that alignment to keep f's layout.
// It returns 0 for a file laid out without room, or whose layout no
// alignment reproduces.
func (f *File) HeadRoom() uint64 {
	_, room, _ := f.segmentLayoutRules() // 0 when not ok
	return room
}

// segmentLayoutRules returns the alignment and head room that reproduce
// f's layout (see SegmentAlignment).
func (f *File) segmentLayoutRules() (align, room uint64, ok bool) {
	h := f.Header
	if h == nil || h.SegmentBaseOffset == 0 || f.Program == nil {
		return DefaultSegmentAlignment, 0, true
	}
	if h.ProgramSize > h.SegmentBaseOffset {
		return DefaultSegmentAlignment, 0, false
	}
	a, ok := f.inferAlignment(h.ProgramSize)
	if ok && (shareAlign%a == 0 || a%shareAlign == 0) {
		return a, 0, true
	}
	// With room, any program size up to the base could have produced
	// it: take the base itself, which an alignment reproduces only where
	// it can put a base. This reading wins over an alignment that is
	// neither a divisor nor a multiple of the page size, which is what the
	// base of a one-segment file with room shows (its own value). Padding
	// under MinHeadRoom is not taken for room: a few bytes more than an
	// alignment leaves are another writer's.
	if h.SegmentBaseOffset-h.ProgramSize >= MinHeadRoom {
		if r, rok := f.inferAlignment(h.SegmentBaseOffset); rok {
			return r, h.SegmentBaseOffset - h.ProgramSize, true
		}
	}
	return a, 0, ok // inferAlignment's answer, DefaultSegmentAlignment when not ok
}

// inferAlignment is SegmentAlignment for a program region that ends at
// programSize (at most the segment base).
func (f *File) inferAlignment(programSize uint64) (uint64, bool) {
	h := f.Header
	segs := f.Program.Segments
	sizes := make([]uint64, len(segs))
	anchors := make([]anchor, len(segs))
	for i, s := range segs {
		if s == nil || s.Offset+s.Size < s.Offset || h.SegmentBaseOffset+s.Offset < s.Offset {
			return DefaultSegmentAlignment, false
		}
		sizes[i] = s.Size
		anchors[i] = anchor{src: h.SegmentBaseOffset + s.Offset, n: s.Size, ok: s.Size >= CongruentMin}
	}
	reproduces := func(a uint64) bool {
		if a == 0 {
			return false
		}
		l, _, err := placeSegments(sizes, anchors, a)
		if err != nil || l.base(programSize, a) != h.SegmentBaseOffset {
			return false
		}
		for i, s := range segs {
			if l.offsets[i] != s.Offset {
				return false
			}
		}
		return true
	}
	if reproduces(DefaultSegmentAlignment) {
		return DefaultSegmentAlignment, true
	}
	// An alignment that reproduces the rounding rule divides the base and
	// every offset it placed, and exceeds every gap the rounding left:
	// round_up(e, A) == o exactly when A | o and o-A < e <= o. So try the
	// largest divisor of their gcd above the largest gap (at most a million
	// steps, however large the gcd is).
	g, gap, end := h.SegmentBaseOffset, h.SegmentBaseOffset-programSize, uint64(0)
	for _, s := range segs {
		if s.Offset < end {
			return DefaultSegmentAlignment, false
		}
		g, gap, end = gcd(g, s.Offset), max(gap, s.Offset-end), s.Offset+s.Size
	}
	for a := min(g, maxInferredAlignment); a > gap; a-- {
		if g%a == 0 {
			if reproduces(a) {
				return a, true
			}
			break
		}
	}
	// A page-congruent layout moved its anchored segments and the base by
	// up to a page: its alignment divides the page size, the base and the
	// other offsets, and exceeds the gaps before the other segments.
	g, gap, end = gcd(shareAlign, h.SegmentBaseOffset), 0, 0
	for i, s := range segs {
		if !anchors[i].ok {
			g, gap = gcd(g, s.Offset), max(gap, s.Offset-end)
		}
		end = s.Offset + s.Size
	}
	for a := g; a > gap; a /= 2 { // g is a power of two
		if reproduces(a) {
			return a, true
		}
	}
	return DefaultSegmentAlignment, false
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
