// Package input opens the inputs of ptekit's commands: a file path, "-"
// for standard input, or an http:// or https:// URL read with range
// requests (package httprange). Both commands open every input through
// Open, so a URL is accepted wherever a path is, with the same flags
// (--header, --timeout), the same credentials from the environment, and
// the same exit codes and hints for transport failures.
package input

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/ptekit/ptekit/compilespec"
	"io"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/ptekit/ptekit/httprange"
	"github.com/ptekit/ptekit/internal/atomicfile"
	"github.com/ptekit/ptekit/internal/undorecord"
	"github.com/ptekit/ptekit/pte"
)

// MaxStdin bounds a program read from standard input, which has to be held
// in memory.
const MaxStdin = 1 << 32

// Exit statuses shared by the commands for input failures. 0, 1 and 2 keep
// their meaning (success, failure, usage); ExitRetry is new.
const (
	// ExitFail: the input cannot be read and trying again will not help
	// (not found, not authorized, no range support, 416, a refused
	// redirect, a malformed response, a 4xx status).
	ExitFail = 1
	// ExitRetry: a transient transport failure, worth running again: the
	// object changed while it was read, the connection failed or was cut
	// (after the retries), a 5xx or 429 (after the retries), or the
	// --timeout deadline passed.
	ExitRetry = 3
)

// Flags are the input flags both commands take.
type Flags struct {
	// Header holds --header "Name: value" values (repeatable), sent with
	// every request to a URL input's host.
	Header []string
	// Timeout is --timeout: a deadline for the whole command's reads of
	// URL inputs; 0 means none.
	Timeout time.Duration
}

// AddFlags registers --header and --timeout on fs.
func (fl *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&fl.Header, "header", nil, "with a URL input, send the request header `'Name: value'` (repeatable); "+
		"$"+httprange.EnvBearerToken+" sends 'Authorization: Bearer <token>'")
	fs.DurationVar(&fl.Timeout, "timeout", 0, "with a URL input, give up reading it after `DURATION` (e.g. 30s); exit 3")
}

// Opener opens inputs with one configuration. Build it with Flags.Opener.
type Opener struct {
	// Stdin is read for the name "-".
	Stdin io.Reader
	// HTTP is the transport configuration for URL inputs: the headers of
	// --header and the environment, and tuning (tests shorten retries).
	HTTP httprange.Options
	// ProgramOptions tunes how a program is read (pte.OpenOptions): the
	// flatbuffer region limit, MaxProgramSize or EnvMaxProgramSize; the
	// views set Truncated, to show a truncated file's structure.
	ProgramOptions pte.OpenOptions
}

// MaxProgramSize is the flatbuffer region limit the commands apply by
// default, 1 GiB: a header can claim up to 2 GiB, and reading a claim that
// large from a sparse file costs 2 GiB of memory for nothing (issue 11).
// Real programs keep large payloads in segments, which are not read into
// memory.
const MaxProgramSize = 1 << 30

// EnvMaxProgramSize names the environment variable that overrides
// MaxProgramSize: a size as compilespec.ParseSize reads it ("2GiB").
const EnvMaxProgramSize = "PTEKIT_MAX_PROGRAM_SIZE"

// programLimits returns the OpenOptions of MaxProgramSize or of
// EnvMaxProgramSize when getenv gives it.
func programLimits(getenv func(string) string) (pte.OpenOptions, error) {
	v := getenv(EnvMaxProgramSize)
	if v == "" {
		return pte.OpenOptions{MaxProgramSize: MaxProgramSize}, nil
	}
	n, auto, err := compilespec.ParseSize(v)
	if err == nil && (auto || n <= 0) {
		err = fmt.Errorf("want a size above 0 such as 2GiB")
	}
	if err != nil {
		return pte.OpenOptions{}, fmt.Errorf("%s: %v", EnvMaxProgramSize, err)
	}
	return pte.OpenOptions{MaxProgramSize: n}, nil
}

// ExplainLimit adds to an error from opening a program how to raise the
// limit, when the limit is what failed; other errors are returned as they
// are.
func ExplainLimit(err error) error {
	var le *pte.ProgramLimitError
	if !errors.As(err, &le) {
		return err
	}
	return fmt.Errorf("%w (the program's flatbuffer region of %s is over the limit of %s; set %s=%s to read it)",
		err, compilespec.FormatSizeApprox(le.Size), compilespec.FormatSizeApprox(le.Limit), EnvMaxProgramSize, compilespec.FormatSize(int64(min(le.Size, 1<<31))))
}

