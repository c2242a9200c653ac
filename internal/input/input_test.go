package input

import (
	"context"
	"errors"
	"fmt"
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
