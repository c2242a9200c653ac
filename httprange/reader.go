package httprange

import (
	"cmp"
	"container/list"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Reader is an io.ReaderAt over one HTTP(S) object, read with range
// requests. It is safe for concurrent use. The version of the object seen
// by the first request is pinned: every later response must be of that
// version, or the read fails with KindChanged.
type Reader struct {
	opts     Options
	client   *http.Client
	own      *http.Transport // the transport Open made, whose connections Close closes; nil with a caller's
	target   *url.URL        // where range requests go: the URL after the first request's redirects
	origHost string          // host of the URL given to Open; Options.Header goes only there
	header   http.Header     // headers for target; nil when it is on another host
	redacted string
	size     int64
	etag     string // strong ETag pinned by the first response, or ""
	lastMod  string // strong Last-Modified pinned when there is no strong ETag, or ""
	seenTag  string // the first response's ETag, weak or strong, or ""
	seenMod  string // the first response's Last-Modified, or ""
	whole    []byte // the whole object, when the server ignored Range and it was small

	ctx    context.Context // canceled by Close
	cancel context.CancelFunc
	closed atomic.Bool

	mu      sync.Mutex
	blocks  map[int64]*list.Element // block index -> element of lru holding a *block
	lru     list.List               // most recently used first
	extents []extent                // ranges fetched by Prefetch, oldest first
	win     []byte                  // read-ahead window
	winOff  int64
	lastEnd int64 // end of the previous read: a read starting there is sequential

	requests, bodyBytes, retries atomic.Int64
	noMulti                      atomic.Bool // the server answered a multi-range request with one range or the whole object
}

// block is one cached block: bytes [idx*BlockSize, idx*BlockSize+len(data)).
type block struct {
	idx  int64
	data []byte
}

// Stats counts what a Reader did, for tests and benchmarks.
type Stats struct {
	// Requests is the number of HTTP round trips, including redirects and
	// retries.
	Requests int64
	// Bytes is the number of response body bytes received.
	Bytes int64
	// Retries is the number of requests repeated after a failure.
	Retries int64
}

const (
	// directBlocks: a missing run of this many blocks or more is read
	// straight into the caller's buffer instead of through the cache.
	directBlocks = 4
	// minChunk and maxChunk bound the pieces a large read is split into
	// for parallel requests.
	minChunk = 256 << 10
	maxChunk = 16 << 20
)

// Open makes the first request for rawURL, an http or https URL, reading
// its first Options.BlockSize bytes; it learns the object's size from the
// response and pins its version (strong ETag, else Last-Modified). nil
// opts means the defaults.
//
// ctx governs the Reader's whole life, Open and every later ReadAt:
// canceling it, or its deadline passing, fails every read in progress and
// to come. Use ReadAtContext for a per-read context. Close the Reader to
// release it.
func Open(ctx context.Context, rawURL string, opts *Options) (*Reader, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The parse error is not wrapped: it quotes the whole URL.
		return nil, fmt.Errorf("httprange: %s is not an http or https URL", Redact(rawURL))
	}
	o := opts.withDefaults()
	r := &Reader{
		opts:     o,
		target:   u,
		origHost: u.Host,
		header:   o.Header.Clone(),
		redacted: cmp.Or(o.Name, redactURL(u)),
		blocks:   map[int64]*list.Element{},
	}
	c := http.Client{}
	if o.Client != nil {
		c = *o.Client
	}
	base := c.Transport
	if base == nil {
		// http.DefaultTransport with the connect and TLS handshake limits.
		r.own = http.DefaultTransport.(*http.Transport).Clone()
		r.own.DialContext = (&net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext
		r.own.TLSHandshakeTimeout = o.TLSHandshakeTimeout
		base = r.own
	}
	c.Transport = countingTransport{base, &r.requests}
	c.CheckRedirect = r.checkRedirect
	r.client = &c
	r.ctx, r.cancel = context.WithCancel(ctx)
	n := int64(o.BlockSize)
	if err := r.withRetries(r.ctx, func() error { return r.openOnce(r.ctx, n) }); err != nil {
		r.cancel()
		r.closeConns()
		return nil, err
	}
	return r, nil
}

// Pinned reports whether the object's version is pinned, so that a change
// on the server fails a read instead of mixing versions: the first
// response gave a strong ETag, or a Last-Modified at least one second
// before its Date (RFC 9110 section 8.8.2.2: a later change then has
// another date), or the object is held whole in memory from one response.
// An unpinned Reader still fails with KindChanged when a response's size,
// weak ETag or Last-Modified differs from the first one's, but a change
// that none of them shows goes unseen.
func (r *Reader) Pinned() bool {
	return r.etag != "" || r.lastMod != "" || r.whole != nil || r.size == 0
}

// ETag returns the strong ETag the Reader's reads are pinned to, or ""
// when the first response gave none (see Pinned). A caller that has the
// store copy the object (S3's x-amz-copy-source-if-match) pins that copy
// to the same version with it.
func (r *Reader) ETag() string { return r.etag }

// Size returns the object's size in bytes.
func (r *Reader) Size() int64 { return r.size }

// String returns the object's URL, redacted (see Redact).
func (r *Reader) String() string { return r.redacted }

// Stats returns the counts so far.
func (r *Reader) Stats() Stats {
	return Stats{Requests: r.requests.Load(), Bytes: r.bodyBytes.Load(), Retries: r.retries.Load()}
}

// Close cancels the reads in progress, drops the cache, closes the
// connections of the transport Open made (not those of a caller's
// Options.Client.Transport) and makes later reads fail with ErrClosed. It
// always returns nil.
func (r *Reader) Close() error {
	r.closed.Store(true)
	r.cancel()
	r.closeConns()
	r.mu.Lock()
	r.blocks, r.win, r.extents = map[int64]*list.Element{}, nil, nil
	r.lru.Init()
	r.mu.Unlock()
	return nil
}

// closeConns closes the kept-alive connections of the transport Open
// made, which nothing else uses: left in its pool, each would hold a file
// descriptor (and one on the server) for the pool's idle timeout after
// the Reader is gone. A request still finishing closes its connection
// instead of pooling it, since the transport pools nothing once told to
// close its idle connections.
func (r *Reader) closeConns() {
	if r.own != nil {
		r.own.CloseIdleConnections()
	}
}

// ReadAt reads len(p) bytes at off, as io.ReaderAt says, under the context
// given to Open. On error the contents of p are undefined and n is 0 (or,
// at the end of the object, the bytes before it with io.EOF).
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	return r.readAt(r.ctx, p, off)
}

