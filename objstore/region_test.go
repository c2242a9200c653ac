package objstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

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
