package input

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/httprange"
	"github.com/ptekit/ptekit/internal/atomicfile"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// TestExitCodeAndHint: every transport failure kind gets its documented
// status, and a hint where there is something to do.
func TestExitCodeAndHint(t *testing.T) {
	he := func(k httprange.Kind, status int, err error) error {
		return fmt.Errorf("reading: %w", &httprange.Error{Kind: k, URL: "http://h/p.pte", Status: status, Err: err})
	}
	cases := []struct {
		err  error
		code int
		hint string
	}{
		{he(httprange.KindAuth, 401, nil), 1, ""},
		{he(httprange.KindNotFound, 404, nil), 1, "check the URL"},
		{he(httprange.KindNoRangeSupport, 200, nil), 1, "ignores Range"},
		{he(httprange.KindRangeNotSatisfiable, 416, nil), 1, "refused a range"},
		{he(httprange.KindRedirect, 0, nil), 1, "redirects"},
		{he(httprange.KindBadResponse, 206, nil), 1, "proxy"},
		{he(httprange.KindStatus, 400, nil), 1, ""},
		{he(httprange.KindChanged, 412, nil), 3, "replaced on the server"},
		{he(httprange.KindNetwork, 0, nil), 3, "connection failed"},
		{he(httprange.KindTruncated, 206, nil), 3, "connection failed"},
		{he(httprange.KindStatus, 503, nil), 3, "failing or busy"},
		{he(httprange.KindStatus, 429, nil), 3, "failing or busy"},
		{he(httprange.KindUnreachable, 0, nil), 1, "retrying will not help"},
		{he(httprange.KindUnpinned, 0, nil), 1, "download the file"},
		{he(httprange.KindCanceled, 0, &TimeoutError{time.Second}), 3, "raise --timeout"},
		{he(httprange.KindCanceled, 0, &atomicfile.InterruptError{Signal: syscall.SIGINT}), 130, ""},
		{he(httprange.KindCanceled, 0, &atomicfile.InterruptError{Signal: syscall.SIGTERM}), 143, ""},
	}
	for _, c := range cases {
		code, ok := ExitCode(c.err)
		require.True(t, ok, c.err)
		require.Equal(t, c.code, code, c.err)
		h := Hint(c.err)
		if c.hint == "" {
			require.Empty(t, h, c.err)
		} else {
			require.Contains(t, h, c.hint, c.err)
			require.True(t, strings.HasPrefix(h, " (hint: ") && strings.HasSuffix(h, ")"), h)
		}
	}
	_, ok := ExitCode(os.ErrNotExist)
	require.False(t, ok)
	require.Empty(t, Hint(errors.New("other")))
}

// TestDisplay: URLs lose what may carry credentials; paths stay.
func TestDisplay(t *testing.T) {
	require.Equal(t, "https://h/a/p.pte", Display("https://user:pw@h/a/p.pte?X-Amz-Signature=s#f"))
	require.Equal(t, "dir/p.pte?x", Display("dir/p.pte?x"))
	require.Equal(t, "-", Display("-"))
}

// TestOpenerHeaders: --header wins over the environment; malformed values
// are refused without being shown.
func TestOpenerHeaders(t *testing.T) {
	env := map[string]string{httprange.EnvBearerToken: "envtok", httprange.EnvHeaders: "X-A: 1"}
	fl := Flags{Header: []string{"X-B: 2"}}
	o, err := fl.Opener(nil, func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, "Bearer envtok", o.HTTP.Header.Get("Authorization"))
	require.Equal(t, "1", o.HTTP.Header.Get("X-A"))
	require.Equal(t, "2", o.HTTP.Header.Get("X-B"))
	fl.Header = append(fl.Header, "Authorization: Bearer flagtok")
	o, err = fl.Opener(nil, func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, []string{"Bearer flagtok"}, o.HTTP.Header.Values("Authorization"))
	fl.Header = []string{"X-C: s3cr3t\x00"}
	_, err = fl.Opener(nil, func(string) string { return "" })
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cr3t")
}