// ReadAtContext is ReadAt under ctx as well as the context given to Open.
func (r *Reader) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	ctx, stop := r.bind(ctx)
	defer stop()
	return r.readAt(ctx, p, off)
}

// bind returns ctx also cancelled when the Reader's own context is, with
// that context's cause (an interrupt, a deadline), so that errors say why.
func (r *Reader) bind(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(r.ctx, func() { cancel(context.Cause(r.ctx)) })
	return ctx, func() { stop(); cancel(nil) }
}

func (r *Reader) readAt(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("httprange: %s: ReadAt at negative offset %d", r.redacted, off)
	}
	if r.closed.Load() {
		return 0, &Error{Kind: KindCanceled, URL: r.redacted, Err: ErrClosed}
	}
	if off >= r.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), r.size-off))
	if r.whole != nil {
		copy(p, r.whole[off:off+int64(n)])
	} else if n > 0 {
		if err := r.fill(ctx, p[:n], off); err != nil {
			return 0, err
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// fill reads dst, which lies inside the object, at off: from the read-ahead
// window, the cached blocks and range requests for the rest.
func (r *Reader) fill(ctx context.Context, dst []byte, off int64) error {
	end := off + int64(len(dst))
	bs := int64(r.opts.BlockSize)
	type run struct{ first, last int64 }
	var runs []run

	r.mu.Lock()
	sequential := off == r.lastEnd && off != 0
	r.lastEnd = end
	// A prefix of the read may be in the read-ahead window.
	grow := 0 // the next window's length when the stream runs past this one
	if wEnd := r.winOff + int64(len(r.win)); r.win != nil && off >= r.winOff && off <= wEnd {
		copy(dst, r.win[off-r.winOff:])
		if end <= wEnd {
			r.mu.Unlock()
			return nil
		}
		dst, off, grow = dst[wEnd-off:], wEnd, 2*len(r.win)
	}
	for _, e := range r.extents {
		if off >= e.off && end <= e.off+int64(len(e.data)) {
			copy(dst, e.data[off-e.off:])
			r.mu.Unlock()
			return nil
		}
	}
	for b := off / bs; b <= (end-1)/bs; b++ {
		if el, ok := r.blocks[b]; ok {
			r.lru.MoveToFront(el)
			copyOverlap(dst, off, el.Value.(*block).data, b*bs)
			continue
		}
		if len(runs) > 0 && runs[len(runs)-1].last == b-1 {
			runs[len(runs)-1].last = b
		} else {
			runs = append(runs, run{b, b})
		}
	}
	r.mu.Unlock()

	for _, rn := range runs {
		lo, hi := max(off, rn.first*bs), min(end, (rn.last+1)*bs)
		part := dst[lo-off : hi-off]
		if ra := int64(r.opts.ReadAhead); sequential && ra > 0 && hi-lo <= ra {
			// A stream: fetch a window ahead, which doubles while the
			// stream runs on past it.
			ws := max(hi-lo, min(max(int64(grow), directBlocks*bs), ra))
			win := make([]byte, min(ws, r.size-lo))
			if err := r.fetchParallel(ctx, win, lo); err != nil {
				return err
			}
			copy(part, win)
			r.mu.Lock()
			r.win, r.winOff = win, lo
			r.mu.Unlock()
			continue
		}
		if rn.last-rn.first+1 >= directBlocks {
			if err := r.fetchParallel(ctx, part, lo); err != nil {
				return err
			}
			continue
		}
		start := rn.first * bs
		buf := make([]byte, min((rn.last+1)*bs, r.size)-start)
		if err := r.fetch(ctx, buf, start); err != nil {
			return err
		}
		copyOverlap(part, lo, buf, start)
		r.mu.Lock()
		for b := rn.first; b <= rn.last; b++ {
			i := (b - rn.first) * bs
			r.putBlockLocked(b, buf[i:min(i+bs, int64(len(buf)))])
		}
		r.mu.Unlock()
	}
	return nil
}

// copyOverlap copies into dst, which holds bytes at dstOff, the part of
// src (bytes at srcOff) that overlaps it.
func copyOverlap(dst []byte, dstOff int64, src []byte, srcOff int64) {
	lo := max(dstOff, srcOff)
	hi := min(dstOff+int64(len(dst)), srcOff+int64(len(src)))
	if lo < hi {
		copy(dst[lo-dstOff:hi-dstOff], src[lo-srcOff:])
	}
}

// putBlockLocked caches block idx, evicting the least recently used
// blocks beyond CacheBlocks. r.mu is held.
func (r *Reader) putBlockLocked(idx int64, data []byte) {
	if el, ok := r.blocks[idx]; ok {
		el.Value.(*block).data = data
		r.lru.MoveToFront(el)
		return
	}
	r.blocks[idx] = r.lru.PushFront(&block{idx, data})
	for r.lru.Len() > r.opts.CacheBlocks {
		old := r.lru.Back()
		r.lru.Remove(old)
		delete(r.blocks, old.Value.(*block).idx)
	}
}

// fetchParallel reads dst at off with up to Parallelism range requests at
// once. The first error cancels the other requests and is returned.
func (r *Reader) fetchParallel(ctx context.Context, dst []byte, off int64) error {
	n := int64(len(dst))
	chunk := min(max((n+int64(r.opts.Parallelism)-1)/int64(r.opts.Parallelism), minChunk), maxChunk)
	if n <= chunk {
		return r.fetch(ctx, dst, off)
	}
	err := parallel(ctx, int((n+chunk-1)/chunk), r.opts.Parallelism, func(ctx context.Context, i int) error {
		lo := int64(i) * chunk
		return r.fetch(ctx, dst[lo:min(lo+chunk, n)], off+lo)
	})
	if err == nil && ctx.Err() != nil {
		return r.ctxError(ctx, off, n)
	}
	return err
}

// parallel calls work for each index below n, in order, at most width at
// once, under a context that the first error cancels; it returns that
// error. No call starts once the context is done.
func parallel(ctx context.Context, n, width int, work func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64 // the next index to work on
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range min(width, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := work(ctx, i); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// fetch reads dst at off with one range request, retried as the options
// say.
func (r *Reader) fetch(ctx context.Context, dst []byte, off int64) error {
	return r.withRetries(ctx, func() error { return r.getOnce(ctx, dst, off) })
}

// withRetries calls once until it succeeds, fails with an error not worth
// retrying, or MaxRetries retries have failed, sleeping between attempts.
func (r *Reader) withRetries(ctx context.Context, once func() error) error {
	for attempt := 0; ; attempt++ {
		err := once()
		var e *Error
		if err == nil || !errors.As(err, &e) || !retryable(e) {
			return err
		}
		if attempt >= r.opts.MaxRetries {
			if attempt > 0 {
				e.Msg = strings.TrimPrefix(e.Msg+fmt.Sprintf("; %d retries failed", attempt), "; ")
			}
			return err
		}
		delay := r.backoff(attempt)
		if e.retryAfter > 0 {
			if e.retryAfter > r.opts.MaxRetryDelay {
				e.Msg = fmt.Sprintf("server asks to retry after %s, longer than the %s allowed", e.retryAfter, r.opts.MaxRetryDelay)
				return e
			}
			delay = e.retryAfter
		}
		r.retries.Add(1)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return r.ctxError(ctx, e.Off, e.Len)
		case <-t.C:
		}
	}
}

// retryable reports whether a request that failed with e is worth
// repeating: e is Temporary, but not a changed object (reading it again
// from the start mends that, not a retry) nor a 501.
func retryable(e *Error) bool {
	return e.Temporary() && e.Kind != KindChanged && !(e.Kind == KindStatus && e.Status == http.StatusNotImplemented)
}

// backoff returns the delay before retry attempt+1: RetryDelay doubled per
// attempt, capped at MaxRetryDelay, with up to half of it random so that
// parallel requests do not retry in step.
func (r *Reader) backoff(attempt int) time.Duration {
	d := r.opts.MaxRetryDelay
	if attempt < 30 {
		d = min(r.opts.RetryDelay<<attempt, d)
	}
	return d/2 + rand.N(d/2+1)
}

// do sends a GET for bytes [off, off+n) of the object (for the ranges of
// spec, a Range header's value, when it is not ""), conditioned, once the
// object is pinned, so that a changed object fails instead of mixing
// versions. Its headers must come within ResponseHeaderTimeout, and each
// read of its body must return within IdleTimeout, or the request is
// cancelled and fails with a *stallError as its cause. The caller must
// close the body.
func (r *Reader) do(ctx context.Context, off, n int64, spec string) (*http.Response, error) {
	rctx, cancel := context.WithCancelCause(ctx)
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, r.target.String(), nil)
	if err != nil {
		cancel(nil)
		// Not wrapped: the error quotes the URL.
		return nil, &Error{Kind: KindBadResponse, URL: r.redacted, Off: off, Len: n, Msg: "cannot make a request for this URL"}
	}
	maps.Copy(req.Header, r.header)
	req.Header.Set("Range", cmp.Or(spec, fmt.Sprintf("bytes=%d-%d", off, off+n-1)))
	// Explicit identity stops the transport from asking for gzip, whose
	// ranges would be of the compressed bytes.
	req.Header.Set("Accept-Encoding", "identity")
	// Only a strong validator may condition a range (RFC 9110 section
	// 13.1.5): an unpinned Reader, and the first request, send none.
	switch {
	case r.etag != "":
		req.Header.Set("If-Match", r.etag)
		req.Header.Set("If-Range", r.etag)
	case r.lastMod != "":
		req.Header.Set("If-Unmodified-Since", r.lastMod)
		req.Header.Set("If-Range", r.lastMod)
	}
	var headers *time.Timer
	if d := r.opts.ResponseHeaderTimeout; d > 0 {
		headers = time.AfterFunc(d, func() { cancel(&stallError{"no response headers", d}) })
	}
	resp, err := r.client.Do(req)
	if headers != nil && !headers.Stop() && err == nil {
		// The limit passed as the headers came: the body is cancelled.
		resp.Body.Close()
		err = context.Cause(rctx)
	}
	if err != nil {
		cancel(nil)
		return nil, r.doError(ctx, rctx, err, off, n)
	}
	resp.Body = &idleBody{rc: resp.Body, limit: r.opts.IdleTimeout, ctx: rctx, cancel: cancel, count: &r.bodyBytes}
	return resp, nil
}

// stallError is the cause of a request cancelled because the server kept
// it waiting longer than a limit of Options.
type stallError struct {
	what  string // "no response headers", "no body data"
	limit time.Duration
}

func (e *stallError) Error() string {
	return fmt.Sprintf("%s from the server within %s", e.what, e.limit)
}

// idleBody is a response body each of whose reads must return within
// limit (0: no limit); a read that does not cancels the request. It adds
// the bytes read to count (Stats.Bytes).
type idleBody struct {
	rc     io.ReadCloser
	limit  time.Duration
	ctx    context.Context
	cancel context.CancelCauseFunc
	count  *atomic.Int64
}

func (b *idleBody) Read(p []byte) (int, error) {
	var t *time.Timer
	if b.limit > 0 {
		t = time.AfterFunc(b.limit, func() { b.cancel(&stallError{"no body data", b.limit}) })
	}
	n, err := b.rc.Read(p)
	b.count.Add(int64(n))
	if t != nil && !t.Stop() && err != nil && err != io.EOF {
		// The limit passed: say so rather than "context canceled".
		err = context.Cause(b.ctx)
	}
	return n, err
}

func (b *idleBody) Close() error {
	err := b.rc.Close()
	b.cancel(nil)
	return err
}

// openOnce is one attempt of the first request: bytes [0, n).
func (r *Reader) openOnce(ctx context.Context, n int64) error {
	resp, err := r.do(ctx, 0, n, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
		start, end, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start < 0 || total < 0 {
			return r.respError(KindBadResponse, resp, 0, n, "Content-Range %q is not \"bytes first-last/size\"", resp.Header.Get("Content-Range"))
		}
		if start != 0 || end != min(n, total)-1 {
			return r.respError(KindBadResponse, resp, 0, n, "Content-Range %q does not answer the range asked for", resp.Header.Get("Content-Range"))
		}
		data := make([]byte, end+1)
		if err := r.readBody(ctx, resp, data, 0); err != nil {
			return err
		}
		r.pin(resp)
		r.size = total
		if r.opts.RequirePinned && !r.Pinned() {
			return r.unpinnedError()
		}
		r.mu.Lock()
		r.putBlockLocked(0, data)
		r.mu.Unlock()
		return nil
	case http.StatusOK:
		return r.openWhole(ctx, resp, n)
	case http.StatusRequestedRangeNotSatisfiable:
		// The answer for an empty object: no byte 0 to send.
		if _, _, total, ok := parseContentRange(resp.Header.Get("Content-Range")); ok && total == 0 {
			r.pin(resp)
			r.size = 0
			return nil
		}
		return r.respError(KindRangeNotSatisfiable, resp, 0, n, "the server refused the object's first bytes without saying it is empty (Content-Range \"bytes */0\")")
	}
	return r.statusError(resp, 0, n)
}

// openWhole handles a 200 to the first request: the server ignored Range.
// The object is kept in memory if it is at most MaxBodyFallback bytes and
// refused otherwise, before its body is read.
func (r *Reader) openWhole(ctx context.Context, resp *http.Response, n int64) error {
	limit := r.opts.MaxBodyFallback
	refuse := func(size string) error {
		return r.respError(KindNoRangeSupport, resp, 0, n, "the server ignored Range and sent the whole object (%s); objects are read that way only up to %d bytes (Options.MaxBodyFallback)", size, limit)
	}
	if resp.ContentLength > limit {
		return refuse(fmt.Sprintf("%d bytes", resp.ContentLength))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return r.bodyError(ctx, resp, err, 0, 0, fmt.Sprintf("body ended after %d bytes", len(data)))
	}
	if int64(len(data)) > limit {
		return refuse("more than that")
	}
	if resp.ContentLength >= 0 && int64(len(data)) != resp.ContentLength {
		return r.respError(KindTruncated, resp, 0, 0, "body ended after %d of %d bytes", len(data), resp.ContentLength)
	}
	r.pin(resp)
	r.whole, r.size = data, int64(len(data))
	return nil
}

// pin records the version of the object the first response is of.
func (r *Reader) pin(resp *http.Response) {
	if final := resp.Request.URL; final != nil && final.String() != r.target.String() {
		r.target = final
		if !strings.EqualFold(final.Host, r.origHost) {
			r.header = nil
		}
	}
	r.seenTag, r.seenMod = resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	if et := r.seenTag; et != "" && !strings.HasPrefix(et, "W/") {
		r.etag = et
	} else if strongDate(r.seenMod, resp.Header.Get("Date")) {
		r.lastMod = r.seenMod
	}
}

// strongDate reports whether a Last-Modified value may serve as a strong
// validator: RFC 9110 section 8.8.2.2 lets it when it is at least one
// second before the response's Date, since a later change then gets a
// later Last-Modified. A date-only validator of a file changed within the
// second it was sent cannot tell two versions apart.
func strongDate(lastMod, date string) bool {
	if lastMod == "" || date == "" {
		return false
	}
	lm, err1 := http.ParseTime(lastMod)
	d, err2 := http.ParseTime(date)
	return err1 == nil && err2 == nil && d.Sub(lm) >= time.Second
}

// unpinnedError is the error of Open with Options.RequirePinned for an
// object that Pinned says is not.
func (r *Reader) unpinnedError() error {
	why := "no ETag and no Last-Modified"
	switch {
	case r.seenTag != "":
		why = fmt.Sprintf("only the weak ETag %.80s", r.seenTag)
	case r.seenMod != "":
		why = "only a Last-Modified less than a second before the response's Date"
	}
	return &Error{Kind: KindUnpinned, URL: r.redacted,
		Msg: "the server gives " + why + ", no strong validator: range reads could mix two versions of an object replaced while it is read"}
}

// getOnce is one attempt to read dst at off with a pinned range request.
func (r *Reader) getOnce(ctx context.Context, dst []byte, off int64) error {
	n := int64(len(dst))
	resp, err := r.do(ctx, off, n, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
		if msg := r.versionChange(resp); msg != "" {
			return r.respError(KindChanged, resp, off, n, "%s", msg)
		}
		cr := resp.Header.Get("Content-Range")
		start, end, total, ok := parseContentRange(cr)
		if !ok || start < 0 {
			return r.respError(KindBadResponse, resp, off, n, "Content-Range %q is not \"bytes first-last/size\"", cr)
		}
		if total >= 0 && total != r.size {
			return r.respError(KindChanged, resp, off, n, "object is now %d bytes, was %d", total, r.size)
		}
		if start != off || end != off+n-1 {
			return r.respError(KindBadResponse, resp, off, n, "Content-Range %q does not answer the range asked for", cr)
		}
		if err := r.readBody(ctx, resp, dst, off); err != nil {
			return err
		}
		if msg := r.unvalidated(resp); msg != "" {
			return r.respError(KindBadResponse, resp, off, n, "%s", msg)
		}
		return nil
	case http.StatusOK:
		if msg := r.versionChange(resp); msg != "" {
			return r.respError(KindChanged, resp, off, n, "%s", msg)
		}
		// A 200 answers an If-Range that no longer matches; without a
		// validator to send, the server has stopped honouring Range.
		same := r.etag != "" && resp.Header.Get("ETag") == r.etag ||
			r.etag == "" && r.lastMod != "" && resp.Header.Get("Last-Modified") == r.lastMod
		if same || r.etag == "" && r.lastMod == "" {
			return r.respError(KindNoRangeSupport, resp, off, n, "the server ignored Range and sent the whole object")
		}
		return r.respError(KindChanged, resp, off, n, "the server sent the whole object in answer to If-Range: it is no longer the version first read")
	case http.StatusRequestedRangeNotSatisfiable:
		if _, _, total, ok := parseContentRange(resp.Header.Get("Content-Range")); ok && total >= 0 && total != r.size {
			return r.respError(KindChanged, resp, off, n, "object is now %d bytes, was %d", total, r.size)
		}
	}
	return r.statusError(resp, off, n)
}

// versionChange says how resp's validator differs from the first
// response's, or returns "" when it does not (or resp has none). Weak
// validators count too: a weak ETag cannot pin a range, but one that
// differs still shows that the object changed.
func (r *Reader) versionChange(resp *http.Response) string {
	if et := resp.Header.Get("ETag"); r.seenTag != "" && et != "" && strings.TrimPrefix(et, "W/") != strings.TrimPrefix(r.seenTag, "W/") {
		return fmt.Sprintf("ETag is now %.80s, was %.80s", et, r.seenTag)
	}
	if lm := resp.Header.Get("Last-Modified"); r.seenTag == "" && r.seenMod != "" && lm != "" && lm != r.seenMod {
		return fmt.Sprintf("Last-Modified is now %.80s, was %.80s", lm, r.seenMod)
	}
	return ""
}

// unvalidated says why resp, a 206 to a request pinned by the strong ETag
// of the first answer, cannot be told to be of that version: it names no
// ETag, or only that ETag made weak (W/). RFC 9110 (section 15.3.7)
// requires a 206 to carry the ETag a 200 would, and only a strong one
// says the bytes are the same (section 8.8.3.2); a server or proxy that
// drops or weakens it and ignores If-Match could otherwise serve another
// version of the same size unnoticed. (versionChange has refused any
// other ETag.)
func (r *Reader) unvalidated(resp *http.Response) string {
	switch et := resp.Header.Get("ETag"); {
	case r.etag == "" || et == r.etag:
		return ""
	case et == "":
		return fmt.Sprintf("the answer names no ETag where the first named %.80s: its bytes cannot be told to be of that version", r.etag)
	default:
		return fmt.Sprintf("the answer names the weak ETag %.80s where the first named the strong %.80s: its bytes cannot be told to be of that version", et, r.etag)
	}
}

// readBody reads exactly len(dst) body bytes into dst and checks that the
// body holds no more.
func (r *Reader) readBody(ctx context.Context, resp *http.Response, dst []byte, off int64) error {
	n := int64(len(dst))
	if resp.ContentLength >= 0 && resp.ContentLength != n {
		return r.respError(KindBadResponse, resp, off, n, "Content-Length %d does not match the %d-byte range", resp.ContentLength, n)
	}
	if k, err := io.ReadFull(resp.Body, dst); err != nil {
		return r.bodyError(ctx, resp, err, off, n, fmt.Sprintf("body ended after %d of %d bytes", k, n))
	}
	var extra [1]byte
	if k, _ := io.ReadFull(resp.Body, extra[:]); k > 0 {
		return r.respError(KindBadResponse, resp, off, n, "body is longer than the %d-byte range", n)
	}
	return nil
}

// bodyError is the error for a body read that failed with err: the
// context's, a stall (KindNetwork, the server sent nothing for
// IdleTimeout) or a cut (KindTruncated, msg).
func (r *Reader) bodyError(ctx context.Context, resp *http.Response, err error, off, n int64, msg string) error {
	if ctx.Err() != nil {
		return r.ctxError(ctx, off, n)
	}
	if se, ok := errors.AsType[*stallError](err); ok {
		return &Error{Kind: KindNetwork, URL: r.redacted, Off: off, Len: n, Status: resp.StatusCode, Msg: msg, Err: se}
	}
	return &Error{Kind: KindTruncated, URL: r.redacted, Off: off, Len: n, Status: resp.StatusCode, Msg: msg, Err: err}
}

// respError is an error of kind about resp, the answer to a request for
// bytes [off, off+n).
func (r *Reader) respError(kind Kind, resp *http.Response, off, n int64, format string, args ...any) error {
	return &Error{Kind: kind, URL: r.redacted, Off: off, Len: n, Status: resp.StatusCode, Msg: fmt.Sprintf(format, args...)}
}

// statusError is the error for a response whose status is not expected.
func (r *Reader) statusError(resp *http.Response, off, n int64) error {
	e := &Error{Kind: KindStatus, URL: r.redacted, Off: off, Len: n, Status: resp.StatusCode}
	switch code := resp.StatusCode; {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		e.Kind = KindAuth
		e.Msg = cmp.Or(r.opts.AuthHint, "the server refused the credentials sent; set "+EnvBearerToken+" or pass an Authorization header ("+
			EnvHeaders+", --header), or renew an expired presigned URL")
	case code == http.StatusNotFound || code == http.StatusGone:
		e.Kind = KindNotFound
	case code == http.StatusPreconditionFailed:
		e.Kind = KindChanged
		e.Msg = "precondition failed: the object is no longer the version first read"
	case code == http.StatusRequestedRangeNotSatisfiable:
		e.Kind = KindRangeNotSatisfiable
		e.Msg = fmt.Sprintf("the server refused a range inside the object's %d bytes", r.size)
	case code >= 300 && code < 400:
		// The client follows redirects with a Location; this one has none.
		e.Kind = KindRedirect
		e.Msg = "a redirect without a usable Location"
	case code == http.StatusTooManyRequests || code >= 500:
		e.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"))
	}
	return e
}

// doError turns an error of http.Client.Do, sent under rctx (ctx with the
// request's own limits), into an *Error.
func (r *Reader) doError(ctx, rctx context.Context, err error, off, n int64) error {
	if e, ok := errors.AsType[*Error](err); ok { // from checkRedirect
		c := *e
		c.Off, c.Len = off, n
		return &c
	}
	if ctx.Err() != nil {
		return r.ctxError(ctx, off, n)
	}
	if se, ok := errors.AsType[*stallError](context.Cause(rctx)); ok {
		return &Error{Kind: KindNetwork, URL: r.redacted, Off: off, Len: n, Err: se}
	}
	// A *url.Error quotes the whole URL, query included: keep its cause.
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	if msg := permanent(err); msg != "" {
		return &Error{Kind: KindUnreachable, URL: r.redacted, Off: off, Len: n, Msg: msg, Err: err}
	}
	return &Error{Kind: KindNetwork, URL: r.redacted, Off: off, Len: n, Err: err}
}

// permanent says why err, a failure to reach the server, will not go away
// by trying again, or returns "" when it may: an unknown host name, a
// server that does not speak TLS, a certificate not trusted or not for
// the host. A refused or reset connection, a timeout, a DNS server that
// does not answer are worth retrying.
func permanent(err error) string {
	if de, ok := errors.AsType[*net.DNSError](err); ok && de.IsNotFound {
		return "no such host (DNS)"
	}
	// net/http turns a TLS record that looks like an HTTP response into
	// an error of this text, with no type to match.
	if is[tls.RecordHeaderError](err) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		return "the server does not speak TLS on this port (an http:// URL?)"
	}
	if is[*tls.CertificateVerificationError](err) || is[x509.UnknownAuthorityError](err) || is[x509.HostnameError](err) || is[x509.CertificateInvalidError](err) {
		return "the server's certificate is not trusted for this host"
	}
	return ""
}

// ctxError is the error for a read stopped by ctx or by Close.
func (r *Reader) ctxError(ctx context.Context, off, n int64) error {
	// The cause says why (an interrupt, a deadline); it still matches
	// the context's error under errors.Is.
	err := context.Cause(ctx)
	if r.closed.Load() {
		err = ErrClosed
	}
	return &Error{Kind: KindCanceled, URL: r.redacted, Off: off, Len: n, Err: err}
}

// checkRedirect is the client's redirect policy: at most MaxRedirects
// hops, never from https to http, and Options.Header only to the host of
// the URL given to Open.
//
// The client adds a Referer naming the previous URL, query included, which
// would give a presigned URL's signature to the next host: it is removed
// from every redirected request. Across hosts, the headers the client
// itself guards (Authorization, Cookie) are removed too, even where the
// client would keep them (a subdomain, another port).
func (r *Reader) checkRedirect(req *http.Request, via []*http.Request) error {
	req.Header.Del("Referer")
	if len(via) > r.opts.MaxRedirects {
		return &Error{Kind: KindRedirect, URL: r.redacted, Msg: fmt.Sprintf("more than %d redirects", r.opts.MaxRedirects)}
	}
	if via[len(via)-1].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return &Error{Kind: KindRedirect, URL: r.redacted, Msg: "redirect from https to " + req.URL.Scheme + " refused"}
	}
	if !strings.EqualFold(req.URL.Host, r.origHost) {
		for k := range r.opts.Header {
			req.Header.Del(k)
		}
		for _, k := range []string{"Authorization", "Proxy-Authorization", "Cookie", "Cookie2"} {
			req.Header.Del(k)
		}
	}
	return nil
}

