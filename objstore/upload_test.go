package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/httprange"
	"github.com/ptekit/ptekit/internal/s3test"
	"github.com/ptekit/ptekit/objstore"
)

// TestAssemble: an object assembled from literal bytes and ranges of
// another object (a key that needs escaping) holds exactly those bytes;
// ranges too short for a part of their own are read and sent, the others
// copied by the store; sent plus copied is the object's size.
func TestAssemble(t *testing.T) {
	srv := programsStore(t)
	path, data := object(t, 12<<20, 9)
	srcLoc := srv.Put(t, "programs", "src dir/a+b.bin", path)
	st, err := objstore.New(context.Background(), nil)
	require.NoError(t, err)
	loc, err := objstore.Parse(srcLoc)
	require.NoError(t, err)
	r, err := st.Open(context.Background(), loc, nil)
	require.NoError(t, err)
	defer r.Close()

	pieces := []objstore.Piece{
		{Data: []byte("head of the new object")},
		{Off: 0, Len: 7 << 20},
		{Data: bytes.Repeat([]byte{0}, 10)},
		{Off: 7<<20 + 5, Len: 2 << 20},
		{Off: 1 << 20, Len: 6 << 20},
		{Off: 100, Len: 3},
	}
	var want []byte
	for _, p := range pieces {
		if p.Data != nil {
			want = append(want, p.Data...)
		} else {
			want = append(want, data[p.Off:p.Off+p.Len]...)
		}
	}
	dst := objstore.Location{Bucket: "programs", Key: "out/new object.pte"}
	up, err := st.Create(context.Background(), dst, &objstore.UploadOptions{NoOverwrite: true})
	require.NoError(t, err)
	require.NoError(t, up.Assemble(&objstore.Source{Location: loc, Reader: r}, pieces, func(err error) { t.Errorf("refused: %v", err) }))
	require.NoError(t, up.Commit())
	got, err := srv.Get("programs", dst.Key)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "assembled object differs")
	sent, copied := up.Moved()
	require.Equal(t, int64(len(want)), sent+copied)
	require.Positive(t, copied)
	require.Empty(t, srv.Uploads(t, "programs"))

	_, err = st.Create(context.Background(), dst, &objstore.UploadOptions{NoOverwrite: true})
	require.True(t, errors.Is(err, fs.ErrExist), "%v", err)

	// An aborted upload leaves neither an object nor an upload.
	up, err = st.Create(context.Background(), objstore.Location{Bucket: "programs", Key: "aborted.pte"}, nil)
	require.NoError(t, err)
	_, err = up.Write(make([]byte, 9<<20))
	require.NoError(t, err)
	require.NoError(t, up.Abort())
	_, err = srv.Get("programs", "aborted.pte")
	require.Error(t, err)
	require.Empty(t, srv.Uploads(t, "programs"))

	// A source replaced after it was opened fails the copy (the ETag pin).
	other, _ := object(t, 12<<20, 10)
	srv.Put(t, "programs", "src dir/a+b.bin", other)
	up, err = st.Create(context.Background(), objstore.Location{Bucket: "programs", Key: "changed.pte"}, nil)
	require.NoError(t, err)
	err = up.Assemble(&objstore.Source{Location: loc, Reader: r}, []objstore.Piece{{Off: 0, Len: 6 << 20}}, nil)
	var he *httprange.Error
	require.ErrorAs(t, err, &he)
	require.Equal(t, httprange.KindChanged, he.Kind, "%v", err)
	require.NoError(t, up.Abort())
	require.Empty(t, srv.Uploads(t, "programs"))
}

// TestAssembleProgress: Progress is told after every part, uploaded or
// copied, with the bytes in place so far, rising to the object's size;
// a range is copied in parts of at most CopyPartSize, none but the last
// under MinPartSize, and the object holds the bytes asked for.
func TestAssembleProgress(t *testing.T) {
	srv := programsStore(t)
	path, data := object(t, 23<<20, 11)
	srcLoc := srv.Put(t, "programs", "src.bin", path)
	st, err := objstore.New(context.Background(), nil)
	require.NoError(t, err)
	loc, err := objstore.Parse(srcLoc)
	require.NoError(t, err)
	r, err := st.Open(context.Background(), loc, nil)
	require.NoError(t, err)
	defer r.Close()

	head := bytes.Repeat([]byte("h"), 100)
	pieces := []objstore.Piece{{Data: head}, {Off: 1 << 20, Len: 22 << 20}}
	want := append(bytes.Clone(head), data[1<<20:23<<20]...)
	var reports []int64
	dst := objstore.Location{Bucket: "programs", Key: "progress.pte"}
	up, err := st.Create(context.Background(), dst, &objstore.UploadOptions{
		CopyPartSize: 1, // kept at MinPartSize
		Progress:     func(n int64) { reports = append(reports, n) },
	})
	require.NoError(t, err)
	srv.Reset()
	require.NoError(t, up.Assemble(&objstore.Source{Location: loc, Reader: r}, pieces, nil))
	require.NoError(t, up.Commit())
	got, err := srv.Get("programs", dst.Key)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "assembled object differs")

	var copies []int64
	for _, req := range srv.Requests() {
		if rg := req.Header.Get("X-Amz-Copy-Source-Range"); rg != "" {
			var lo, hi int64
			_, err := fmt.Sscanf(rg, "bytes=%d-%d", &lo, &hi)
			require.NoError(t, err, rg)
			copies = append(copies, hi-lo+1)
		}
	}
	// The head part: 100 bytes and 5 MiB-100 of the range read; the rest
	// (17 MiB) copied in three parts of at least 5 MiB.
	require.Len(t, copies, 3, "copy parts %v", copies)
	for _, n := range copies {
		require.GreaterOrEqual(t, n, int64(objstore.MinPartSize))
		require.LessOrEqual(t, n, int64(2*objstore.MinPartSize))
	}
	require.Len(t, reports, 4, "reports %v", reports)
	for i := 1; i < len(reports); i++ {
		require.Greater(t, reports[i], reports[i-1], "reports %v", reports)
	}
	require.Equal(t, int64(objstore.MinPartSize), reports[0])
	require.Equal(t, int64(len(want)), reports[len(reports)-1])
	require.Empty(t, srv.Uploads(t, "programs"))
}

