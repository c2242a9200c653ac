// Package httprange reads an object over HTTP(S) as an io.ReaderAt, with
// range requests, so that a multi-GiB program in an artifact store can be
// opened and inspected by reading only the few KiB that matter.
//
// Open makes one request for the first block (Options.BlockSize, 32 KiB by
// default), learns the object's size from Content-Range and pins its
// version by its strong ETag, or else by a Last-Modified at least one
// second before the response's Date (RFC 9110 lets such a date serve as a
// strong validator). Every later request carries If-Match and If-Range (or
// If-Unmodified-Since and If-Range) with that validator, and every
// response's validators and size are compared with the first response's: an
// object replaced while it is being read fails with KindChanged, never
// yields a mix of two versions. A 206 without the ETag that pinned the
// object (which RFC 9110 requires it to carry), or with it made weak,
// fails with KindBadResponse.
//
// A weak ETag, a Last-Modified of the same second as the Date, or no
// validator cannot pin a range (RFC 9110 forbids a weak validator in
// If-Range): Reader.Pinned says so, and a change shows only when the weak
// ETag, the Last-Modified or the size differs. Options.RequirePinned makes
// Open refuse such an object (KindUnpinned), for callers that write what
// they read.
//
// Reads are served from a small LRU cache of blocks, so the handful of
// small reads that opening a program makes cost one to three requests.
// Reads of four blocks or more bypass the cache and are split into up to
// Options.Parallelism concurrent range requests; sequential reads (a stream
// copying a segment) fetch a read-ahead window that doubles up to
// Options.ReadAhead.
//
// No wait on a server is unbounded: the connection (10 s), the TLS
// handshake (10 s), the response's headers (30 s) and each read of its body
// (30 s without data) have limits (Options.ConnectTimeout and the like),
// past which the request fails as a network error.
//
// Failures are *Error values with a Kind. Connection errors (a refused
// connection included), timeouts, truncated bodies, 5xx and 429 are retried
// with exponential backoff and jitter, honouring Retry-After, up to
// Options.MaxRetries times. A server that ignores Range and answers 200
// with the whole object is accepted only for objects up to
// Options.MaxBodyFallback (1 MiB) bytes, held in memory; larger ones fail
// with KindNoRangeSupport before their body is read. Failures that trying
// again cannot mend fail at once, KindUnreachable: an unknown host name, a
// server that does not speak TLS, a certificate not trusted for the host.
//
// Redirects are followed up to Options.MaxRedirects (5) hops, never from
// https to http. Options.Header (credentials, typically) is sent only to
// the host of the URL given to Open: after a redirect to another host, as
// to a presigned storage URL, none of it is sent there, nor Authorization
// or Cookie however they were set. No redirected request carries a Referer,
// which would hand the first URL, query and signature included, to the next
// host. Later requests go straight to the URL the first request ended at.
//
// Credentials never appear in errors or in String: URLs are shown by
// Redact, without user information, query or fragment (presigned URLs sign
// in the query), and header values are never shown. HeaderFromEnv reads a
// bearer token from PTEKIT_HTTP_BEARER_TOKEN and extra headers from
// PTEKIT_HTTP_HEADERS; ParseHeader parses --header style "Name: value"
// strings.
package httprange
