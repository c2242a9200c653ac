package httprange

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"
	"sort"
	"strings"
)

// Range is Len bytes of the object at Off.
type Range struct {
	Off, Len int64
}

// maxRangesPerRequest bounds the Range header of one multi-range request.
const maxRangesPerRequest = 128

// extent is a prefetched range: bytes [off, off+len(data)).
type extent struct {
	off  int64
	data []byte
}

// Gaps between two ranges that Prefetch fetches as one, and the longest
// range it makes by merging.
const (
	// MultiRangeGap is about what a part of a multipart/byteranges answer
	// costs in headers: merging never costs more bytes than it saves.
	MultiRangeGap = 256
	// SingleRangeGap is for a server that answers one range per request
	// (Options.SingleRange): a signed request and its answer cost a round
	// trip and about a KiB of headers, and a store bills each, so ranges
	// up to a page apart (the padding after one engine before the next
	// engine's header) are fetched together.
	SingleRangeGap = 4 << 10
	// maxMerged bounds a range made by merging, so that one stays well
	// inside the prefetch budget.
	maxMerged = 256 << 10
)

// MultiRange reports whether Prefetch asks for scattered ranges in one
// request (multipart/byteranges), rather than a request for each range
// (Options.SingleRange): a caller that must read something of every one
// of many places may then save requests by asking for more bytes.
// A reader learns it too: after a server answered a multi-range request
// with one range or the whole object, it sends no more.
func (r *Reader) MultiRange() bool { return !r.opts.SingleRange && !r.noMulti.Load() }

// Prefetch fetches ranges so that later reads inside any one of them make
// no request. It suits many small scattered reads known in advance, such
// as the header of every engine of a program: where a read through the
// cache costs one request per range, Prefetch first merges ranges less
// than MultiRangeGap apart (SingleRangeGap with Options.SingleRange),
// then asks for up to 128 ranges in one multi-range request (answered as
// multipart/byteranges, as http.ServeContent does), and fetches what the
// answer lacks (a server without multi-range support sends one range or
// the whole object) with single range requests, PrefetchWidth at a time.
// With Options.SingleRange every range gets a single request at once.
//
// Ranges are clipped to the object; ranges already held are skipped. The
// prefetched bytes are kept up to the cache's size (CacheBlocks *
// BlockSize), oldest first out; ranges past that budget are not fetched.
// The version pin applies as for ReadAt. Errors are those of ReadAt.
func (r *Reader) Prefetch(ctx context.Context, ranges []Range) error {
	if r.closed.Load() {
		return &Error{Kind: KindCanceled, URL: r.redacted, Err: ErrClosed}
	}
	if r.whole != nil {
		return nil
	}
	ctx, stop := r.bind(ctx)
	defer stop()

	var todo []Range
	r.mu.Lock()
	for _, rg := range ranges {
		if rg.Off < 0 || rg.Len <= 0 || rg.Off >= r.size {
			continue
		}
		rg.Len = min(rg.Len, r.size-rg.Off)
		if !r.heldLocked(rg.Off, rg.Off+rg.Len) {
			todo = append(todo, rg)
		}
	}
	r.mu.Unlock()
	gap := int64(MultiRangeGap)
	if !r.MultiRange() {
		gap = SingleRangeGap
	}
	budget := int64(r.opts.CacheBlocks) * int64(r.opts.BlockSize)
	var want []Range
	for _, rg := range mergeRanges(todo, gap, maxMerged) {
		if rg.Len > budget {
			continue
		}
		budget -= rg.Len
		want = append(want, rg)
	}

	var missing []Range
	for batch := range slices.Chunk(want, maxRangesPerRequest) {
		if len(batch) == 1 || !r.MultiRange() {
			missing = append(missing, batch...)
			continue
		}
		got, err := r.multiRange(ctx, batch)
		if err != nil {
			return err
		}
		for i, rg := range batch {
			if got[i] == nil {
				missing = append(missing, rg)
			} else {
				r.putExtent(rg.Off, got[i])
			}
		}
	}
	// What is missing: a request for each, PrefetchWidth at a time.
	return parallel(ctx, len(missing), r.opts.PrefetchWidth, func(ctx context.Context, i int) error {
		buf := make([]byte, missing[i].Len)
		if err := r.fetch(ctx, buf, missing[i].Off); err != nil {
			return err
		}
		r.putExtent(missing[i].Off, buf)
		return nil
	})
}

// mergeRanges sorts ranges by offset and merges those that overlap or lie
// at most gap bytes apart, into ranges of at most limit bytes (a range
// longer than limit by itself is kept whole).
func mergeRanges(ranges []Range, gap, limit int64) []Range {
	rs := slices.Clone(ranges)
	slices.SortFunc(rs, func(a, b Range) int { return cmp.Compare(a.Off, b.Off) })
	var out []Range
	for _, rg := range rs {
		if n := len(out); n > 0 {
			last := &out[n-1]
			end := max(last.Off+last.Len, rg.Off+rg.Len)
			if rg.Off <= last.Off+last.Len+gap && end-last.Off <= max(limit, last.Len) {
				last.Len = end - last.Off
				continue
			}
		}
		out = append(out, rg)
	}
	return out
}

