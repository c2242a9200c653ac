package inspect

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/pte"
)

// overlapCount windows of overlapElems float32s over one array make the
// overlapping inline buffers of the tests below.
const overlapCount, overlapElems = 2000, 1 << 18

// overlapOpener returns a function opening a program of overlapCount+1
// inline constant buffers whose last overlapCount are replaced, after
// opening, by window(k) (no writer makes overlapping vectors, so they are
// made in the model), and the array the windows may be cut from.
func overlapOpener(t *testing.T) (open func(window func(k int) []byte) *pte.File, big []byte) {
	t.Helper()
	progs := genPrograms(t)
	var bufs [][]float32
	for range overlapCount {
		bufs = append(bufs, ramp(4, nil))
	}
	a := withInlineConstants(t, progs["segment"], bufs...)
	big = make([]byte, 4*overlapElems+4*overlapCount)
	for i := range big {
		big[i] = byte(i * 7)
	}
	open = func(window func(k int) []byte) *pte.File {
		f, err := pte.NewFileWith(bytes.NewReader(a), int64(len(a)), &pte.OpenOptions{LazyPlans: true})
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		for k, b := range f.Program.ConstantBuffer[1:] {
			b.Storage = window(k)
		}
		return f
	}
	return open, big
}

// TestDiffOverlappingInlineBuffers is an attack on the fix for aliased
// inline buffers (TestDiffAliasedInlineBuffersOneComparison): a
// flatbuffer may point vectors at overlapping bytes that are not the same
// (a window of 1 MiB shifted by 4 bytes each time), which that fix does
// not see as shared. Two programs with 2,000 such windows took 4.5 s to
// plan the diff of only their first elements (every window is compared
// whole), more with whole tensors, growing with the square of the
// program's size. The diff now refuses such a program, naming the
// buffers, before comparing anything. Exact aliases are still compared
// once.
func TestDiffOverlappingInlineBuffers(t *testing.T) {
	const count, elems = overlapCount, overlapElems
	open, big := overlapOpener(t)
	same := func(int) []byte { return big[:4*elems] }
	shifted := func(k int) []byte { return big[4*k : 4*k+4*elems] }
	_, _, err := planConstants(open(same), open(shifted))
	oe, ok := errors.AsType[*OverlapError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, 1, oe.Side)
	assert.Contains(t, oe.First, "constant_buffer[")
	assert.Contains(t, err.Error(), "of B overlap")
	_, _, _, err = BuildDiffPair(open(shifted), open(same), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "of A overlap")
	_, tasks, err := planConstants(open(same), open(same))
	require.NoError(t, err, "exact aliases are the same bytes")
	assert.Empty(t, tasks)

	// Inline delegate payloads are hashed in the documents: the same
	// windows there, and one over a constant buffer.
	for name, edit := range map[string]func(p *pte.Program){
		"payloads": func(p *pte.Program) {
			for k := range count {
				p.BackendDelegateData = append(p.BackendDelegateData, &pte.BackendDelegateInlineData{Data: shifted(k)})
			}
		},
		"payload over a buffer": func(p *pte.Program) {
			p.BackendDelegateData = append(p.BackendDelegateData, &pte.BackendDelegateInlineData{Data: shifted(1)})
		},
	} {
		b := open(same)
		edit(b.Program)
		_, _, _, err := BuildDiffPair(open(same), b, nil)
		oe, ok := errors.AsType[*OverlapError](err)
		require.True(t, ok, "%s: %v", name, err)
		assert.Contains(t, oe.Second, "backend_delegate_data[", name)
	}
}

// TestHashOverlappingInlineBuffers: a document with Options.Hash of one
// program whose inline buffers overlap without being the same bytes is
// refused before any vector is hashed (2,000 shifted windows of 1 MiB
// would hash 2 GiB out of an 8 MiB file), and exact aliases still build.
func TestHashOverlappingInlineBuffers(t *testing.T) {
	const count, elems = overlapCount, overlapElems
	open, big := overlapOpener(t)
	shifted := func(k int) []byte { return big[4*k : 4*k+4*elems] }
	_, err := Build(open(shifted), &Options{Hash: true})
	oe, ok := errors.AsType[*OverlapError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, -1, oe.Side)
	assert.Contains(t, err.Error(), "hashing each")
	assert.NotContains(t, err.Error(), "diff")
	_, err = NewStream(open(shifted), &Options{Hash: true})
	require.ErrorAs(t, err, &oe)

	// Without hashing nothing is read twice: the same file builds.
	_, err = Build(open(shifted), nil)
	require.NoError(t, err)
	// Exact aliases are the same bytes, hashed once.
	doc, err := Build(open(func(int) []byte { return big[:4*elems] }), &Options{Hash: true})
	require.NoError(t, err)
	require.NotNil(t, doc)
}
