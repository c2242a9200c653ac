package inspect

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"slices"

	"github.com/ptekit/ptekit/pte"
)

// constComparer compares the constant data of tensors of two programs.
type constComparer struct {
	f [2]*pte.File
	// same says both constant segments hold the same bytes at the same
	// place (their digests and ranges agree): equal ranges then need no
	// reading.
	same bool
	// done remembers comparisons already made: a buffer shared by several
	// tensors is read once.
	done map[dataKey]*dataResult
	bufs [2][]byte
}

// constSource is the bytes of one constant buffer: a range of r.
type constSource struct {
	r      io.ReaderAt
	off, n int64
	// inline says r is the inline buffer's storage, mem, not the file.
	inline bool
	mem    []byte
}

// dataKey is a comparison: both buffer indices, how to decode them (A's
// type) and how many elements are compared; tensors of other shapes with
// the same element count share it (the samples' indices are unravelled
// per tensor).
type dataKey struct {
	a, b uint32
	st   pte.ScalarType
	n    int64
}

// pairKey is a pair of buffers compared as one type: one reading of them
// gives the comparison of every element count (dataKey) asked for.
// Buffers are the same when their bytes are (bytesOf).
type pairKey struct {
	a, b bytesID
	st   pte.ScalarType
}

// bytesID is where a constant buffer's bytes are: a range of the file, or
// the address and length of an inline buffer's storage (which aliases the
// program region: a flatbuffer may point many buffers at one vector).
type bytesID struct {
	inline bool
	at, n  int64
}

// bytesOf returns where s's bytes are.
func bytesOf(s constSource) bytesID {
	if s.inline {
		return bytesID{inline: true, at: int64(reflect.ValueOf(s.mem).Pointer()), n: s.n}
	}
	return bytesID{at: s.off, n: s.n}
}

// tensorComparison returns the constant buffers of tensor ta of a and
// tensor tb of b, and the comparison of them the summary makes: A's type,
// and as many elements as the tensor has and both buffers hold (none for a
// type upstream does not decode or an unknown count).
func tensorComparison(a, b *pte.File, ta, tb *pte.Tensor) (sa, sb constSource, key dataKey, err error) {
	if sa, err = constantSource(a, ta.DataBufferIdx); err != nil {
		return sa, sb, key, err
	}
	if sb, err = constantSource(b, tb.DataBufferIdx); err != nil {
		return sa, sb, key, err
	}
	key = dataKey{a: ta.DataBufferIdx, b: tb.DataBufferIdx, st: ta.ScalarType}
	numel, hasNum := numElements(ta.Sizes)
	if dec, es, _ := elementDecoder(ta.ScalarType); dec != nil && hasNum {
		key.n = min(numel, sa.n/es, sb.n/es)
	}
	return sa, sb, key, nil
}

type dataResult struct {
	differ bool
	data   *DataDiff
}

func newConstComparer(a, b *pte.File, da, db *Document, pre *ConstantComparison) *constComparer {
	c := &constComparer{f: [2]*pte.File{a, b}, done: map[dataKey]*dataResult{}}
	if pre != nil {
		maps.Copy(c.done, pre.results)
	}
	sa, oka := constSegment(a, da)
	sb, okb := constSegment(b, db)
	c.same = oka && okb && sa.FileOffset == sb.FileOffset && sa.Size == sb.Size && sa.SHA256.Hex != "" && sa.SHA256 == sb.SHA256
	return c
}

// constSegment returns the document's segment that holds f's constant
// segment.
func constSegment(f *pte.File, d *Document) (*Segment, bool) {
	if cs := f.Program.ConstantSegment; cs != nil {
		s := at(d.Segments, int(cs.SegmentIndex))
		return s, s != nil
	}
	return nil, false
}

// constantSource returns where constant buffer idx of f is, as upstream
// measures it: in the constant segment, from offsets[idx] to
// offsets[idx+1] or the segment's end; else the inline buffer's storage.
// A buffer that does not exist (index out of range, range outside the
// segment) is empty, as upstream finds no bytes for it.
func constantSource(f *pte.File, idx uint32) (constSource, error) {
	p := f.Program
	if cs := p.ConstantSegment; cs != nil && len(cs.Offsets) > 0 {
		if uint64(idx) >= uint64(len(cs.Offsets)) {
			return constSource{}, nil
		}
		seg, err := f.Segment(int(cs.SegmentIndex))
		if err != nil {
			if _, ok := errors.AsType[*pte.FormatError](err); ok {
				return constSource{}, nil // no constant segment: no bytes
			}
			return constSource{}, err
		}
		size := uint64(seg.Size())
		start, end := cs.Offsets[idx], size
		if int(idx)+1 < len(cs.Offsets) {
			end = cs.Offsets[idx+1]
		}
		if start > size || end > size || end < start {
			return constSource{}, nil
		}
		return constSource{r: f.ReaderAt(), off: seg.FileOffset + int64(start), n: int64(end - start)}, nil
	}
	if uint64(idx) >= uint64(len(p.ConstantBuffer)) || p.ConstantBuffer[idx] == nil {
		return constSource{}, nil
	}
	s := p.ConstantBuffer[idx].Storage
	return constSource{r: bytes.NewReader(s), n: int64(len(s)), inline: true, mem: s}, nil
}

