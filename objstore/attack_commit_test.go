package objstore_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/s3test"
	"github.com/ptekit/ptekit/objstore"
)

// TestCommitCutOtherETagScheme is an attack: a Commit cut as the store
// completes the upload finds out what is at the key from its ETag. A store
// that gives a completed multipart object an ETag of its own making, the
// MD5 of its bytes without S3's "-N" (several S3-compatible stores do),
// made Commit conclude another object was there and say nothing was
// written (pteexport: "interrupted; ... was not written") while the
// object at the key was this very upload. An ETag that is neither this
// upload's nor of another number of parts no longer proves anything
// unless the object's size differs: the upload may have been written.
// An object of another size is still another object.
func TestCommitCutOtherETagScheme(t *testing.T) {
	srv := programsStore(t)
	st, err := objstore.New(context.Background(), nil)
	require.NoError(t, err)
	body := bytes.Repeat([]byte("0123456789abcdef"), (objstore.DefaultPartSize*2+1000)/16)
	sum := md5.Sum(body)
	isComplete := func(method, query string) bool {
		return method == http.MethodPost && strings.Contains(query, "uploadId=")
	}
	for _, other := range []bool{false, true} {
		key := map[bool]string{false: "ours.bin", true: "theirs.bin"}[other]
		if other {
			// Another writer's object, of another size, is at the key
			// when the cut upload is settled: not ours, whatever its ETag.
			_, err := srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("programs"), Key: aws.String(key), Body: bytes.NewReader(body[:1000])})
			require.NoError(t, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		up, err := st.Create(ctx, objstore.Location{Bucket: "programs", Key: key}, nil)
		require.NoError(t, err)
		_, err = up.Write(body)
		require.NoError(t, err)
		srv.HoldAnswer(func(r s3test.Request) time.Duration {
			if isComplete(r.Method, r.Query) {
				if other {
					// The store did not complete it after all (another
					// hand aborted it): the other object stays.
					return 0
				}
				cancel()
				return 5 * time.Second
			}
			return 0
		})
		srv.EditAnswer(func(r s3test.Request, h http.Header) {
			if r.Method == http.MethodHead && h.Get("ETag") != "" {
				h.Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
			}
		})
		var aborted atomic.Bool
		if other {
			srv.FailWith(func(r *http.Request) int {
				if isComplete(r.Method, r.URL.RawQuery) {
					// Completed by nobody: an abort by another hand, then
					// the answer is lost.
					_, aerr := srv.Client().AbortMultipartUpload(context.Background(), &s3.AbortMultipartUploadInput{
						Bucket: aws.String("programs"), Key: aws.String(key), UploadId: aws.String(uploadID(r.URL.RawQuery))})
					aborted.Store(aerr == nil)
					cancel()
					time.Sleep(200 * time.Millisecond)
					return http.StatusServiceUnavailable
				}
				return 0
			})
		}
		err = up.Commit()
		srv.HoldAnswer(nil)
		srv.FailWith(nil)
		srv.EditAnswer(nil)
		cancel()
		require.ErrorIs(t, err, context.Canceled)
		var ce *objstore.CutCommitError
		if other {
			require.True(t, aborted.Load(), "the upload was aborted by another hand")
			require.False(t, errors.As(err, &ce), "another object, of another size, is at the key: %v", err)
			continue
		}
		got, gerr := srv.Get("programs", key)
		require.NoError(t, gerr)
		require.Equal(t, body, got, "the store completed the upload")
		require.ErrorAs(t, err, &ce, "the object at the key is this upload: the error must not say nothing was written")
		require.False(t, ce.Written, "the ETag is not the one S3 gives: Commit cannot know")
		require.Contains(t, err.Error(), "may have been written")
	}
}

// uploadID is the uploadId of a request's query.
func uploadID(query string) string {
	for _, kv := range strings.Split(query, "&") {
		if v, ok := strings.CutPrefix(kv, "uploadId="); ok {
			return v
		}
	}
	return ""
}