// parseContentRange parses "bytes first-last/size" (size -1 for "*") and
// "bytes */size" (first and last -1). Only plain decimal digits are
// accepted, and first <= last < size.
func parseContentRange(s string) (first, last, size int64, ok bool) {
	rest, prefixed := strings.CutPrefix(s, "bytes ")
	rng, total, found := strings.Cut(rest, "/")
	if !prefixed || !found {
		return 0, 0, 0, false
	}
	size = -1
	if total != "*" {
		if size, ok = parseDigits(total); !ok {
			return 0, 0, 0, false
		}
	}
	if rng == "*" {
		return -1, -1, size, size >= 0
	}
	a, b, _ := strings.Cut(rng, "-") // without "-", b is "": refused below
	first, ok1 := parseDigits(a)
	last, ok2 := parseDigits(b)
	if !ok1 || !ok2 || first > last || (size >= 0 && last >= size) {
		return 0, 0, 0, false
	}
	return first, last, size, true
}

// parseDigits parses a non-empty string of ASCII digits.
func parseDigits(s string) (int64, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

// parseRetryAfter parses a Retry-After value (seconds or an HTTP date); 0
// when absent or unparsable.
func parseRetryAfter(s string) time.Duration {
	if s == "" {
		return 0
	}
	if secs, ok := parseDigits(s); ok {
		return time.Duration(min(secs, 1<<30)) * time.Second
	}
	if t, err := http.ParseTime(s); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// countingTransport counts the round trips of a client.
type countingTransport struct {
	base http.RoundTripper
	n    *atomic.Int64
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.base.RoundTrip(req)
}