// TestOpen: one function opens a path, standard input and a URL, as a
// program or as bytes, with the same result.
func TestOpen(t *testing.T) {
	data := testprog.Programs(t)["segment"]
	dir := t.TempDir()
	path := filepath.Join(dir, "p.pte")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	for _, name := range []string{path, "-", srv.URL + "/p.pte?sig=x"} {
		o := &Opener{Stdin: strings.NewReader(string(data))}
		f, err := o.Program(context.Background(), name)
		require.NoError(t, err, name)
		require.Equal(t, int64(len(data)), f.Size)
		require.NoError(t, f.Close())

		o.Stdin = strings.NewReader(string(data))
		s, err := o.Open(context.Background(), name)
		require.NoError(t, err, name)
		buf := make([]byte, len(data))
		_, err = s.ReadAt(buf, 0)
		require.NoError(t, err)
		require.Equal(t, data, buf)
		if name != "-" {
			require.Equal(t, Display(name), s.Name)
		}
		require.NoError(t, s.Close())
	}
	_, err := (&Opener{}).Program(context.Background(), srv.URL+"/missing.pte")
	code, ok := ExitCode(err)
	require.True(t, ok)
	require.Equal(t, ExitFail, code)
}

// TestOpenPipe: a named pipe (what a shell's <(...) gives) is read like
// standard input, as a program and as bytes, bounded the same way; it used
// to open as a 0-byte file.
func TestOpenPipe(t *testing.T) {
	data := testprog.Programs(t)["segment"]
	dir := t.TempDir()
	feed := func(name string, b []byte) {
		require.NoError(t, syscall.Mkfifo(name, 0o600))
		go func() {
			w, err := os.OpenFile(name, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			defer w.Close()
			w.Write(b)
		}()
	}
	o := &Opener{}
	p := filepath.Join(dir, "a")
	feed(p, data)
	f, err := o.Program(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), f.Size)
	require.NoError(t, f.Close())

	p = filepath.Join(dir, "b")
	feed(p, data)
	s, err := o.Open(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), s.Size)
	require.Equal(t, p, s.Name)
	require.NoError(t, s.Close())

	// Not a program: refused after its head, naming the pipe.
	p = filepath.Join(dir, "c")
	feed(p, bytes.Repeat([]byte("x"), 1<<20))
	_, err = o.Program(context.Background(), p)
	require.Error(t, err)
	require.Contains(t, err.Error(), p)
}

// TestContextTimeout: the --timeout deadline's cause is a TimeoutError,
// which the transport's errors carry.
func TestContextTimeout(t *testing.T) {
	fl := Flags{Timeout: 20 * time.Millisecond}
	ctx, stop := fl.Context(context.Background(), "p.pte")
	defer stop()
	require.NoError(t, context.Cause(ctx)) // no URL: no deadline
	ctx, stop = fl.Context(context.Background(), "p.pte", "http://h/p.pte")
	defer stop()
	<-ctx.Done()
	require.ErrorIs(t, context.Cause(ctx), context.DeadlineExceeded)
	var te *TimeoutError
	require.ErrorAs(t, context.Cause(ctx), &te)
}

// endless reads head and then zeros without end, counting what is read.
type endless struct {
	head []byte
	n    int64
}

func (e *endless) Read(p []byte) (int, error) {
	k := copy(p, e.head)
	e.head = e.head[k:]
	clear(p[k:])
	e.n += int64(len(p))
	return len(p), nil
}