// heldLocked reports whether [off, end) is in the window, one extent or
// the cached blocks. r.mu is held.
func (r *Reader) heldLocked(off, end int64) bool {
	if r.win != nil && off >= r.winOff && end <= r.winOff+int64(len(r.win)) {
		return true
	}
	for _, e := range r.extents {
		if off >= e.off && end <= e.off+int64(len(e.data)) {
			return true
		}
	}
	bs := int64(r.opts.BlockSize)
	for b := off / bs; b <= (end-1)/bs; b++ {
		if _, ok := r.blocks[b]; !ok {
			return false
		}
	}
	return true
}

// putExtent keeps a prefetched range, dropping the oldest beyond the
// budget.
func (r *Reader) putExtent(off int64, data []byte) {
	budget := int64(r.opts.CacheBlocks) * int64(r.opts.BlockSize)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.extents = append(r.extents, extent{off, data})
	total := int64(0)
	for _, e := range r.extents {
		total += int64(len(e.data))
	}
	for total > budget && len(r.extents) > 0 {
		total -= int64(len(r.extents[0].data))
		r.extents = r.extents[1:]
	}
}

// multiRange asks for every range of batch in one request and returns
// the bytes of those the answer holds (nil for the others). Only a
// version change and errors no other request would escape (auth, not
// found, cancellation) are returned; an answer that cannot be used leaves
// its ranges to single requests.
func (r *Reader) multiRange(ctx context.Context, batch []Range) ([][]byte, error) {
	got := make([][]byte, len(batch))
	first, last := batch[0].Off, batch[len(batch)-1].Off+batch[len(batch)-1].Len
	span := last - first
	spec := make([]string, len(batch))
	for i, rg := range batch {
		spec[i] = fmt.Sprintf("%d-%d", rg.Off, rg.Off+rg.Len-1)
	}
	resp, err := r.do(ctx, first, span, "bytes="+strings.Join(spec, ","))
	if err != nil {
		if e, ok := errors.AsType[*Error](err); ok && (e.Kind == KindNetwork || e.Kind == KindRedirect) {
			return got, nil // single requests retry
		}
		return nil, err
	}
	defer resp.Body.Close()
	switch code := resp.StatusCode; {
	case code == http.StatusPartialContent:
	case code == http.StatusOK || code == http.StatusRequestedRangeNotSatisfiable:
		r.noMulti.Store(true) // the whole object, a refusal: single requests from now on
		return got, nil
	case code >= 500 || code == http.StatusTooManyRequests:
		return got, nil // a failure: single requests will tell
	default:
		return nil, r.statusError(resp, first, span)
	}
	if msg := r.versionChange(resp); msg != "" {
		return nil, r.respError(KindChanged, resp, first, span, "%s", msg)
	}
	if r.unvalidated(resp) != "" {
		return got, nil // single requests refuse it
	}
	// take stores a part as the range of batch it answers exactly, if any.
	take := func(cr string, part io.Reader) (bool, error) {
		lo, hi, total, ok := parseContentRange(cr)
		if !ok || lo < 0 {
			return false, nil
		}
		if total >= 0 && total != r.size {
			return false, r.respError(KindChanged, resp, first, span, "object is now %d bytes, was %d", total, r.size)
		}
		i := sort.Search(len(batch), func(i int) bool { return batch[i].Off >= lo })
		if i == len(batch) || batch[i].Off != lo || batch[i].Len != hi-lo+1 || got[i] != nil {
			return false, nil
		}
		data := make([]byte, batch[i].Len)
		var extra [1]byte
		if _, err := io.ReadFull(part, data); err != nil {
			return false, nil
		}
		if k, _ := io.ReadFull(part, extra[:]); k > 0 {
			return false, nil
		}
		got[i] = data
		return true, nil
	}
	mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/byteranges" || params["boundary"] == "" {
		// One range answered (the first, or several merged): a server
		// that answers one range per request.
		r.noMulti.Store(true)
		_, err := take(resp.Header.Get("Content-Range"), resp.Body)
		return got, err
	}
	mr := multipart.NewReader(resp.Body, params["boundary"])
	for range batch {
		part, err := mr.NextPart()
		if err != nil {
			break // io.EOF, or a broken body: single requests fetch the rest
		}
		ok, err := take(part.Header.Get("Content-Range"), part)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
	}
	if ctx.Err() != nil {
		return nil, r.ctxError(ctx, first, span)
	}
	return got, nil
}
