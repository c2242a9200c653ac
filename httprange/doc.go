// Package httprange reads an object over HTTP(S) as an io.ReaderAt, with
// range requests, so that a multi-GiB program in an artifact store can be
// opened and inspected by reading only the few KiB that matter.
//
// Open makes one request for the first block (Options.BlockSize, 32 KiB by
// default), learns the object's size from Content-Range and pins its
// version by its strong ETag, or else its Last-Modified. Every later
// request carries If-Match and If-Range (or If-Unmodified-Since and
// If-Range) with that validator, and every response's validator and size
// are compared with it: an object replaced while it is being read fails
// with KindChanged, never yields a mix of two versions. A server that
// gives neither validator cannot be pinned beyond its size; Last-Modified
// has one-second resolution.
//
// Reads are served from a small LRU cache of blocks, so the handful of
// small reads that opening a program makes cost one to three requests.
// Reads of four blocks or more bypass the cache and are split into up to
// Options.Parallelism concurrent range requests; sequential reads (a
// stream copying a segment) fetch a read-ahead window that doubles up to
// Options.ReadAhead.
//
// Failures are *Error values with a Kind. Connection errors, truncated
// bodies, 5xx and 429 are retried with exponential backoff and jitter,
// honouring Retry-After, up to Options.MaxRetries times. A server that
// ignores Range and answers 200 with the whole object is accepted only for
// objects up to Options.MaxBodyFallback (1 MiB) bytes, held in memory;
// larger ones fail with KindNoRangeSupport before their body is read.
//
// Redirects are followed up to Options.MaxRedirects (5) hops, never from
// https to http. Options.Header (credentials, typically) is sent only to
// the host of the URL given to Open: after a redirect to another host, as
// to a presigned storage URL, none of it is sent there. Later requests go
// straight to the URL the first request ended at.
//
// Credentials never appear in errors or in String: URLs are shown by
// Redact, without user information, query or fragment (presigned URLs
// sign in the query), and header values are never shown. HeaderFromEnv
// reads a bearer token from PTEKIT_HTTP_BEARER_TOKEN and extra headers
// from PTEKIT_HTTP_HEADERS; ParseHeader parses --header style "Name:
// value" strings.
package httprange
