package httprange

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"strings"
	"time"
)

// Environment variables read by HeaderFromEnv.
const (
	// EnvBearerToken holds a token sent as "Authorization: Bearer <token>".
	EnvBearerToken = "PTEKIT_HTTP_BEARER_TOKEN"
	// EnvHeaders holds extra request headers, one "Name: value" per line.
	EnvHeaders = "PTEKIT_HTTP_HEADERS"
)

// Defaults of the Options fields.
const (
	DefaultBlockSize       = 32 << 10
	DefaultCacheBlocks     = 16
	DefaultReadAhead       = 8 << 20
	DefaultParallelism     = 4
	DefaultPrefetchWidth   = 16
	DefaultMaxRetries      = 4
	DefaultRetryDelay      = 250 * time.Millisecond
	DefaultMaxRetryDelay   = 10 * time.Second
	DefaultMaxRedirects    = 5
	DefaultMaxBodyFallback = 1 << 20

	// The limits on waiting for a server. Each bounds one wait of one
	// request; a request that runs into one fails with KindNetwork and is
	// retried like any network error, so a silent server costs at most
	// (MaxRetries+1) times the limit plus the backoff.
	DefaultConnectTimeout        = 10 * time.Second
	DefaultTLSHandshakeTimeout   = 10 * time.Second
	DefaultResponseHeaderTimeout = 30 * time.Second
	DefaultIdleTimeout           = 30 * time.Second
)

// Options tunes a Reader. The zero value (or nil) gives the defaults; a
// negative value turns a feature off where that is said.
type Options struct {
	// Client sends the requests; nil, or a nil Transport, means a copy of
	// http.DefaultTransport with ConnectTimeout and TLSHandshakeTimeout.
	// Open uses a copy whose CheckRedirect applies
	// MaxRedirects and the header policy below, and whose Transport counts
	// the requests.
	Client *http.Client
	// Header is sent with every request to the URL's host (for example
	// Authorization). After a redirect to another host none of these
	// headers are sent there, so a token for one server does not reach a
	// storage host it redirects to (a presigned URL carries its own
	// credentials). See HeaderFromEnv and ParseHeader.
	Header http.Header
	// BlockSize is the unit of the cache and the size of the first
	// request, which also learns the object's size. Default 32 KiB: a
	// program's prefix, header and flatbuffer tables are usually inside it.
	BlockSize int
	// CacheBlocks is how many blocks the cache keeps (least recently used
	// go first). Default 16.
	CacheBlocks int
	// ReadAhead is the largest window fetched ahead for sequential reads
	// (a stream copying a segment): the window doubles from 4 blocks up to
	// ReadAhead. Default 8 MiB; -1 turns read-ahead off.
	ReadAhead int
	// Parallelism is how many range requests one large read may run at
	// once. Default 4.
	Parallelism int
	// PrefetchWidth is how many single range requests Prefetch runs at
	// once (a server without multi-range answers, an object store): the
	// heads of a program's engines are fetched in about engines/16 round
	// trips, not one each. Default 16.
	PrefetchWidth int
	// SingleRange says the server answers one range per request, as S3
	// and the stores compatible with it do (several ranges get the whole
	// object): Prefetch then sends no multi-range request, and merges
	// ranges up to SingleRangeGap apart, since a request costs more than
	// a few KiB of bytes between two ranges.
	SingleRange bool
	// MaxRetries is how often a request is retried after a connection
	// error, a truncated body, a 5xx or a 429. Default 4; -1 means none.
	MaxRetries int
	// RetryDelay is the first backoff delay; it doubles at each retry, up
	// to MaxRetryDelay, with random jitter. Default 250 ms.
	RetryDelay time.Duration
	// MaxRetryDelay caps a backoff delay. A Retry-After longer than it
	// ends the retries. Default 10 s.
	MaxRetryDelay time.Duration
	// MaxRedirects is the longest redirect chain followed. Default 5; -1
	// follows none.
	MaxRedirects int
	// MaxBodyFallback is the largest object accepted from a server that
	// ignores Range and answers 200 with the whole body: it is held in
	// memory. A larger object is refused with KindNoRangeSupport, without
	// reading its body. Default 1 MiB; -1 refuses every such answer.
	MaxBodyFallback int64
	// ConnectTimeout bounds the TCP connection (DNS lookup included) and
	// TLSHandshakeTimeout the TLS handshake of the transport Open builds
	// when Client, or its Transport, is nil; a caller's own Transport keeps
	// its own limits. Defaults 10 s; -1 means none.
	ConnectTimeout, TLSHandshakeTimeout time.Duration
	// ResponseHeaderTimeout bounds how long a request waits for the
	// response's headers, from the moment it is sent (connecting
	// included), whatever the transport: a server that accepts the
	// connection and never answers fails after it. Default 30 s; -1 means
	// none.
	ResponseHeaderTimeout time.Duration
	// IdleTimeout bounds how long one read of a response body waits for
	// data: a body that stalls mid-way fails after it, however long the
	// whole transfer takes. Default 30 s; -1 means none.
	IdleTimeout time.Duration
	// RequirePinned makes Open fail with KindUnpinned when the server gives
	// no strong validator (see Reader.Pinned): without one, range reads
	// cannot be made conditional, and an object replaced while it is read
	// could yield a mix of two versions. Set it when the bytes read are
	// written somewhere (a re-bake); viewers may read unpinned objects,
	// whose changes are then detected only as far as a weak validator or
	// the size shows them.
	RequirePinned bool
	// Name, when set, is how String and every error name the object in
	// place of the redacted URL: an object store location (s3://b/k) read
	// through a signing Client is named as the user gave it. It must hold
	// no credential.
	Name string
	// AuthHint, when set, replaces what the message of a 401 or 403 tells
	// the user to do (by default: set EnvBearerToken or an Authorization
	// header, or renew a presigned URL), for a Client that brings its own
	// credentials.
	AuthHint string
}

