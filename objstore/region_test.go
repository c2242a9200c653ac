package objstore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/httprange"
	"github.com/ptekit/ptekit/objstore"
)

// TestRegionDiscovered: without a configured region, the bucket's region
// is the one the store names in x-amz-bucket-region (to an unsigned HEAD
// of the bucket), and requests are signed for it; a store that names none
// gets us-east-1. The endpoint comes from AWS_ENDPOINT_URL when the
// S3-specific variable is unset, and the bucket is addressed path-style.
func TestRegionDiscovered(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	region := "eu-west-3"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodHead && r.URL.Path == "/bucket/" {
			if region != "" {
				w.Header().Set("X-Amz-Bucket-Region", region)
			}
			w.WriteHeader(http.StatusForbidden)
			return
		}
		auth = append(auth, r.Header.Get("Authorization"))
		require.Equal(t, "/bucket/key.pte", r.URL.Path)
		w.Header().Set("ETag", `"abc"`)
		w.Header().Set("Content-Range", "bytes 0-3/4")
		w.WriteHeader(http.StatusPartialContent)
		w.Write([]byte("ET12"))
	}))
	defer srv.Close()
	for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ENDPOINT_URL_S3"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	for _, want := range []string{"eu-west-3", "us-east-1"} {
		mu.Lock()
		region = strings.TrimPrefix(want, "us-east-1")
		auth = nil
		mu.Unlock()
		r, err := objstore.Open(context.Background(), "s3://bucket/key.pte", &httprange.Options{BlockSize: 4})
		require.NoError(t, err)
		r.Close()
		mu.Lock()
		require.NotEmpty(t, auth)
		require.Contains(t, auth[0], "/"+want+"/s3/aws4_request", auth[0])
		mu.Unlock()
	}
}

// TestWebIdentityCredentials: with AWS_WEB_IDENTITY_TOKEN_FILE and
// AWS_ROLE_ARN (what EKS gives a pod), the SDK's chain trades the token
// at STS (here a fake one, through AWS_ENDPOINT_URL_STS) for temporary
// credentials, and the requests are signed with them and carry the
// session token.
func TestWebIdentityCredentials(t *testing.T) {
	var mu sync.Mutex
	var stsCalls int
	var got http.Header
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		mu.Lock()
		stsCalls++
		mu.Unlock()
		require.Equal(t, "AssumeRoleWithWebIdentity", r.Form.Get("Action"))
		require.Equal(t, "the-web-identity-token", r.Form.Get("WebIdentityToken"))
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult>`+
			`<Credentials><AccessKeyId>ASIAFROMSTS</AccessKeyId><SecretAccessKey>sts-secret</SecretAccessKey><SessionToken>sts-session-token</SessionToken>`+
			`<Expiration>%s</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`,
			time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}))
	defer sts.Close()
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
		w.Header().Set("ETag", `"abc"`)
		w.Header().Set("Content-Range", "bytes 0-3/4")
		w.WriteHeader(http.StatusPartialContent)
		w.Write([]byte("ET12"))
	}))
	defer store.Close()
	token := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(token, []byte("the-web-identity-token"), 0o600))
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ENDPOINT_URL_S3", store.URL)
	t.Setenv("AWS_ENDPOINT_URL_STS", sts.URL)
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", token)
	t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/ptekit")
	r, err := objstore.Open(context.Background(), "s3://bucket/key.pte", &httprange.Options{BlockSize: 4})
	require.NoError(t, err)
	r.Close()
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, stsCalls)
	require.Contains(t, got.Get("Authorization"), "Credential=ASIAFROMSTS/")
	require.Equal(t, "sts-session-token", got.Get("X-Amz-Security-Token"))
}