// TestStdinBounded: standard input is checked by its first bytes before
// more is read, and never read past the program-size limit: endless zeros,
// a .ptd or .bpte given as a program, and a header stating more than the
// limit fail having read pte.HeadSize bytes; endless bytes after a head
// without an extended header (the region is the whole input) fail having
// read the limit; a valid program followed by endless bytes opens, having
// read the size its header states; every test program still opens.
func TestStdinBounded(t *testing.T) {
	progs := testprog.Programs(t)
	seg := progs["segment"]
	end, err := pte.CheckHead(seg[:pte.HeadSize], nil)
	require.NoError(t, err)
	require.Positive(t, end)
	ptdHead := bytes.Clone(seg[:pte.HeadSize])
	copy(ptdHead[4:8], ptd.Identifier)
	bpteHead := bytes.Clone(seg[:pte.HeadSize])
	copy(bpteHead[4:8], "BP08")
	noHeader := []byte("\x00\x00\x00\x00ET12") // the region is the whole input

	const limit = 1 << 20
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		in       *endless
		opts     pte.OpenOptions
		maxRead  int64
		message  string
		asSource bool
	}{
		{"zeros", &endless{}, pte.OpenOptions{}, pte.HeadSize, "not an ExecuTorch program", false},
		{"zeros as bytes", &endless{}, pte.OpenOptions{}, pte.HeadSize, "not an ExecuTorch program", true},
		{".ptd as a program", &endless{head: ptdHead}, pte.OpenOptions{}, pte.HeadSize, ".ptd", false},
		{".bpte", &endless{head: bpteHead}, pte.OpenOptions{}, pte.HeadSize, ".bpte", false},
		{"stated end past the limit", &endless{head: seg[:pte.HeadSize]}, pte.OpenOptions{MaxProgramSize: end - 1}, pte.HeadSize, EnvMaxProgramSize, false},
		{"no extended header, endless", &endless{head: noHeader}, pte.OpenOptions{MaxProgramSize: limit}, limit + 1, EnvMaxProgramSize, false},
		{".ptd, endless", &endless{head: ptdHead}, pte.OpenOptions{MaxProgramSize: limit}, limit + 1, EnvMaxProgramSize, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := &Opener{Stdin: c.in, ProgramOptions: c.opts}
			if c.asSource {
				_, err = o.Open(ctx, "-")
			} else {
				_, err = o.Program(ctx, "-")
			}
			require.Error(t, err)
			t.Log(err)
			require.Contains(t, err.Error(), c.message)
			require.True(t, strings.HasPrefix(err.Error(), "<stdin>: "), err)
			require.LessOrEqual(t, c.in.n, c.maxRead, "bytes read from standard input")
		})
	}

	in := &endless{head: seg}
	f, err := (&Opener{Stdin: in}).Program(ctx, "-")
	require.NoError(t, err)
	require.Equal(t, int64(len(seg)), f.Size)
	require.Equal(t, int64(len(seg)), in.n, "bytes read from standard input")

	for name, data := range progs {
		if _, err := pte.NewFile(bytes.NewReader(data), int64(len(data))); err != nil {
			continue // not an openable program
		}
		f, err := (&Opener{Stdin: bytes.NewReader(data)}).Program(ctx, "-")
		require.NoError(t, err, name)
		require.Equal(t, int64(len(data)), f.Size, name)
		require.NoError(t, f.Close())
	}
}

// TestTimeoutReplacesLimits: without --timeout the transport keeps
// httprange's per-request limits (zero here: the defaults); with it, the
// limits on waiting for headers and body data are --timeout.
func TestTimeoutReplacesLimits(t *testing.T) {
	getenv := func(string) string { return "" }
	o, err := (&Flags{}).Opener(nil, getenv)
	require.NoError(t, err)
	require.Zero(t, o.HTTP.ResponseHeaderTimeout)
	require.Zero(t, o.HTTP.IdleTimeout)
	o, err = (&Flags{Timeout: 5 * time.Minute}).Opener(nil, getenv)
	require.NoError(t, err)
	require.Equal(t, 5*time.Minute, o.HTTP.ResponseHeaderTimeout)
	require.Equal(t, 5*time.Minute, o.HTTP.IdleTimeout)
}

// TestStdinChunks: standard input over several chunks reads back as it
// was, at any offset, across chunk boundaries and at its end.
func TestStdinChunks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.pte")
	testprog.WriteEngines(t, path, 3, 3<<20) // over two chunks
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(data), 2*chunkSize)
	s, err := (&Opener{Stdin: bytes.NewReader(data)}).Open(context.Background(), "-")
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), s.Size)
	for _, off := range []int{0, chunkSize - 3, 2*chunkSize - 1, len(data) - 5} {
		p := make([]byte, min(10, len(data)-off))
		n, err := s.ReadAt(p, int64(off))
		require.NoError(t, err, off)
		require.Equal(t, data[off:off+n], p, off)
	}
	all := make([]byte, len(data)+1)
	n, err := s.ReadAt(all, 0)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, data, all[:n])
}

// TestExplainLimitSuggestsAPastableSetting checks that the setting
// ExplainLimit suggests is one shell word that, read back as
// PTEKIT_MAX_PROGRAM_SIZE, admits the program.
func TestExplainLimitSuggestsAPastableSetting(t *testing.T) {
	for _, size := range []uint64{2264, 3 << 20, 1<<20 + 1, 5 << 30} {
		le := &pte.ProgramLimitError{Size: size, Limit: 1024, Err: &pte.FormatError{Msg: "over the limit"}}
		msg := ExplainLimit(le).Error()
		_, after, ok := strings.Cut(msg, EnvMaxProgramSize+"=")
		if !ok {
			t.Fatalf("size %d: no setting suggested in %q", size, msg)
		}
		word, _, _ := strings.Cut(after, " ")
		opts, err := programLimits(func(k string) string {
			if k == EnvMaxProgramSize {
				return word
			}
			return ""
		})
		if err != nil || uint64(opts.MaxProgramSize) < min(size, 1<<31) {
			t.Errorf("size %d: suggested %s=%s (in %q) reads back as %d, %v", size, EnvMaxProgramSize, word, msg, opts.MaxProgramSize, err)
		}
	}
}