// Opener returns an Opener for these flags, with the environment's
// credentials (httprange.HeaderFromEnv; getenv is os.Getenv when nil). Its
// errors name a header by position and name, never by value.
func (fl *Flags) Opener(stdin io.Reader, getenv func(string) string) (*Opener, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	limits, err := programLimits(getenv)
	if err != nil {
		return nil, err
	}
	h, err := httprange.HeaderFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	extra, err := httprange.ParseHeader(fl.Header...)
	if err != nil {
		return nil, fmt.Errorf("--header: %w", err)
	}
	for k, v := range extra {
		h[k] = v // --header wins over the environment
	}
	return &Opener{Stdin: stdin, HTTP: httprange.Options{Header: h, BlockSize: BlockSize, ReadAhead: ReadAhead}, ProgramOptions: limits}, nil
}

// ReadAhead is the commands' httprange read-ahead window for streams (a
// re-bake copying segments, --extract, --hash): half the default, which
// keeps a 2 GiB re-bake from a URL under 40 MiB of memory at loopback
// speed, where 8 MiB windows reach 60 MiB.
const ReadAhead = 4 << 20

// BlockSize is the commands' httprange block size, and so the size of the
// first request of a URL input. Half httprange's default: the flatbuffer
// of a program with 64 engines is about 15 KiB, and what the first block
// reads past it is segment data the views do not need (its engine), which
// would double what listing a program transfers.
const BlockSize = 16 << 10

// Context returns the context a command with these inputs runs under:
// cancelled by SIGINT or SIGTERM (atomicfile.NotifyInterrupt), with the
// --timeout deadline when one is given and an input is a URL. It governs
// every read of a URL input, not only its open.
func (fl *Flags) Context(parent context.Context, inputs ...string) (context.Context, func()) {
	ctx, stop := atomicfile.NotifyInterrupt(parent)
	ctx, cancel := fl.WithTimeout(ctx, inputs...)
	return ctx, func() { cancel(); stop() }
}

// WithTimeout returns parent with the --timeout deadline, if one is given
// and one of inputs is a URL (a local command is not timed); its cause is
// a *TimeoutError.
func (fl *Flags) WithTimeout(parent context.Context, inputs ...string) (context.Context, context.CancelFunc) {
	if fl.Timeout <= 0 || !slices.ContainsFunc(inputs, IsURL) {
		return context.WithCancel(parent)
	}
	return context.WithTimeoutCause(parent, fl.Timeout, &TimeoutError{fl.Timeout})
}

// TimeoutError is the cause of a context whose --timeout passed.
type TimeoutError struct{ Timeout time.Duration }

// Error says which deadline passed.
func (e *TimeoutError) Error() string { return fmt.Sprintf("--timeout %s passed", e.Timeout) }