// TestCreateCut is an attack: SIGINT while the request creating the
// multipart upload is on its way, after the store acted on it, left an
// upload the writer never learned the id of, and so never aborted: a
// stray upload at the key (a later write reports it, --recover removes it
// a quarter of an hour later). Create now waits for the store's answer
// (for at most abortTimeout) when its context ends during that request,
// and aborts the upload it made.
func TestCreateCut(t *testing.T) {
	srv := programsStore(t)
	st, err := objstore.New(context.Background(), nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv.HoldAnswer(func(r s3test.Request) time.Duration {
		if r.Method == http.MethodPost && strings.Contains(r.Query, "uploads") {
			cancel()
			return 300 * time.Millisecond
		}
		return 0
	})
	_, err = st.Create(ctx, objstore.Location{Bucket: "programs", Key: "cut.bin"}, nil)
	srv.HoldAnswer(nil)
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, srv.Uploads(t, "programs"), "a stray upload")
}

// TestCommitCutAbortSaysYes is an attack: a Commit cut after the store
// completed the upload asks the store to abort it, and took an abort that
// succeeded as proof that nothing was written. A store that answers 204 to
// the abort of an upload it already completed (S3 says NoSuchUpload; not
// every S3-compatible store does) made Commit report that nothing was
// written (pteexport: "was not written") while the new object was at the
// key. An abort that succeeds is now checked against the key: the object
// there with this upload's ETag is this upload's, written.
func TestCommitCutAbortSaysYes(t *testing.T) {
	srv := programsStore(t)
	st, err := objstore.New(context.Background(), nil)
	require.NoError(t, err)
	body := bytes.Repeat([]byte("0123456789abcdef"), (objstore.DefaultPartSize*2+1000)/16)
	isComplete := func(method, query string) bool {
		return method == http.MethodPost && strings.Contains(query, "uploadId=")
	}
	for _, completed := range []bool{true, false} {
		key := fmt.Sprintf("abort-yes-%t.bin", completed)
		ctx, cancel := context.WithCancel(context.Background())
		up, err := st.Create(ctx, objstore.Location{Bucket: "programs", Key: key}, nil)
		require.NoError(t, err)
		_, err = up.Write(body)
		require.NoError(t, err)
		if completed {
			srv.HoldAnswer(func(r s3test.Request) time.Duration {
				if isComplete(r.Method, r.Query) {
					cancel()
					return 5 * time.Second
				}
				return 0
			})
		}
		var aborts atomic.Int32
		srv.FailWith(func(r *http.Request) int {
			switch {
			case !completed && isComplete(r.Method, r.URL.RawQuery):
				// Lost on the way: the store never completes it.
				cancel()
				time.Sleep(200 * time.Millisecond)
				return http.StatusServiceUnavailable
			case completed && r.Method == http.MethodDelete && strings.Contains(r.URL.RawQuery, "uploadId="):
				// The store says yes to aborting what it completed.
				aborts.Add(1)
				return http.StatusNoContent
			}
			return 0
		})
		err = up.Commit()
		srv.HoldAnswer(nil)
		srv.FailWith(nil)
		cancel()
		require.ErrorIs(t, err, context.Canceled)
		got, gerr := srv.Get("programs", key)
		var ce *objstore.CutCommitError
		if !completed {
			require.Error(t, gerr, "nothing was completed")
			require.False(t, errors.As(err, &ce), "nothing is at the key: %v", err)
			continue
		}
		require.EqualValues(t, 1, aborts.Load(), "the cut Commit asked for an abort")
		require.NoError(t, gerr)
		require.Equal(t, body, got, "the store completed the upload")
		require.ErrorAs(t, err, &ce, "the object at the key is this upload: the error must not say nothing was written")
		require.True(t, ce.Written, "its ETag is this upload's: %v", err)
		require.Contains(t, err.Error(), "was written")
	}
}
