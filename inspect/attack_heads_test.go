package inspect

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/pte"
)

// overlappingHeads returns the program "segment" with one more segment,
// blob, of count TensorRT headers (32 bytes each) followed by metaSize+count
// bytes, and, once opened, count segments more starting at each header and
// running to the blob's end, each named by one more TensorRT delegate of
// method 0. Header i claims metaSize bytes of metadata starting i bytes
// into the common region: every metadata range is distinct but they
// overlap, so the file is about metaSize bytes while the metadata the
// delegates claim is count times that. Segments may overlap: upstream's
// loader does not forbid it.
func overlappingHeads(t testing.TB, count int, metaSize int64) *pte.File {
	t.Helper()
	base := genPrograms(t)["segment"]
	f, err := pte.NewFile(bytes.NewReader(base), int64(len(base)))
	require.NoError(t, err)
	segs, err := f.SegmentReaders()
	require.NoError(t, err)
	m0 := int64(count) * delegate.HeaderSize
	total := m0 + metaSize + int64(count)
	blob := make([]byte, total)
	for i := range int64(count) {
		h := blob[i*delegate.HeaderSize:]
		copy(h, delegate.MagicTR01[:])
		binary.LittleEndian.PutUint32(h[4:], uint32(m0-i*delegate.HeaderSize+i))
		binary.LittleEndian.PutUint32(h[8:], uint32(metaSize))
	}
	p := f.Program
	segs = append(segs, io.NewSectionReader(bytes.NewReader(blob), 0, total))
	p.Segments = append(p.Segments, &pte.DataSegment{Size: uint64(total)})
	var out bytes.Buffer
	_, err = pte.Write(&out, p, segs, nil)
	require.NoError(t, err)
	f.Close()
	data := out.Bytes()
	f, err = pte.NewFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	p = f.Program
	blobSeg := p.Segments[len(p.Segments)-1]
	ep := p.Plan(0)
	proto := ep.Delegates[0]
	for i := range int64(count) {
		p.Segments = append(p.Segments, &pte.DataSegment{Offset: blobSeg.Offset + uint64(i*delegate.HeaderSize), Size: uint64(total - i*delegate.HeaderSize)})
		d := *proto
		d.Processed = &pte.BackendDelegateDataReference{Location: pte.DataLocationSEGMENT, Index: uint32(len(p.Segments) - 1)}
		ep.Delegates = append(ep.Delegates, &d)
	}
	require.Len(t, p.PlanDelegates(0), count+1)
	return f
}

// heldBytes is the bytes a keeper holds.
func heldBytes(k *keeper) (n int64) {
	for _, x := range k.done {
		n += int64(cap(x.data))
	}
	return n
}

// TestDiffHeadsBounded is an attack: the diff's pass keeps the heads of
// delegate payloads (each TensorRT blob's header and metadata) for the
// documents, and held every metadata range a header claims, each its own
// copy. Metadata may be 64 MiB and segments may overlap, so a file of
// 64 MiB with 1,000 headers naming overlapping metadata made the diff
// hold 64 GiB. The heads held are now bounded (headBudget), those beyond
// read from the file when the document needs them. Hashing each of the
// overlapping segments cost as much again in time (64 GiB of SHA-256):
// BuildDiffPair, and Build with Options.Hash, now refuse such a program
// (OverlapError, TestOverlappingSegments) before the pass.
func TestDiffHeadsBounded(t *testing.T) {
	const count, meta = 64, 256 << 10
	defer func(b int64) { headBudget = b }(headBudget)
	headBudget = 1 << 20
	a, b := overlappingHeads(t, count, meta), overlappingHeads(t, count, meta)
	ps, err := passPair(a, b, &Options{Hash: true}, nil)
	require.NoError(t, err)
	for i, p := range ps {
		assert.LessOrEqual(t, heldBytes(p.keep), headBudget+int64(count+2)*(delegate.HeaderSize+1), "bytes held of %s", "AB"[i:i+1])
	}
	_, _, _, err = BuildDiffPair(a, b, nil)
	var oe *OverlapError
	require.ErrorAs(t, err, &oe)
	for _, f := range []*pte.File{a, b} {
		_, err := Build(f, &Options{Hash: true})
		require.ErrorAs(t, err, &oe)
	}
}
