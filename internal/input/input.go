// Package input opens the inputs of ptekit's commands: a file path, "-"
// for standard input, an http:// or https:// URL read with range
// requests (package httprange), or an s3://bucket/key location read the
// same way with requests signed by package objstore. Both commands open
// every input through Open, so a URL or an s3:// location is accepted
// wherever a path is, with the same flags (--header, --timeout), the same
// credentials from the environment, and the same exit codes and hints for
// transport failures.
package input

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/httprange"
	"github.com/ptekit/ptekit/internal/atomicfile"
	"github.com/ptekit/ptekit/internal/undorecord"
	"github.com/ptekit/ptekit/objstore"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

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
	// URL inputs, which also replaces httprange's 30 s limits on waiting
	// for a response's headers and for more of its body; 0 means none
	// (the per-request limits still apply).
	Timeout time.Duration
}

// AddFlags registers --header and --timeout on fs.
func (fl *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&fl.Header, "header", nil, "with a URL input, send the request header `'Name: value'` (repeatable); "+
		"$"+httprange.EnvBearerToken+" sends 'Authorization: Bearer <token>'")
	fs.DurationVar(&fl.Timeout, "timeout", 0, "with a URL input, give up reading it after `DURATION` (e.g. 30s), and wait for the server's "+
		"headers or more data up to it instead of 30s; exit 3")
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
// are. The suggested setting has no space ("2.264KB"), so that it can be
// pasted into a shell as it is.
func ExplainLimit(err error) error {
	le, ok := errors.AsType[*pte.ProgramLimitError](err)
	if !ok {
		return err
	}
	return fmt.Errorf("%w (the program's flatbuffer region of %s is over the limit of %s; set %s=%s to read it)",
		err, compilespec.FormatSizeApprox(le.Size), compilespec.FormatSizeApprox(le.Limit), EnvMaxProgramSize, strings.ReplaceAll(compilespec.FormatSize(int64(min(le.Size, 1<<31))), " ", ""))
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
	maps.Copy(h, extra) // --header wins over the environment
	o := &Opener{Stdin: stdin, HTTP: httprange.Options{Header: h, BlockSize: BlockSize, ReadAhead: ReadAhead}, ProgramOptions: limits}
	if fl.Timeout > 0 {
		// One knob: --timeout bounds the whole command and replaces the
		// per-request limits on waiting for a server (30 s by default).
		o.HTTP.ResponseHeaderTimeout, o.HTTP.IdleTimeout = fl.Timeout, fl.Timeout
	}
	return o, nil
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

// IsURL reports whether name is an http:// or https:// URL or an
// s3://bucket/key location rather than a path.
func IsURL(name string) bool { return httprange.IsURL(name) || objstore.IsS3(name) }

// Display returns name as messages and documents may show it: a URL
// without user information, query and fragment (presigned URLs carry
// credentials there), anything else as it is.
func Display(name string) string {
	if httprange.IsURL(name) { // no credential goes in an s3:// location
		return httprange.Redact(name)
	}
	return name
}

// Program opens the program name: a path, "-" for standard input, or a
// URL. ctx governs every later read of a URL input; the caller must Close
// the File.
func (o *Opener) Program(ctx context.Context, name string) (*pte.File, error) {
	if IsURL(name) {
		f, err := pte.OpenURL(ctx, name, &pte.OpenURLOptions{HTTP: o.HTTP, OpenOptions: o.ProgramOptions})
		return f, ExplainLimit(err)
	}
	if data, shown, ok, err := o.inMemory(ctx, name, func(head []byte) (int64, error) { return pte.CheckHead(head, &o.ProgramOptions) }); ok {
		if err != nil {
			return nil, err
		}
		f, err := pte.NewFileWith(data, data.size, &o.ProgramOptions)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", shown, ExplainLimit(err))
		}
		return f, nil
	}
	// An undo record beside the file is never applied here (a viewer never
	// writes): UndoNotice tells the caller about it.
	f, err := pte.OpenWith(name, &o.ProgramOptions)
	return f, ExplainLimit(err)
}

