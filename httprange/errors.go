package httprange

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"time"
)

// A Kind classifies an *Error so that callers can pick an action (retry,
// ask for credentials, report a damaged server) with a switch.
type Kind int

// The kinds of *Error. Each has a sentinel error of the same name with an
// Err prefix, so errors.Is(err, ErrChanged) also works.
const (
	// KindNetwork: the connection failed or broke, after the retries.
	KindNetwork Kind = iota + 1
	// KindCanceled: the context was canceled or its deadline passed, or
	// the Reader was closed. Err is the context's cause (context.Cause:
	// its error, or the cause it was cancelled with) or ErrClosed.
	KindCanceled
	// KindAuth: 401 or 403; the credentials are missing, wrong or expired.
	KindAuth
	// KindNotFound: 404 or 410.
	KindNotFound
	// KindNoRangeSupport: the server ignored Range and sent the whole
	// object, which is larger than Options.MaxBodyFallback.
	KindNoRangeSupport
	// KindRangeNotSatisfiable: 416 for a range inside the object's size.
	KindRangeNotSatisfiable
	// KindChanged: the object changed on the server while it was being
	// read (other validator or size, 412, or a 200 answering If-Range).
	KindChanged
	// KindRedirect: too many redirects, a redirect without a usable
	// Location, or from https to http.
	KindRedirect
	// KindTruncated: the body ended before the length the response
	// declared (after the retries).
	KindTruncated
	// KindBadResponse: the response contradicts the request: a missing or
	// wrong Content-Range, a body longer than the range, an unknown size.
	KindBadResponse
	// KindStatus: any other unexpected status, including 5xx and 429
	// after the retries.
	KindStatus
	// KindUnreachable: the server cannot be reached as the URL gives it,
	// and trying again will not change that: the host name does not exist
	// (DNS), the server does not speak TLS on that port, or its
	// certificate is not trusted or not for that host. Not retried. (A
	// refused connection is KindNetwork: a server restarting refuses for
	// a moment.)
	KindUnreachable
	// KindUnpinned: Options.RequirePinned is set and the server gives no
	// strong validator to pin the object's version by (a weak ETag, a
	// Last-Modified less than a second before the response's Date, or
	// none).
	KindUnpinned
)

// Sentinel errors, one per Kind, for errors.Is.
var (
	ErrNetwork             = errors.New("httprange: network error")
	ErrCanceled            = errors.New("httprange: canceled")
	ErrAuth                = errors.New("httprange: not authorized")
	ErrNotFound            = errors.New("httprange: not found")
	ErrNoRangeSupport      = errors.New("httprange: server does not support range requests")
	ErrRangeNotSatisfiable = errors.New("httprange: range not satisfiable")
	ErrChanged             = errors.New("httprange: object changed while reading")
	ErrRedirect            = errors.New("httprange: redirect refused")
	ErrTruncated           = errors.New("httprange: truncated response body")
	ErrBadResponse         = errors.New("httprange: malformed response")
	ErrStatus              = errors.New("httprange: unexpected HTTP status")
	ErrUnreachable         = errors.New("httprange: server unreachable as given")
	ErrUnpinned            = errors.New("httprange: object cannot be pinned")

	// ErrClosed is the Err of the KindCanceled error a closed Reader
	// returns.
	ErrClosed = errors.New("httprange: reader closed")
)

var kindInfo = map[Kind]struct {
	name     string
	sentinel error
}{
	KindNetwork:             {"network", ErrNetwork},
	KindCanceled:            {"canceled", ErrCanceled},
	KindAuth:                {"auth", ErrAuth},
	KindNotFound:            {"not-found", ErrNotFound},
	KindNoRangeSupport:      {"no-range-support", ErrNoRangeSupport},
	KindRangeNotSatisfiable: {"range-not-satisfiable", ErrRangeNotSatisfiable},
	KindChanged:             {"changed", ErrChanged},
	KindRedirect:            {"redirect", ErrRedirect},
	KindTruncated:           {"truncated", ErrTruncated},
	KindBadResponse:         {"bad-response", ErrBadResponse},
	KindStatus:              {"status", ErrStatus},
	KindUnreachable:         {"unreachable", ErrUnreachable},
	KindUnpinned:            {"unpinned", ErrUnpinned},
}

// String returns a short lower-case name, such as "changed".
func (k Kind) String() string {
	if i, ok := kindInfo[k]; ok {
		return i.name
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Error is the error of every failed request. It never holds credentials:
// URL is redacted (no user information, no query, no fragment), and
// request headers are never included.
type Error struct {
	Kind Kind
	// URL is the object's URL, redacted by Redact.
	URL string
	// Off and Len are the byte range requested; Len is 0 when the error
	// is not about one range.
	Off, Len int64
	// Status is the HTTP status code, 0 when there was no response.
	Status int
	// Msg says what went wrong, in words.
	Msg string
	// Err is the underlying error, if any (a network error, a context
	// error, ErrClosed).
	Err error

	retryAfter time.Duration // from a Retry-After header
}

// Error says what failed where: the redacted URL, the range, the status
// and the cause.
func (e *Error) Error() string {
	s := "httprange: " + e.URL
	if e.Len > 0 {
		s += fmt.Sprintf(" bytes %d-%d", e.Off, e.Off+e.Len-1)
	}
	if e.Status != 0 {
		s += fmt.Sprintf(": %d %s", e.Status, http.StatusText(e.Status))
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's Kind.
//
// A missing object also matches fs.ErrNotExist and a refused one
// fs.ErrPermission, so code written for files (errors.Is(err,
// fs.ErrNotExist)) treats a URL alike.
func (e *Error) Is(target error) bool {
	switch {
	case target == fs.ErrNotExist:
		return e.Kind == KindNotFound
	case target == fs.ErrPermission:
		return e.Kind == KindAuth
	}
	i, ok := kindInfo[e.Kind]
	return ok && target == i.sentinel
}

// Timeout reports whether the server kept a request waiting past one of
// the limits of Options (ResponseHeaderTimeout, IdleTimeout): a
// KindNetwork error of a silent or stalled server.
func (e *Error) Timeout() bool { return is[*stallError](e.Err) }

// is reports whether err's chain holds a T.
func is[T error](err error) bool {
	_, ok := errors.AsType[T](err)
	return ok
}

// Temporary reports whether retrying later may succeed: network errors,
// truncated bodies, 5xx and 429, and a changed object (read it again from
// the start).
func (e *Error) Temporary() bool {
	switch e.Kind {
	case KindNetwork, KindTruncated, KindChanged:
		return true
	case KindStatus:
		return e.Status >= 500 || e.Status == http.StatusTooManyRequests
	}
	return false
}
