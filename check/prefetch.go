package check

import (
	"context"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/pte"
)

// Prefetch fetches ahead what the views read of every delegate payload:
// the first bytes of each (its magic), and of each TensorRT blob its
// header, last byte and metadata. Program and the views (inspect.Build)
// call it; a caller with other views of every blob (a load plan) may call
// it first. Failures are left to the reads that follow. For a local file
// it does nothing: the reads that follow cost no more one by one.
//
// The metadata's place is in the header, so a blob takes two reads at
// least when each is exact. Over HTTP (pte.File.PrefetchMultiRange) the
// exact ranges go in two rounds, each one multi-range request for up to
// 128 blobs. An object store serves one range per request, so there each
// blob's header is read together with the metadata that follows it (the
// first blob's with room for a few KiB of metadata, the others' with
// room for what the largest seen so far needed, and a margin): one
// request per blob, merged with the previous blob's last byte when they
// are close, and a second only for a blob whose metadata is longer.
func Prefetch(f *pte.File) {
	if f == nil || f.Program == nil || !f.CanPrefetch() {
		// A local file: the reads that follow cost no more one by one,
		// and reading headers here would only read them twice.
		return
	}
	var heads []pte.Range
	var blobs []blobRange
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
			if delegate.IsTensorRT(d.ID) {
				heads = append(heads, pte.Range{Off: pl.FileOffset + size - 1, Len: 1})
				blobs = append(blobs, blobRange{pl, size})
			} else {
				heads = append(heads, pte.Range{Off: pl.FileOffset, Len: min(size, delegate.HeaderSize)})
			}
		}
	}
	ctx := context.Background()
	if !f.PrefetchMultiRange() && len(blobs) > 0 {
		// The first blob alone, to learn how long metadata runs here.
		span := int64(firstSpan)
		if f.Prefetch(ctx, []pte.Range{blobs[0].head(span)}) != nil {
			return
		}
		if md, ok := blobs[0].metadata(); ok {
			end := md.Off + md.Len
			span = min(max(end+end/8+spanMargin, delegate.HeaderSize), maxSpan)
		}
		for _, b := range blobs[1:] {
			heads = append(heads, b.head(span))
		}
	} else {
		for _, b := range blobs {
			heads = append(heads, b.head(delegate.HeaderSize))
		}
	}
	if len(heads) == 0 || f.Prefetch(ctx, heads) != nil {
		return
	}
	var mds []pte.Range
	for _, b := range blobs {
		if md, ok := b.metadata(); ok {
			md.Off += b.pl.FileOffset
			mds = append(mds, md)
		}
	}
	// Ranges already held (read with their header) cost nothing.
	f.Prefetch(ctx, mds)
}

// The lengths of a blob's first read from an object store.
const (
	// firstSpan is the first blob's: its header and metadata of up to a
	// few KiB (real metadata is a few hundred bytes).
	firstSpan = 4 << 10
	// spanMargin is added, with an eighth, to the first blob's header and
	// metadata for the others', whose tensor names and shapes differ.
	spanMargin = 64
	// maxSpan bounds the others' reads, whatever the first blob says.
	maxSpan = 16 << 10
)

// blobRange is a TensorRT blob's payload.
type blobRange struct {
	pl   *pte.Payload
	size int64
}

// head is the blob's first n bytes.
func (b blobRange) head(n int64) pte.Range {
	return pte.Range{Off: b.pl.FileOffset, Len: min(b.size, n)}
}

// metadata is the range of the blob's metadata, from its start, when its
// header (prefetched: no request) gives it a place inside the blob that
// ptekit reads.
func (b blobRange) metadata() (pte.Range, bool) {
	var hdr [delegate.HeaderSize]byte
	if b.size < delegate.HeaderSize {
		return pte.Range{}, false
	}
	if _, err := b.pl.ReadAt(hdr[:], 0); err != nil {
		return pte.Range{}, false
	}
	h, _ := delegate.ParseHeader(hdr[:])
	md := pte.Range{Off: int64(h.MetadataOffset), Len: int64(h.MetadataSize)}
	if md.Len <= 0 || md.Len > delegate.MaxMetadataSize || md.Off < delegate.HeaderSize || md.Off+md.Len > b.size {
		return pte.Range{}, false
	}
	return md, true
}