// tensor compares two tensors at value index k; nil when they agree.
func (c *constComparer) tensor(k int, ta, tb *pte.Tensor, ua, ub map[int32][]Usage) (*TensorDiff, error) {
	d := &TensorDiff{A: tensorRef(k, ta, ua), B: tensorRef(k, tb, ub), Fields: fieldDiffs(reflect.ValueOf(ta).Elem(), reflect.ValueOf(tb).Elem())}
	sa, sb, key, err := tensorComparison(c.f[0], c.f[1], ta, tb)
	if err != nil {
		return nil, err
	}
	d.ByteSizeA, d.ByteSizeB = sa.n, sb.n
	res, ok := c.done[key]
	if !ok {
		res, err = c.compare(sa, sb, ta.ScalarType, key.n)
		if err != nil {
			return nil, fmt.Errorf("inspect: diff summary: constant data of value %d: %w", k, err)
		}
		c.done[key] = res
	}
	d.BytesDiffer = res.differ
	if res.differ {
		data := *res.data
		data.Samples = slices.Clone(data.Samples)
		for i := range data.Samples {
			data.Samples[i].Index = unravel(data.Samples[i].Flat, ta.Sizes)
		}
		d.Data = &data
	}
	if len(d.Fields) == 0 && !d.BytesDiffer {
		return nil, nil
	}
	return d, nil
}

// fieldDiffs lists the members of two model tables of one type that
// differ, in schema order, each side in the member's JSON form; an absent
// list equals an empty one, and shows as one.
func fieldDiffs(a, b reflect.Value) []FieldDiff {
	out := []FieldDiff{}
	w := &modelWriter{}
	shown := func(v reflect.Value, numbers bool) modelJSON {
		if v.Kind() == reflect.Slice && v.IsNil() {
			v = reflect.MakeSlice(v.Type(), 0, 0)
		}
		return modelJSON{v: v.Interface(), numbers: numbers}
	}
	for _, f := range tableFields(a.Type()).list {
		x, y := a.Field(f.index), b.Field(f.index)
		if x.Kind() == reflect.Slice && x.Len() == 0 && y.Len() == 0 || sameValue(x, y, f.numbers, w, w) {
			continue
		}
		out = append(out, FieldDiff{Field: f.name, A: shown(x, f.numbers), B: shown(y, f.numbers)})
	}
	return out
}

// numElements is the product of sizes; ok is false when a size is
// negative or the product overflows.
func numElements(sizes []int32) (int64, bool) {
	n := int64(1)
	for _, s := range sizes {
		if s < 0 || (s > 0 && n > math.MaxInt64/int64(s)) {
			return 0, false
		}
		n *= int64(s)
	}
	return n, true
}

// compareChunk is how many bytes of each side compare reads at a time.
const compareChunk = 1 << 16

// compare reads two constant buffers side by side and compares their bytes
// and, when they differ, their first elements as type st. The diff pass
// (BuildDiffPair) compares file ranges as it reads them instead; this
// reads them, for a summary of documents built without it.
func (c *constComparer) compare(a, b constSource, st pte.ScalarType, n int64) (*dataResult, error) {
	d := newDataCmp(a.n, b.n, st)
	d.want(n)
	if !d.res.differ && (a.n == 0 || (c.same && !a.inline && !b.inline && a.off == b.off)) {
		return d.res, nil
	}
	for i := range c.bufs {
		if c.bufs[i] == nil {
			c.bufs[i] = make([]byte, compareChunk)
		}
	}
	for pos := int64(0); pos < d.limit; pos += compareChunk {
		m := min(int64(compareChunk), d.limit-pos)
		for i, s := range [2]constSource{a, b} {
			if _, err := io.ReadFull(io.NewSectionReader(s.r, s.off+pos, m), c.bufs[i][:m]); err != nil {
				return nil, fmt.Errorf("reading %s's bytes %d..%d: %w", "AB"[i:i+1], s.off+pos, s.off+pos+m, err)
			}
		}
		d.feed(c.bufs[0][:m], c.bufs[1][:m])
	}
	return d.result(n), nil
}

