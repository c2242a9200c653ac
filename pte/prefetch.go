package pte

import (
	"context"

	"github.com/ptekit/ptekit/httprange"
)

// Range is Len bytes of a program file at Off.
type Range struct {
	Off, Len int64
}

// prefetcher is a reader that can fetch scattered ranges ahead of the
// reads that need them in fewer round trips than one per read, as the
// *httprange.Reader of OpenURL does with multi-range requests (or with
// concurrent single ones for an object store).
type prefetcher interface {
	Prefetch(ctx context.Context, ranges []httprange.Range) error
	MultiRange() bool
}

// CanPrefetch reports whether Prefetch does anything for this file's
// reader (one over HTTP): callers need not work out ranges otherwise.
func (f *File) CanPrefetch() bool {
	_, ok := f.r.(prefetcher)
	return ok
}

// PrefetchMultiRange reports whether Prefetch asks for scattered ranges
// in one request (an HTTP server's multi-range answers) rather than a
// request for each (an object store, which serves one range per
// request, or a local file, where Prefetch does nothing). A caller that
// reads something of every engine may then ask for more bytes at once to
// save a second round of requests (check.Prefetch does).
func (f *File) PrefetchMultiRange() bool {
	p, ok := f.r.(prefetcher)
	return ok && p.MultiRange()
}

// Prefetch tells the file's reader which ranges are about to be read. A
// reader over HTTP (OpenURL) fetches them together, up to 128 in one
// multi-range request, where reading them one by one costs a request
// each; from an object store, which serves one range per request, it
// fetches them with concurrent requests. Close ranges are merged first
// (httprange.Reader.Prefetch). Any other reader ignores the hint. Views
// that read something of every delegate payload (inspect) call it first.
// ctx bounds the fetch, as does the context the File was opened with;
// errors are the reader's, and a caller may ignore them, since the reads
// that follow fail the same way.
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
	return p.Prefetch(ctx, rs)
}
