package objstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/httprange"
	"github.com/ptekit/ptekit/internal/s3test"
	"github.com/ptekit/ptekit/objstore"
)

// programsStore starts a test store (with opts), points the environment's
// endpoint and credentials at it, and makes its bucket "programs".
func programsStore(t *testing.T, opts ...s3test.Option) *s3test.Server {
	t.Helper()
	srv := s3test.Start(t, opts...)
	srv.Setenv(t)
	srv.Bucket(t, "programs")
	return srv
}

// object writes n random bytes to a file and returns its path and bytes.
func object(t *testing.T, n int, seed uint64) (string, []byte) {
	data := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	p := filepath.Join(t.TempDir(), "obj")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return p, data
}

// TestReadSigned: an object read through httprange with signed requests
// comes back whole and exact, in a few requests, named by its s3://
// location, with a key that needs escaping.
func TestReadSigned(t *testing.T) {
	srv := programsStore(t)
	path, data := object(t, 3<<20+17, 1)
	loc := srv.Put(t, "programs", "dir/a b+c.pte", path)

	srv.Reset()
	r, err := objstore.Open(context.Background(), loc, &httprange.Options{BlockSize: 16 << 10})
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, int64(len(data)), r.Size())
	require.True(t, r.Pinned(), "S3 gives a strong ETag")
	require.Equal(t, loc, r.String())
	got := make([]byte, len(data))
	_, err = r.ReadAt(got, 0)
	require.NoError(t, err)
	require.Equal(t, data, got)
	n, moved := srv.Moved()
	require.LessOrEqual(t, moved, int64(len(data))+16<<10, "bytes moved")
	reqs := srv.Requests()
	require.Greater(t, len(reqs), 1)
	for i, req := range reqs {
		require.Equal(t, "GET", req.Method)
		require.Contains(t, req.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential="+srv.AccessKey+"/")
		if i > 0 {
			require.NotEmpty(t, req.Header.Get("If-Match"), "every read after the first is pinned by ETag")
		}
	}
	t.Logf("%d requests, %d bytes", n, moved)

	// A Prefetch of scattered ranges (a multi-range request over HTTP)
	// reaches the store as single ranges only.
	srv.Reset()
	r2, err := objstore.Open(context.Background(), loc, &httprange.Options{BlockSize: 4 << 10})
	require.NoError(t, err)
	defer r2.Close()
	require.NoError(t, r2.Prefetch(context.Background(), []httprange.Range{{Off: 100 << 10, Len: 10}, {Off: 2 << 20, Len: 10}}))
	for _, req := range srv.Requests() {
		require.NotContains(t, req.Header.Get("Range"), ",")
		require.Less(t, req.Out, int64(64<<10))
	}
}

// TestReadPinned: an object replaced while it is read fails the next read
// with KindChanged instead of mixing versions.
func TestReadPinned(t *testing.T) {
	srv := programsStore(t)
	path, data := object(t, 1<<20, 2)
	loc := srv.Put(t, "programs", "p.pte", path)
	r, err := objstore.Open(context.Background(), loc, &httprange.Options{BlockSize: 4 << 10, ReadAhead: -1})
	require.NoError(t, err)
	defer r.Close()
	other, _ := object(t, 1<<20, 3)
	srv.Put(t, "programs", "p.pte", other)
	_, err = r.ReadAt(make([]byte, 10), int64(len(data))-10)
	var he *httprange.Error
	require.ErrorAs(t, err, &he)
	require.Equal(t, httprange.KindChanged, he.Kind, "%v", err)
}

// TestReadNoCredentialLeaks: a wrong secret, a missing object and a
// missing bucket fail with errors that name the location and never the
// secret, the session token or a signature.
func TestReadNoCredentialLeaks(t *testing.T) {
	srv := programsStore(t)
	path, _ := object(t, 1000, 4)
	loc := srv.Put(t, "programs", "p.pte", path)
	opts := &httprange.Options{MaxRetries: -1}

	_, err := objstore.Open(context.Background(), "s3://programs/missing.pte", opts)
	require.Error(t, err)
	require.Contains(t, err.Error(), "s3://programs/missing.pte")
	var he *httprange.Error
	require.ErrorAs(t, err, &he)
	require.Equal(t, httprange.KindNotFound, he.Kind, "%v", err)

	token := "ptekit-session-token-" + strings.Repeat("x", 20)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-"+srv.SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", token)
	srv.Reset()
	_, err = objstore.Open(context.Background(), loc, opts)
	require.Error(t, err)
	msg := err.Error()
	require.Contains(t, msg, loc)
	require.Contains(t, msg, "AWS_PROFILE", "the hint names the AWS credentials, not a bearer token")
	require.NotContains(t, msg, srv.SecretKey)
	require.NotContains(t, msg, token)
	for _, req := range srv.Requests() {
		sig := req.Header.Get("Authorization")
		i := strings.Index(sig, "Signature=")
		require.Positive(t, i, sig)
		require.NotContains(t, msg, sig[i+len("Signature="):])
	}
	t.Log(msg)
}

