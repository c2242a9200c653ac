package pte_test

import (
	"context"
	"io"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/s3test"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

// TestOpenURLS3: the Go API takes an s3:// location where it takes a URL:
// every shared program of up to 4 MiB opens from a real S3 server as it
// opens from its file (the same program, segments and payload bytes), or
// fails as the file does.
func TestOpenURLS3(t *testing.T) {
	files := testkit.SharedPrograms(t, 4<<20)
	srv := s3test.Start(t)
	srv.Setenv(t)
	srv.Bucket(t, "programs")
	for i, path := range files {
		loc := srv.Put(t, "programs", "p/"+strconv.Itoa(i)+".pte", path)
		want, werr := pte.Open(path)
		got, gerr := pte.OpenURL(context.Background(), loc, nil)
		if werr != nil {
			require.Error(t, gerr, path)
			continue
		}
		require.NoError(t, gerr, path)
		require.True(t, testkit.DeepEqual(want.Program, got.Program), path)
		require.Equal(t, want.Size, got.Size, path)
		ws, werr := want.SegmentReaders()
		gs, gerr := got.SegmentReaders()
		require.Equal(t, werr, gerr, path)
		for k := range ws {
			a, aerr := io.ReadAll(ws[k])
			b, berr := io.ReadAll(gs[k])
			require.Equal(t, aerr == nil, berr == nil, "%s segment %d: %v, %v", path, k, aerr, berr)
			require.Equal(t, a, b, "%s segment %d", path, k)
		}
		want.Close()
		got.Close()
	}
}
