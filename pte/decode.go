package pte

import (
	"encoding/binary"
	"iter"
	"sync"

	"github.com/ptekit/ptekit/internal/fbverify"
)

// codec_generated.go is made by TestGeneratedCodecIsCurrent from
// schema/program.fbs and the model types (pte/codec_gen_test.go).
//
//go:generate go test -run ^TestGeneratedCodecIsCurrent$ . -update

// This file and the decoders of codec_generated.go (decode<Table>,
// generated from the schema and the model) decode a flatbuffer region that
// verifyProgramBuffer accepted into the Program model. They rely on the
// verifier for every bounds check: never call them on unverified bytes.
//
// Byte vectors (Buffer.Storage, BackendDelegateInlineData.Data,
// CompileSpec.Value) alias the region buffer read by NewFile; their capacity
// is clipped to their length so that appending copies. Treat them as
// read-only.

// fbTab is a verified table: its position and its vtable.
type fbTab struct {
	b      []byte
	pos    uint32
	vt     uint32
	vtSize uint32
}

func fbTabAt(b []byte, pos uint32) fbTab {
	vt := uint32(int64(pos) - int64(int32(binary.LittleEndian.Uint32(b[pos:]))))
	return fbTab{b: b, pos: pos, vt: vt, vtSize: uint32(binary.LittleEndian.Uint16(b[vt:]))}
}

// field returns the absolute position of the field in slot, 0 when absent.
func (t fbTab) field(slot int) uint32 {
	vo := uint32(4 + 2*slot)
	if vo+2 > t.vtSize {
		return 0
	}
	fo := uint32(binary.LittleEndian.Uint16(t.b[t.vt+vo:]))
	if fo == 0 {
		return 0
	}
	return t.pos + fo
}

func (t fbTab) u8(slot int) uint8 {
	if o := t.field(slot); o != 0 {
		return t.b[o]
	}
	return 0
}

// ref follows the offset field in slot.
func (t fbTab) ref(slot int) (uint32, bool) {
	o := t.field(slot)
	if o == 0 {
		return 0, false
	}
	return o + binary.LittleEndian.Uint32(t.b[o:]), true
}

func (t fbTab) sub(slot int) (fbTab, bool) {
	p, ok := t.ref(slot)
	if !ok {
		return fbTab{}, false
	}
	return fbTabAt(t.b, p), true
}

// vec returns the position of the first element and the element count.
func (t fbTab) vec(slot int) (start, n uint32, ok bool) {
	p, ok := t.ref(slot)
	if !ok {
		return 0, 0, false
	}
	return p + 4, binary.LittleEndian.Uint32(t.b[p:]), true
}

// tableAt returns table i of the vector of tables in slot, without
// reading the others; false when the vector is absent or i is out of range.
func (t fbTab) tableAt(slot, i int) (fbTab, bool) {
	ts, ok := t.tables(slot)
	if !ok || i < 0 || i >= ts.n {
		return fbTab{}, false
	}
	return ts.at(i), true
}

// tables returns the vector of tables in slot; false when absent. It
// reads the elements as they are asked for, sparing a slice of them.
func (t fbTab) tables(slot int) (fbTabs, bool) {
	start, n, ok := t.vec(slot)
	if !ok {
		return fbTabs{}, false
	}
	return fbTabs{b: t.b, start: start, n: int(n)}, true
}

// fbTabs is a vector of tables: n of them, their offsets from start on.
type fbTabs struct {
	b     []byte
	start uint32
	n     int
}

// at returns table i, which must be in range.
func (v fbTabs) at(i int) fbTab {
	e := v.start + 4*uint32(i)
	return fbTabAt(v.b, e+binary.LittleEndian.Uint32(v.b[e:]))
}

// all yields the vector's tables with their indices.
func (v fbTabs) all() iter.Seq2[int, fbTab] {
	return func(yield func(int, fbTab) bool) {
		for i := range v.n {
			if !yield(i, v.at(i)) {
				return
			}
		}
	}
}

func (t fbTab) bytes(slot int) []byte {
	start, n, ok := t.vec(slot)
	if !ok {
		return nil
	}
	return t.b[start : start+n : start+n]
}

// fbDecoder decodes a verified region and remembers where each decoded
// table (and each byte vector payload) starts, so that findings and payloads
// can name absolute file offsets.
type fbDecoder struct {
	pos    map[any]uint32     // table position by model pointer
	vec    map[any]uint32     // byte-vector element start by owning model pointer
	v      *fbverify.Verifier // the verifier that accepted the region
	shared *sharedStrings     // decoded shared strings, for every decoder of the region
	// lazyPlans leaves Program's execution plans undecoded (decodeProgramWith)
	lazyPlans bool
}

// posOf returns the file offset of the table x was decoded from, or -1
// when d did not decode it (or records no positions).
func (d *fbDecoder) posOf(x any) int64 {
	if d == nil || x == nil {
		return -1
	}
	if p, ok := d.pos[x]; ok {
		return int64(p)
	}
	return -1
}

func (d *fbDecoder) at(x any, t fbTab) {
	if d.pos != nil {
		d.pos[x] = t.pos
	}
}

// str returns the string in slot. When the field is absent it returns ""
// and appends the field's schema name to *absent. A string that several
// fields share is copied out of the region once (Go strings are immutable),
// which keeps decoding allocation proportional to the region size.
func (d *fbDecoder) str(t fbTab, slot int, name string, absent *[]string) string {
	p, ok := t.ref(slot)
	if !ok {
		*absent = append(*absent, name)
		return ""
	}
	n := binary.LittleEndian.Uint32(t.b[p:])
	if d.v == nil || !d.v.SharedString(p) {
		return string(t.b[p+4 : p+4+n])
	}
	return d.shared.get(p, t.b[p+4:p+4+n])
}

// sharedStrings holds the shared strings of a region decoded so far, by
// position. One File's decoders share it (the plans of a File opened with
// OpenOptions.LazyPlans are decoded on demand, maybe concurrently), so
// that a string many plans share is copied once for the File, not once per
// plan decoded.
type sharedStrings struct {
	mu sync.Mutex
	m  map[uint32]string
}

// get returns the string at position p, whose bytes are b, copying it the
// first time.
func (c *sharedStrings) get(p uint32, b []byte) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[p]
	if !ok {
		s = string(b)
		c.m[p] = s
	}
	return s
}

// decodeProgramWith decodes a region that v verified. Without positions,
// table positions are not recorded (posOf says -1), which spares a
// map entry per table when only a verdict is wanted (Write's read-back
// check). With lazyPlans the execution plans are left undecoded, for the
// File to decode one at a time (File.planAt).
func decodeProgramWith(b []byte, v *fbverify.Verifier, positions, lazyPlans bool) (*Program, *fbDecoder) {
	d := newDecoder(v, nil, positions)
	d.vec = map[any]uint32{}
	d.lazyPlans = lazyPlans
	return d.decodeProgram(rootTab(b)), d
}

// newDecoder returns a decoder for a region v verified, recording table
// positions when asked; shared is the region's shared strings (nil: new).
func newDecoder(v *fbverify.Verifier, shared *sharedStrings, positions bool) *fbDecoder {
	if shared == nil {
		shared = &sharedStrings{m: map[uint32]string{}}
	}
	d := &fbDecoder{v: v, shared: shared}
	if positions {
		d.pos = map[any]uint32{}
	}
	return d
}

// rootTab returns the root Program table of a verified region.
func rootTab(b []byte) fbTab {
	return fbTabAt(b, binary.LittleEndian.Uint32(b))
}