// TestVersionPinned: in a versioned bucket, the version id of the first
// answer is asked for in every later request, so a replaced object is
// still read as the version that was opened.
func TestVersionPinned(t *testing.T) {
	srv := programsStore(t, s3test.Versioned())
	_, err := srv.Client().PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{
		Bucket: aws.String("programs"), VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}})
	require.NoError(t, err)
	path, data := object(t, 1<<20, 5)
	loc := srv.Put(t, "programs", "p.pte", path)
	r, err := objstore.Open(context.Background(), loc, &httprange.Options{BlockSize: 4 << 10, ReadAhead: -1})
	require.NoError(t, err)
	defer r.Close()
	other, _ := object(t, 1<<20, 6)
	srv.Put(t, "programs", "p.pte", other)
	srv.Reset()
	got := make([]byte, 4096)
	_, err = r.ReadAt(got, 512<<10)
	require.NoError(t, err)
	require.Equal(t, data[512<<10:512<<10+4096], got)
	reqs := srv.Requests()
	require.NotEmpty(t, reqs)
	require.Contains(t, reqs[0].Query, "versionId=")
}

// TestProfileAndConfigFile: credentials from a shared credentials file's
// profile (AWS_PROFILE), and the endpoint and region from the shared
// config file's profile, as the AWS CLI reads them.
func TestProfileAndConfigFile(t *testing.T) {
	srv := programsStore(t)
	path, data := object(t, 5000, 7)
	loc := srv.Put(t, "programs", "p.pte", path)
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	require.NoError(t, os.WriteFile(creds, []byte("[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing\n\n[ptekit]\naws_access_key_id = "+
		srv.AccessKey+"\naws_secret_access_key = "+srv.SecretKey+"\n"), 0o600))
	cfg := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(cfg, []byte("[default]\nregion = "+s3test.Region+"\nendpoint_url = "+srv.Endpoint+"\n\n"+
		"[profile ptekit]\nregion = "+s3test.Region+"\nendpoint_url = "+srv.Endpoint+"\n"), 0o600))
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ENDPOINT_URL_S3"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	t.Setenv("AWS_CONFIG_FILE", cfg)
	t.Setenv("AWS_PROFILE", "ptekit")
	r, err := objstore.Open(context.Background(), loc, nil)
	require.NoError(t, err)
	defer r.Close()
	got := make([]byte, len(data))
	_, err = r.ReadAt(got, 0)
	require.NoError(t, err)
	require.Equal(t, data, got)

	t.Setenv("AWS_PROFILE", "default")
	_, err = objstore.Open(context.Background(), loc, &httprange.Options{MaxRetries: -1})
	require.Error(t, err, "the default profile's made-up keys are refused")
	var he *httprange.Error
	require.ErrorAs(t, err, &he)
	require.Equal(t, httprange.KindAuth, he.Kind, "%v", err)
}

// TestNoCredentials: with no credentials anywhere (no variables, no
// files, no instance metadata) opening fails at once, saying what to set,
// and not as a transport failure worth retrying.
func TestNoCredentials(t *testing.T) {
	srv := s3test.Start(t)
	srv.Setenv(t)
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	_, err := objstore.Open(context.Background(), "s3://programs/p.pte", nil)
	require.ErrorContains(t, err, "no AWS credentials found")
	require.ErrorContains(t, err, "s3://programs/p.pte")
	var he *httprange.Error
	require.False(t, errors.As(err, &he), "reported as a transport failure: %v", err)
	require.Empty(t, srv.Requests(), "a request was sent without credentials")
}

// TestContainerCredentials: credentials from a container credentials
// endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI, what ECS and EKS Pod
// Identity give), fetched once by the SDK's chain and used to sign.
func TestContainerCredentials(t *testing.T) {
	srv := programsStore(t)
	path, data := object(t, 5000, 11)
	loc := srv.Put(t, "programs", "p.pte", path)
	var asked atomic.Int64
	creds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"AccessKeyId": %q, "SecretAccessKey": %q, "Expiration": %q}`,
			srv.AccessKey, srv.SecretKey, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}))
	defer creds.Close()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", creds.URL+"/creds")
	r, err := objstore.Open(context.Background(), loc, &httprange.Options{BlockSize: 1024, ReadAhead: -1})
	require.NoError(t, err)
	defer r.Close()
	got := make([]byte, len(data))
	_, err = r.ReadAt(got, 0)
	require.NoError(t, err)
	require.Equal(t, data, got)
	require.Equal(t, int64(1), asked.Load(), "the credentials are fetched once")
}
