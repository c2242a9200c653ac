package pte

import (
	"cmp"
	"context"
	"slices"

	"github.com/ptekit/ptekit/httprange"
)

// Range is Len bytes of a program file at Off.
type Range struct {
	Off, Len int64
}

// prefetcher is a reader that can fetch scattered ranges ahead of the
// reads that need them in fewer round trips than one per read, as the
// *httprange.Reader of OpenURL does with multi-range requests.
type prefetcher interface {
	Prefetch(ctx context.Context, ranges []httprange.Range) error
}

// mergeGap is the largest gap between two ranges that Prefetch fetches as
// one: about what a part of a multipart/byteranges answer costs in
// headers, so merging never costs more bytes than it saves in parts.
const mergeGap = 256

// CanPrefetch reports whether Prefetch does anything for this file's
// reader (one over HTTP): callers need not work out ranges otherwise.
func (f *File) CanPrefetch() bool {
	_, ok := f.r.(prefetcher)
	return ok
}

// Prefetch tells the file's reader which ranges are about to be read. A
// reader over HTTP (OpenURL) fetches them together, up to 64 in one
// multi-range request, where reading them one by one costs a request
// each; ranges less than a few hundred bytes apart are merged first. Any
// other reader ignores the hint. Views that read something of every
// delegate payload (inspect) call it first. ctx bounds the fetch, as does
// the context the File was opened with; errors are the reader's, and a
// caller may ignore them, since the reads that follow fail the same way.
func (f *File) Prefetch(ctx context.Context, ranges []Range) error {
	p, ok := f.r.(prefetcher)
	if !ok || len(ranges) == 0 {
		return nil
	}
	rs := make([]httprange.Range, 0, len(ranges))
	for _, r := range ranges {
		if r.Off >= 0 && r.Len > 0 && r.Off < f.Size {
			rs = append(rs, httprange.Range{Off: r.Off, Len: min(r.Len, f.Size-r.Off)})
		}
	}
	slices.SortFunc(rs, func(a, b httprange.Range) int { return cmp.Compare(a.Off, b.Off) })
	merged := rs[:0]
	for _, r := range rs {
		if n := len(merged); n > 0 && r.Off <= merged[n-1].Off+merged[n-1].Len+mergeGap {
			last := &merged[n-1]
			last.Len = max(last.Len, r.Off+r.Len-last.Off)
			continue
		}
		merged = append(merged, r)
	}
	return p.Prefetch(ctx, merged)
}