// dataCmp compares two constant buffers fed to it in pieces of equal
// length, side by side from their first bytes: their bytes and, when they
// differ, their first elements, which may straddle pieces. One reading
// gives the comparison of each count of first elements asked for (want):
// a count's statistics are those of the elements before it, noted (cuts)
// as the elements go by.
type dataCmp struct {
	dec     func([]byte) float64
	es      int64
	isFloat bool
	na, nb  int64
	// n is the number of elements compared, the most asked for; limit
	// the bytes compared (past the compared elements bytes only matter
	// to bytes_differ, and only when the lengths agree).
	n, limit int64
	// cuts are the counts asked for, and snaps the statistics before
	// each of them, taken as the elements go by. cuts is sorted and
	// without repeats once sorted is set (sortCuts, before the first
	// byte is fed).
	cuts   []int64
	sorted bool
	snaps  []dataSnap
	// pos counts the bytes fed; carry holds each side's bytes of an
	// element cut by the end of a piece.
	pos   int64
	carry [2][]byte
	sum   float64
	res   *dataResult
	data  *DataDiff
}

// dataSnap is the statistics of a comparison before one of its cuts.
type dataSnap struct {
	differing, samples int64
	sum                float64
	maxAbs             Float
}

// newDataCmp returns the comparison of two buffers of na and nb bytes as
// type st, of no element until want asks for some.
func newDataCmp(na, nb int64, st pte.ScalarType) *dataCmp {
	dec, es, isFloat := elementDecoder(st)
	d := &dataCmp{dec: dec, es: es, isFloat: isFloat, na: na, nb: nb,
		res:  &dataResult{differ: na != nb},
		data: &DataDiff{Decoded: dec != nil, Samples: []ElementDiff{}}}
	d.want(0)
	return d
}

// want asks for the comparison of the first n elements (tensorComparison),
// before any byte is fed.
func (d *dataCmp) want(n int64) {
	d.cuts, d.sorted = append(d.cuts, n), false
	d.n = max(d.n, n)
	d.limit = min(d.na, d.nb)
	if d.na != d.nb {
		d.limit = d.n * d.es
	}
}

// feed compares the next bytes of both buffers (ba and bb of the same
// length); bytes past limit are ignored.
func (d *dataCmp) feed(ba, bb []byte) {
	d.sortCuts()
	take := min(int64(len(ba)), d.limit-d.pos)
	if take <= 0 {
		return
	}
	ba, bb = ba[:take], bb[:take]
	start := d.pos
	d.pos += take
	if len(d.carry[0]) == 0 && bytes.Equal(ba, bb) {
		// Keep the start of an element the piece cuts (the same bytes
		// on both sides) for the next piece.
		tail := ba[take-d.pos%d.es:]
		d.carry[0] = append(d.carry[0], tail...)
		d.carry[1] = append(d.carry[1], tail...)
		return
	}
	if !bytes.Equal(ba, bb) {
		d.res.differ = true
	}
	if d.dec == nil {
		return
	}
	// Complete an element the last piece cut.
	if k := int64(len(d.carry[0])); k > 0 {
		need := min(d.es-k, take)
		d.carry[0] = append(d.carry[0], ba[:need]...)
		d.carry[1] = append(d.carry[1], bb[:need]...)
		ba, bb, start = ba[need:], bb[need:], start+need
		if int64(len(d.carry[0])) < d.es {
			return
		}
		d.element((start-d.es)/d.es, d.carry[0], d.carry[1])
		d.carry[0], d.carry[1] = d.carry[0][:0], d.carry[1][:0]
	}
	whole := int64(len(ba)) / d.es * d.es
	if !bytes.Equal(ba[:whole], bb[:whole]) {
		first := start / d.es
		for o := int64(0); o < whole; o += d.es {
			d.element(first+o/d.es, ba[o:o+d.es], bb[o:o+d.es])
		}
	}
	d.carry[0] = append(d.carry[0], ba[whole:]...)
	d.carry[1] = append(d.carry[1], bb[whole:]...)
}

// element compares element e, ea in A and eb in B.
func (d *dataCmp) element(e int64, ea, eb []byte) {
	if e >= d.n || bytes.Equal(ea, eb) {
		return
	}
	d.snapTo(e)
	x, y := d.dec(ea), d.dec(eb)
	if d.isFloat && x == y {
		return // -0 and +0
	}
	diff := math.Abs(x - y)
	data := d.data
	data.Differing++
	d.sum += diff
	if diff > float64(data.MaxAbs) || math.IsNaN(diff) && !math.IsNaN(float64(data.MaxAbs)) {
		data.MaxAbs = Float(diff)
	}
	if len(data.Samples) < MaxDiffSamples {
		data.Samples = append(data.Samples, ElementDiff{Flat: e, A: Float(x), B: Float(y)})
	}
}