// inMemory reads name into memory, bounded and its head checked first
// (readStream), when it is "-", standard input (shown as <stdin>), or names
// a pipe, a socket or a device: something with no size to read at
// offsets, such as the /dev/fd/N a shell's <(...) gives. ok is false for
// anything else (a regular file, a directory, a name that does not
// exist), which the caller opens as a file. shown is how messages name
// the input; its errors name it already. It ends when ctx is done, even
// while the writer stalls or open(2) waits for a named pipe's writer
// (untilDone).
func (o *Opener) inMemory(ctx context.Context, name string, check func(head []byte) (int64, error)) (data *chunks, shown string, ok bool, err error) {
	shown, what := name, name
	open := func() (io.ReadCloser, error) { return os.Open(name) }
	if name == "-" {
		stdin := o.Stdin
		if stdin == nil {
			stdin = bytes.NewReader(nil)
		}
		shown, what = "<stdin>", "standard input"
		open = func() (io.ReadCloser, error) { return io.NopCloser(stdin), nil }
	} else if st, err := os.Stat(name); err != nil || st.Mode().IsRegular() || st.IsDir() {
		return nil, name, false, nil
	}
	data, err = untilDone(ctx, func() (*chunks, error) {
		r, err := open()
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return o.readStream(ctx, r, what, check)
	})
	if _, isPath := err.(*os.PathError); isPath {
		return nil, shown, true, err // names the pipe already
	}
	if err != nil {
		return nil, shown, true, fmt.Errorf("%s: %w", shown, ExplainLimit(err))
	}
	return data, shown, true, nil
}

