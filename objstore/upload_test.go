package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"

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
	srv := s3test.Start(t)
	srv.Setenv(t)
	srv.Bucket(t, "programs")
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
	srv := s3test.Start(t)
	srv.Setenv(t)
	srv.Bucket(t, "programs")
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
