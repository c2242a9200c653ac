package inspect

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/pte"
)

// TestOverlappingSegments is an attack on the refusal of overlapping
// inline vectors (TestHashOverlappingInlineBuffers): the segment table
// may point segments at overlapping bytes of the file too, and each
// segment's digest is taken as the pass reads the file, so 2,000 windows
// of 1 MiB shifted by 4 bytes over an 8 MiB constant segment made
// --json --hash, and the diff, hash 2 GiB (3 s; growing with the square
// of the program's size: 20,000 windows of 8 MiB, 160 GB). Such a
// program is now refused, naming two segments, before anything is
// hashed; a segment table naming the same bytes twice is hashed once and
// still builds, and the views that hash nothing read it as it is.
func TestOverlappingSegments(t *testing.T) {
	progs := genPrograms(t)
	a := withConstantSegment(t, progs["segment"], ramp(2<<20, nil))
	open := func(window func(k int, cs *pte.DataSegment) *pte.DataSegment) *pte.File {
		f, err := pte.NewFileWith(bytes.NewReader(a), int64(len(a)), &pte.OpenOptions{LazyPlans: true})
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		cs := f.Program.Segments[f.Program.ConstantSegment.SegmentIndex]
		require.Greater(t, cs.Size, uint64(1<<20+4*overlapCount))
		for k := range overlapCount {
			f.Program.Segments = append(f.Program.Segments, window(k, cs))
		}
		return f
	}
	shifted := func(k int, cs *pte.DataSegment) *pte.DataSegment {
		return &pte.DataSegment{Offset: cs.Offset + uint64(4*k), Size: 1 << 20}
	}
	same := func(_ int, cs *pte.DataSegment) *pte.DataSegment {
		return &pte.DataSegment{Offset: cs.Offset, Size: cs.Size}
	}

	_, err := Build(open(shifted), &Options{Hash: true})
	oe, ok := errors.AsType[*OverlapError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, -1, oe.Side)
	assert.Contains(t, oe.First, "segments[")
	assert.Contains(t, oe.Second, "segments[")
	_, _, _, err = BuildDiffPair(open(same), open(shifted), nil)
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, 1, oe.Side)
	assert.Contains(t, err.Error(), "of B overlap")

	// Without hashing nothing is read twice: the same file builds.
	_, err = Build(open(shifted), nil)
	require.NoError(t, err)
	// The same bytes named again are hashed once.
	_, err = Build(open(same), &Options{Hash: true})
	require.NoError(t, err)
	_, _, _, err = BuildDiffPair(open(same), open(same), nil)
	require.NoError(t, err)
}

// TestOverlappingConstantSegmentBuffers is an attack: the diff compares
// the constant-segment buffers of tensors paired by value index, each
// buffer running from its offset to the next one. A crafted offset table
// (0, 4, end, 8, end, ...) makes every other buffer run to the segment's
// end: 1,000 tensors over an 8 MiB segment took 41 s to diff with itself
// (8 GB compared), quadratic in the program's size, which neither the
// inline nor the segment refusal sees. Such a program is now refused
// (OverlapError naming two constant_segment.offsets), before comparing
// anything; a table whose offsets only repeat (empty buffers) still
// diffs.
func TestOverlappingConstantSegmentBuffers(t *testing.T) {
	const count, elems = 100, 1 << 18
	a := withConstantSegment(t, genPrograms(t)["segment"], ramp(elems, nil))
	open := func(offset func(k int, end uint64) []uint64) *pte.File {
		f, err := pte.NewFile(bytes.NewReader(a), int64(len(a)))
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		p := f.Program
		end := p.Segments[p.ConstantSegment.SegmentIndex].Size
		offs := []uint64{0}
		ep := p.Plan(0)
		for k := range count {
			offs = append(offs, offset(k, end)...)
			ep.Values = append(ep.Values, &pte.EValue{Val: &pte.Tensor{
				ScalarType: pte.ScalarTypeFLOAT, Sizes: []int32{int32(elems - k)}, DimOrder: []uint8{0}, DataBufferIdx: uint32(len(offs) - 2),
			}})
		}
		p.ConstantSegment.Offsets = offs
		return f
	}
	toEnd := func(k int, end uint64) []uint64 { return []uint64{uint64(4 * k), end} }
	repeated := func(k int, end uint64) []uint64 { return []uint64{uint64(4 * k), uint64(4 * k)} }

	_, _, _, err := BuildDiffPair(open(repeated), open(toEnd), nil)
	oe, ok := errors.AsType[*OverlapError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, 1, oe.Side)
	assert.Contains(t, oe.First, "constant_segment.offsets[")
	assert.Contains(t, oe.Second, "constant_segment.offsets[")
	_, err = SummarizeDiff(open(toEnd), open(repeated), nil)
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, 0, oe.Side)

	// The views that compare no constants read it as it is.
	_, err = Build(open(toEnd), &Options{Hash: true})
	require.NoError(t, err)
	_, _, _, err = BuildDiffPair(open(repeated), open(repeated), nil)
	require.NoError(t, err)
}