// sortCuts sorts the counts asked for, once they all are.
func (d *dataCmp) sortCuts() {
	if !d.sorted {
		slices.Sort(d.cuts)
		d.cuts, d.sorted = slices.Compact(d.cuts), true
	}
}

// snapTo notes the statistics before each cut not past element e.
func (d *dataCmp) snapTo(e int64) {
	d.sortCuts()
	for len(d.snaps) < len(d.cuts) && d.cuts[len(d.snaps)] <= e {
		d.snaps = append(d.snaps, dataSnap{differing: d.data.Differing, samples: int64(len(d.data.Samples)), sum: d.sum, maxAbs: d.data.MaxAbs})
	}
}

// result returns the comparison of the first n elements (a count asked
// for) of the bytes fed; the samples' indices are left to the tensor
// (unravel).
func (d *dataCmp) result(n int64) *dataResult {
	if !d.res.differ {
		return d.res
	}
	d.snapTo(math.MaxInt64)
	i, _ := slices.BinarySearch(d.cuts, n)
	s := d.snaps[min(i, len(d.snaps)-1)]
	data := &DataDiff{Decoded: d.data.Decoded, Elements: n, Differing: s.differing, MaxAbs: s.maxAbs,
		Samples: slices.Clone(d.data.Samples[:s.samples])}
	if n > 0 {
		data.NotCompared = d.data.NotCompared
	}
	if s.differing > 0 {
		data.MeanAbs = Float(s.sum / float64(s.differing))
	}
	return &dataResult{differ: true, data: data}
}

// unravel returns the index in shape sizes of flat element e (row-major,
// as upstream's numpy.unravel_index).
func unravel(e int64, sizes []int32) []int64 {
	out := make([]int64, len(sizes))
	for i := len(sizes) - 1; i >= 0; i-- {
		if s := int64(sizes[i]); s > 0 {
			out[i] = e % s
			e /= s
		}
	}
	return out
}

// elementDecoder returns how to read one little-endian element of type st
// as float64, its size, and whether it is a floating-point type (whose
// elements compare by value: -0 equals +0, NaN equals nothing); nil for a
// type upstream does not decode.
func elementDecoder(st pte.ScalarType) (dec func([]byte) float64, size int64, isFloat bool) {
	if d, ok := decoders[st]; ok {
		return d.dec, d.size, d.isFloat
	}
	return nil, 1, false
}

var le = binary.LittleEndian

// decoders are the element types upstream decodes (elementDecoder).
var decoders = map[pte.ScalarType]struct {
	dec     func([]byte) float64
	size    int64
	isFloat bool
}{
	pte.ScalarTypeBYTE:     {func(b []byte) float64 { return float64(b[0]) }, 1, false},
	pte.ScalarTypeCHAR:     {func(b []byte) float64 { return float64(int8(b[0])) }, 1, false},
	pte.ScalarTypeBOOL:     {func(b []byte) float64 { return float64(min(b[0], 1)) }, 1, false},
	pte.ScalarTypeSHORT:    {func(b []byte) float64 { return float64(int16(le.Uint16(b))) }, 2, false},
	pte.ScalarTypeUINT16:   {func(b []byte) float64 { return float64(le.Uint16(b)) }, 2, false},
	pte.ScalarTypeINT:      {func(b []byte) float64 { return float64(int32(le.Uint32(b))) }, 4, false},
	pte.ScalarTypeUINT32:   {func(b []byte) float64 { return float64(le.Uint32(b)) }, 4, false},
	pte.ScalarTypeLONG:     {func(b []byte) float64 { return float64(int64(le.Uint64(b))) }, 8, false},
	pte.ScalarTypeUINT64:   {func(b []byte) float64 { return float64(le.Uint64(b)) }, 8, false},
	pte.ScalarTypeHALF:     {func(b []byte) float64 { return halfToFloat(le.Uint16(b)) }, 2, true},
	pte.ScalarTypeBFLOAT16: {func(b []byte) float64 { return float64(math.Float32frombits(uint32(le.Uint16(b)) << 16)) }, 2, true},
	pte.ScalarTypeFLOAT:    {func(b []byte) float64 { return float64(math.Float32frombits(le.Uint32(b))) }, 4, true},
	pte.ScalarTypeDOUBLE:   {func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) }, 8, true},
}

// halfToFloat converts an IEEE 754 binary16 value to float64.
func halfToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * math.Ldexp(1024+frac, exp-25)
}