// TestCommitCut: the ETag Commit expects is the one the store gives the
// completed object; a Commit whose context ends while the store's answer
// is held back (the store completed the upload) says the object was
// written, with that ETag; one cut before the request reached the store
// aborts the upload and says nothing was written.
func TestCommitCut(t *testing.T) {
	srv := programsStore(t)
	st, err := objstore.New(context.Background(), nil)
	require.NoError(t, err)
	body := bytes.Repeat([]byte("0123456789abcdef"), (objstore.DefaultPartSize*2+1000)/16)
	head := func(key string) (string, error) {
		out, err := srv.Client().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("programs"), Key: aws.String(key)})
		if err != nil {
			return "", err
		}
		return aws.ToString(out.ETag), nil
	}
	isComplete := func(method, query string) bool {
		return method == http.MethodPost && strings.Contains(query, "uploadId=")
	}

	up, err := st.Create(context.Background(), objstore.Location{Bucket: "programs", Key: "whole.bin"}, nil)
	require.NoError(t, err)
	_, err = up.Write(body)
	require.NoError(t, err)
	require.NoError(t, up.Commit())
	want, ok := up.ExpectedETag()
	require.True(t, ok)
	got, err := head("whole.bin")
	require.NoError(t, err)
	require.Equal(t, want, got, "the ETag Commit expects is not the store's")

	for _, reached := range []bool{true, false} {
		key := fmt.Sprintf("cut-%t.bin", reached)
		ctx, cancel := context.WithCancel(context.Background())
		up, err := st.Create(ctx, objstore.Location{Bucket: "programs", Key: key}, nil)
		require.NoError(t, err)
		_, err = up.Write(body)
		require.NoError(t, err)
		if reached {
			srv.HoldAnswer(func(r s3test.Request) time.Duration {
				if isComplete(r.Method, r.Query) {
					cancel()
					return 5 * time.Second
				}
				return 0
			})
		} else {
			srv.FailWith(func(r *http.Request) int {
				if isComplete(r.Method, r.URL.RawQuery) {
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
		require.ErrorIs(t, err, context.Canceled)
		var ce *objstore.CutCommitError
		etag, herr := head(key)
		if reached {
			require.ErrorAs(t, err, &ce)
			require.True(t, ce.Written, "%v", err)
			require.NoError(t, herr)
			require.Equal(t, etag, ce.ETag)
			require.Contains(t, err.Error(), "was written")
		} else {
			require.False(t, errors.As(err, &ce), "%v", err)
			require.Error(t, herr, "an object appeared")
		}
		require.Empty(t, srv.Uploads(t, "programs"))
		cancel()
	}
}

// TestValidETag: what an S3 ETag looks like.
func TestValidETag(t *testing.T) {
	for e, ok := range map[string]bool{
		`"0123456789abcdef0123456789abcdef"`: true, `"0123456789abcdef0123456789abcdef-3"`: true,
		`0123456789abcdef0123456789abcdef`: false, `"0123456789abcdef0123456789abcdef-0"`: false,
		`"0123456789abcdef0123456789abcdef-10001"`: false, `"xyz"`: false, `"`: false, ``: false,
	} {
		require.Equal(t, ok, objstore.ValidETag(e), e)
	}
}

// TestCommitEmpty: an upload of no bytes commits one empty part (S3 wants
// at least one) and leaves an empty object at the key; progress is told
// nothing, since no byte moved.
func TestCommitEmpty(t *testing.T) {
	srv := programsStore(t)
	st, err := objstore.New(context.Background(), nil)
	require.NoError(t, err)
	reports := 0
	up, err := st.Create(context.Background(), objstore.Location{Bucket: "programs", Key: "out/empty.pte"},
		&objstore.UploadOptions{Progress: func(int64) { reports++ }})
	require.NoError(t, err)
	require.NoError(t, up.Commit())
	got, err := srv.Get("programs", "out/empty.pte")
	require.NoError(t, err)
	require.Empty(t, got)
	require.Zero(t, reports)
	sent, copied := up.Moved()
	require.Zero(t, sent+copied)
}
