package check

import (
	"context"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/pte"
)

// Prefetch fetches ahead what the views read of every delegate payload:
// the first bytes of each (its magic), and of each TensorRT blob its
// header, last byte and metadata, in two rounds (the metadata's place is
// in the header). Over HTTP that is two multi-range requests for up to 64
// engines where reading them one by one costs three requests per engine;
// for a local file it does nothing. Program and the views (inspect.Build) call it; a caller
// with other views of every blob (a load plan) may call it first. Failures
// are left to the reads that follow.
func Prefetch(f *pte.File) {
	if f == nil || f.Program == nil || !f.CanPrefetch() {
		// A local file: the reads that follow cost no more one by one,
		// and reading headers here would only read them twice.
		return
	}
	type blob struct {
		pl   *pte.Payload
		size int64
	}
	var heads []pte.Range
	var blobs []blob
	for i := range f.Program.NumPlans() {
		for j, d := range f.Program.PlanDelegates(i) {
			if d == nil {
				continue
			}
			pl, err := f.DelegateData(i, j)
			if err != nil || pl.FileOffset < 0 || pl.Size() == 0 {
				continue // inline data is in memory already
			}
			size := pl.Size()
			heads = append(heads, pte.Range{Off: pl.FileOffset, Len: min(size, delegate.HeaderSize)})
			if delegate.IsTensorRT(d.ID) {
				heads = append(heads, pte.Range{Off: pl.FileOffset + size - 1, Len: 1})
				blobs = append(blobs, blob{pl, size})
			}
		}
	}
	ctx := context.Background()
	if len(heads) == 0 || f.Prefetch(ctx, heads) != nil {
		return
	}
	var mds []pte.Range
	hdr := make([]byte, delegate.HeaderSize)
	for _, b := range blobs {
		if b.size < delegate.HeaderSize {
			continue
		}
		if _, err := b.pl.ReadAt(hdr, 0); err != nil {
			return
		}
		h, _ := delegate.ParseHeader(hdr)
		off, n := int64(h.MetadataOffset), int64(h.MetadataSize)
		if n > 0 && n <= delegate.MaxMetadataSize && off+n <= b.size {
			mds = append(mds, pte.Range{Off: b.pl.FileOffset + off, Len: n})
		}
	}
	f.Prefetch(ctx, mds)
}