// untilDone returns what read returns, or ctx's cause as soon as ctx is
// done, whichever comes first. The commands catch SIGINT and SIGTERM
// (Flags.Context), so a read of a pipe that did not watch ctx could not
// be interrupted at all: open(2) of a named pipe waits for a writer, and
// read(2) for the writer's next bytes, without end. read runs in the
// background; one abandoned stays blocked there until the pipe's writer
// comes or goes (a command exits first), and its result is dropped.
func untilDone(ctx context.Context, read func() (*chunks, error)) (*chunks, error) {
	type result struct {
		data *chunks
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		data, err := read()
		ch <- result{data, err}
	}()
	select {
	case r := <-ch:
		return r.data, r.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// ctxReader reads r until ctx is done, then fails with ctx's cause: a
// read abandoned by untilDone stops at its next read.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := context.Cause(c.ctx); err != nil {
		return 0, err
	}
	return c.r.Read(p)
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

// Open opens name as bytes: a file, standard input ("-", a .pte or .ptd
// file, read into memory as readStream bounds it) or a URL (an *httprange.Reader, read lazily under ctx). The caller must
// Close the Source.
func (o *Opener) Open(ctx context.Context, name string) (*Source, error) {
	if IsURL(name) {
		r, err := objstore.OpenURL(ctx, name, &o.HTTP)
		if err != nil {
			return nil, err
		}
		return &Source{ReaderAt: r, Size: r.Size(), Name: r.String(), closer: r}, nil
	}
	// Standard input holds a .ptd file, or a program as pte.CheckHead checks it.
	checkHead := func(head []byte) (int64, error) {
		if len(head) >= 8 && string(head[4:8]) == ptd.Identifier {
			return -1, nil
		}
		return pte.CheckHead(head, &o.ProgramOptions)
	}
	if data, shown, ok, err := o.inMemory(ctx, name, checkHead); ok {
		if err != nil {
			return nil, err
		}
		return &Source{ReaderAt: data, Size: data.size, Name: shown}, nil
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

// StdinLimitError reports standard input larger than the limit on what is
// read of it (Size is -1 when only its length showed it).
type StdinLimitError struct {
	Size, Limit int64
}

// Error says what was too large and how to raise the limit.
func (e *StdinLimitError) Error() string {
	what := "standard input holds more than " + compilespec.FormatSize(e.Limit)
	raise := 2 * e.Limit
	if e.Size >= 0 {
		what = "the program on standard input states it is " + compilespec.FormatSize(e.Size) + ", more than " + compilespec.FormatSize(e.Limit)
		raise = e.Size
	}
	return fmt.Sprintf("%s, the most read from standard input (it is held in memory; %s sets the limit): pass a file name instead, or set %s=%q",
		what, EnvMaxProgramSize, EnvMaxProgramSize, compilespec.FormatSize(raise))
}

// readStream reads a stream (standard input, a pipe) into memory,
// bounded, what naming it in errors: its first bytes (pte.HeadSize)
// first, which check refuses at once when they are not those of the
// expected format, or when the end they state is past the limit; then the
// rest, up to that end when the head states one (what follows is not
// read), else up to the program-size limit in all. Endless input of the wrong
// kind costs HeadSize bytes; after a program's head, the program's stated
// size, or the limit when the head states none. It stops reading once ctx
// is done.
func (o *Opener) readStream(ctx context.Context, stdin io.Reader, what string, check func(head []byte) (int64, error)) (*chunks, error) {
	stdin = ctxReader{ctx, stdin}
	// The program-size limit bounds the whole input, segments included,
	// since it is all held in memory.
	limit := o.ProgramOptions.MaxProgramSize
	if limit <= 0 {
		limit = MaxProgramSize
	}
	head := make([]byte, pte.HeadSize)
	k, err := io.ReadFull(stdin, head)
	head = head[:k]
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	end, err := check(head)
	if err != nil {
		return nil, err
	}
	if end > limit {
		return nil, &StdinLimitError{Size: end, Limit: limit}
	}
	upTo := limit + 1
	if end >= 0 {
		// The header says where the program ends: nothing past it is
		// part of the program, and none of it is read.
		upTo = max(end, int64(k))
	}
	data := &chunks{}
	if err := data.readFrom(io.MultiReader(bytes.NewReader(head), stdin), upTo); err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	if data.size > limit {
		return nil, &StdinLimitError{Size: -1, Limit: limit}
	}
	return data, nil
}

// chunkSize is the unit in which standard input is held.
const chunkSize = 4 << 20

// chunks is standard input held in memory in chunks of chunkSize bytes:
// reading it costs what it holds plus at most one chunk, never the copy
// that growing one buffer by doubling makes.
type chunks struct {
	c    [][]byte
	size int64
}

// readFrom reads r until io.EOF or until n bytes are held.
func (c *chunks) readFrom(r io.Reader, n int64) error {
	for c.size < n {
		buf := make([]byte, min(chunkSize, n-c.size))
		k, err := io.ReadFull(r, buf)
		if k > 0 {
			c.c = append(c.c, buf[:k])
			c.size += int64(k)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ReadAt implements io.ReaderAt.
func (c *chunks) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("standard input: ReadAt at negative offset %d", off)
	}
	n := 0
	for n < len(p) && off < c.size {
		// Every chunk but the last is chunkSize bytes.
		k := copy(p[n:], c.c[off/chunkSize][off%chunkSize:])
		n += k
		off += int64(k)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// ExitCode returns the exit status for a failure to read an input, and
// false when err is not an input failure the table below knows (the
// command then uses its own status):
//
//	130, 143  interrupted by SIGINT, SIGTERM
//	3         changed while reading, network error, truncated body, 5xx or
//	          429 after the retries, --timeout passed (ExitRetry)
//	1         not found, not authorized, no range support, 416, redirect
//	          refused, malformed response, another status, unknown host,
//	          no TLS or an untrusted certificate, no strong validator
//	          where one is required (ExitFail)
func ExitCode(err error) (int, bool) {
	if ie := atomicfile.Interrupted(nil, err); ie != nil {
		return ie.ExitCode(), true
	}
	if errors.Is(err, context.DeadlineExceeded) { // --timeout's, or another deadline
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

// Hint returns " (hint: ...)" for an input failure that has one, "" when
// not: what to do about each kind of transport failure. It never repeats
// a URL or a header value.
func Hint(err error) string {
	if atomicfile.Interrupted(nil, err) != nil {
		return ""
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return " (hint: the server was too slow; raise --timeout or try again)"
	}
	he, ok := errors.AsType[*httprange.Error](err)
	if !ok {
		return ""
	}
	h := kindHints[he.Kind] // none for KindAuth: the message names the variable and the flag already
	switch {
	case (he.Kind == httprange.KindNetwork || he.Kind == httprange.KindTruncated) && he.Timeout():
		h = "the server stopped answering; run again, or raise the limit with --timeout"
	case he.Kind == httprange.KindStatus && (he.Status >= 500 || he.Status == http.StatusTooManyRequests):
		h = "the server is failing or busy; run again later"
	}
	if h == "" {
		return ""
	}
	return " (hint: " + h + ")"
}

// kindHints are the hints of the transport failures whose hint depends on
// their kind alone.
var kindHints = map[httprange.Kind]string{
	httprange.KindNotFound:            "check the URL",
	httprange.KindNoRangeSupport:      "the server ignores Range requests; download the file and inspect it locally",
	httprange.KindRangeNotSatisfiable: "the server refused a range inside the size it gave; it may be serving a changing object",
	httprange.KindChanged:             "the file was replaced on the server while it was read; run again",
	httprange.KindRedirect:            "too many redirects or one from https to http; pass the final URL",
	httprange.KindNetwork:             "the connection failed after retries; run again",
	httprange.KindTruncated:           "the connection failed after retries; run again",
	httprange.KindUnreachable:         "retrying will not help: check the URL's host name and scheme (http or https) and that the server's certificate is trusted",
	httprange.KindUnpinned:            "download the file (one request cannot mix versions) and use the local copy",
	httprange.KindBadResponse:         "the server's answer contradicts the request; a proxy may be rewriting it",
}