// Is makes a TimeoutError match context.DeadlineExceeded.
func (e *TimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// IsURL reports whether name is an http:// or https:// URL rather than a
// path.
func IsURL(name string) bool { return httprange.IsURL(name) }

// Display returns name as messages and documents may show it: a URL
// without user information, query and fragment (presigned URLs carry
// credentials there), anything else as it is.
func Display(name string) string {
	if IsURL(name) {
		return httprange.Redact(name)
	}
	return name
}

// Program opens the program name: a path, "-" for standard input, or a
// URL. ctx governs every later read of a URL input; the caller must Close
// the File.
func (o *Opener) Program(ctx context.Context, name string) (*pte.File, error) {
	switch {
	case IsURL(name):
		f, err := pte.OpenURL(ctx, name, &pte.OpenURLOptions{HTTP: o.HTTP, OpenOptions: o.ProgramOptions})
		return f, ExplainLimit(err)
	case name == "-":
		data, err := o.readStdin()
		if err != nil {
			return nil, err
		}
		f, err := pte.NewFileWith(bytes.NewReader(data), int64(len(data)), &o.ProgramOptions)
		if err != nil {
			return nil, fmt.Errorf("<stdin>: %w", ExplainLimit(err))
		}
		return f, nil
	}
	// An undo record beside the file is never applied here (a viewer never
	// writes): UndoNotice tells the caller about it.
	f, err := pte.OpenWith(name, &o.ProgramOptions)
	return f, ExplainLimit(err)
}

// UndoNotice says, when an interrupted pteexport --in-place left its undo
// record beside the local file name, what lies there and that
// pteexport --recover applies it; "" when there is none, or name is a URL
// or standard input. It only looks (undorecord.Probe: an lstat, and the
// record's fixed header when there is one), and applies nothing: only
// pteexport --recover and --in-place do.
func UndoNotice(name string) string {
	if IsURL(name) || name == "-" {
		return ""
	}
	if n := undorecord.Probe(name); n != nil {
		return n.Message(name)
	}
	return ""
}

// Source is an input opened as bytes, for formats other than .pte.
type Source struct {
	io.ReaderAt
	// Size is the input's size in bytes.
	Size int64
	// Name is the input as Display shows it.
	Name   string
	closer io.Closer
}

// Close releases the input.
func (s *Source) Close() error {
	if s.closer != nil {
		return s.closer.Close()
	}
	return nil
}

// Open opens name as bytes: a file, standard input ("-", read into memory)
// or a URL (an *httprange.Reader, read lazily under ctx). The caller must
// Close the Source.
func (o *Opener) Open(ctx context.Context, name string) (*Source, error) {
	switch {
	case IsURL(name):
		r, err := httprange.Open(ctx, name, &o.HTTP)
		if err != nil {
			return nil, err
		}
		return &Source{ReaderAt: r, Size: r.Size(), Name: r.String(), closer: r}, nil
	case name == "-":
		data, err := o.readStdin()
		if err != nil {
			return nil, err
		}
		return &Source{ReaderAt: bytes.NewReader(data), Size: int64(len(data)), Name: "<stdin>"}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Source{ReaderAt: f, Size: st.Size(), Name: name, closer: f}, nil
}

func (o *Opener) readStdin() ([]byte, error) {
	stdin := o.Stdin
	if stdin == nil {
		stdin = bytes.NewReader(nil)
	}
	data, err := io.ReadAll(io.LimitReader(stdin, MaxStdin+1))
	if err != nil {
		return nil, fmt.Errorf("reading standard input: %w", err)
	}
	if len(data) > MaxStdin {
		return nil, fmt.Errorf("standard input holds more than %d bytes; pass a file name instead", int64(MaxStdin))
	}
	return data, nil
}

// ExitCode returns the exit status for a failure to read an input, and
// false when err is not an input failure the table below knows (the
// command then uses its own status):
//
//	130, 143  interrupted by SIGINT, SIGTERM
//	3         changed while reading, network error, truncated body, 5xx or
//	          429 after the retries, --timeout passed (ExitRetry)
//	1         not found, not authorized, no range support, 416, redirect
//	          refused, malformed response, another status (ExitFail)
func ExitCode(err error) (int, bool) {
	if ie := atomicfile.Interrupted(nil, err); ie != nil {
		return ie.ExitCode(), true
	}
	if isTimeout(err) {
		return ExitRetry, true
	}
	he, ok := errors.AsType[*httprange.Error](err)
	if !ok {
		return 0, false
	}
	if he.Temporary() {
		return ExitRetry, true
	}
	return ExitFail, true
}

// isTimeout reports whether err comes from a passed deadline (--timeout,
// whose cause the transport's errors carry, or another).
func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded)
}

// Hint returns " (hint: ...)" for an input failure that has one, "" when
// not: what to do about each kind of transport failure. It never repeats
// a URL or a header value.
func Hint(err error) string {
	if atomicfile.Interrupted(nil, err) != nil {
		return ""
	}
	if isTimeout(err) {
		return " (hint: the server was too slow; raise --timeout or try again)"
	}
	he, ok := errors.AsType[*httprange.Error](err)
	if !ok {
		return ""
	}
	h := ""
	switch he.Kind {
	case httprange.KindAuth:
		return "" // the message names the variable and the flag already
	case httprange.KindNotFound:
		h = "check the URL"
	case httprange.KindNoRangeSupport:
		h = "the server ignores Range requests; download the file and inspect it locally"
	case httprange.KindRangeNotSatisfiable:
		h = "the server refused a range inside the size it gave; it may be serving a changing object"
	case httprange.KindChanged:
		h = "the file was replaced on the server while it was read; run again"
	case httprange.KindRedirect:
		h = "too many redirects or one from https to http; pass the final URL"
	case httprange.KindNetwork, httprange.KindTruncated:
		h = "the connection failed after retries; run again"
	case httprange.KindBadResponse:
		h = "the server's answer contradicts the request; a proxy may be rewriting it"
	case httprange.KindStatus:
		if he.Status >= 500 || he.Status == http.StatusTooManyRequests {
			h = "the server is failing or busy; run again later"
		}
	case httprange.KindCanceled:
		return ""
	}
	if h == "" {
		return ""
	}
	return " (hint: " + h + ")"
}