// withDefaults returns a copy of o with zero fields set to their defaults
// and negative ones to 0.
func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	orDefault(&c.CacheBlocks, DefaultCacheBlocks)
	orDefault(&c.ReadAhead, DefaultReadAhead)
	orDefault(&c.Parallelism, DefaultParallelism)
	orDefault(&c.MaxRetries, DefaultMaxRetries)
	orDefault(&c.MaxRedirects, DefaultMaxRedirects)
	orDefault(&c.MaxBodyFallback, DefaultMaxBodyFallback)
	orDefault(&c.ConnectTimeout, DefaultConnectTimeout)
	orDefault(&c.TLSHandshakeTimeout, DefaultTLSHandshakeTimeout)
	orDefault(&c.ResponseHeaderTimeout, DefaultResponseHeaderTimeout)
	orDefault(&c.IdleTimeout, DefaultIdleTimeout)
	c.CacheBlocks = max(c.CacheBlocks, 1)
	c.Parallelism = max(c.Parallelism, 1)
	// These have no off: a value not above 0 is the default.
	c.BlockSize = cmp.Or(max(c.BlockSize, 0), DefaultBlockSize)
	c.PrefetchWidth = cmp.Or(max(c.PrefetchWidth, 0), DefaultPrefetchWidth)
	c.RetryDelay = cmp.Or(max(c.RetryDelay, 0), DefaultRetryDelay)
	c.MaxRetryDelay = cmp.Or(max(c.MaxRetryDelay, 0), DefaultMaxRetryDelay)
	return c
}

// orDefault sets *v to d when it is 0 and to 0 (off) when it is negative.
func orDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v == 0 {
		*v = d
	} else if *v < 0 {
		*v = 0
	}
}

// IsURL reports whether s is an http:// or https:// URL, the inputs Open
// accepts, as opposed to a file path.
func IsURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	scheme = strings.ToLower(scheme)
	return ok && (scheme == "http" || scheme == "https")
}

// Redact returns rawURL without user information, query and fragment, the
// parts that carry credentials (presigned URLs sign in the query). It is
// the form every error and String use; record it, not rawURL. A string
// that does not parse is reduced to its scheme and a placeholder.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		if IsURL(rawURL) {
			return rawURL[:strings.Index(rawURL, "://")] + "://<unparsable URL>"
		}
		return "<unparsable URL>"
	}
	return redactURL(u)
}

func redactURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	out := c.String()
	// url.URL.String prints an empty host before a "//" path as a path
	// that reads back as an authority ("//@//@" gives "//@", with a user):
	// a result that does not read back clean becomes the placeholder.
	if v, err := url.Parse(out); err != nil || v.User != nil || v.RawQuery != "" || v.ForceQuery || v.Fragment != "" {
		if c.Scheme != "" {
			return c.Scheme + "://<unparsable URL>"
		}
		return "<unparsable URL>"
	}
	return out
}

// ParseHeader parses "Name: value" strings, as given to a --header flag,
// into a header. Errors name the offending entry by position and header
// name only, never by value, since values are usually secrets.
func ParseHeader(lines ...string) (http.Header, error) {
	h := http.Header{}
	for i, line := range lines {
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || !validHeaderName(name) {
			return nil, fmt.Errorf("httprange: header %d is not \"Name: value\"", i+1)
		}
		value = strings.TrimSpace(value)
		if strings.ContainsAny(value, "\r\n\x00") {
			return nil, fmt.Errorf("httprange: header %d (%s) has a control character in its value", i+1, name)
		}
		h.Add(textproto.CanonicalMIMEHeaderKey(name), value)
	}
	return h, nil
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	return strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~") == ""
}

// HeaderFromEnv returns the headers the environment asks for:
// EnvBearerToken as "Authorization: Bearer <token>" and each non-empty
// line of EnvHeaders as "Name: value" (a header given in both wins from
// EnvHeaders). getenv is os.Getenv when nil. The result is empty, not nil,
// when neither variable is set.
func HeaderFromEnv(getenv func(string) string) (http.Header, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	h := http.Header{}
	if tok := strings.TrimSpace(getenv(EnvBearerToken)); tok != "" {
		if strings.ContainsAny(tok, "\r\n\x00") {
			return nil, fmt.Errorf("httprange: %s has a control character", EnvBearerToken)
		}
		h.Set("Authorization", "Bearer "+tok)
	}
	var lines []string
	for line := range strings.Lines(getenv(EnvHeaders)) {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	extra, err := ParseHeader(lines...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvHeaders, err)
	}
	maps.Copy(h, extra)
	return h, nil
}
