package objstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/objstore"
)

// TestAbortOrphansSparesLiveWriter: what pteexport --recover runs leaves
// an upload that is still growing (a running writer's, which the store
// cannot tell from a killed one's): the writer then completes. An upload
// idle for the quiet period is aborted, and quiet 0 aborts every one.
func TestAbortOrphansSparesLiveWriter(t *testing.T) {
	srv := programsStore(t)
	ctx := context.Background()
	st, err := objstore.New(ctx, nil)
	require.NoError(t, err)
	loc := objstore.Location{Bucket: "programs", Key: "out.pte"}

	live, err := st.Create(ctx, loc, nil)
	require.NoError(t, err)
	_, err = live.Write(make([]byte, 6<<20))
	require.NoError(t, err)
	n, spared, err := st.AbortOrphans(ctx, loc, objstore.QuietPeriod)
	require.NoError(t, err)
	require.Zero(t, n, "a live writer's upload was aborted")
	require.Len(t, spared, 1)
	require.WithinDuration(t, time.Now(), spared[0].LastActive, time.Minute)
	require.NoError(t, live.Commit(), "the live writer's upload was aborted")
	_, err = srv.Get("programs", "out.pte")
	require.NoError(t, err)

	// An upload left idle: aborted once quiet has passed.
	idle, err := st.Create(ctx, loc, nil)
	require.NoError(t, err)
	_, err = idle.Write(make([]byte, 6<<20))
	require.NoError(t, err)
	orphans, err := st.Orphans(ctx, loc)
	require.NoError(t, err)
	require.Len(t, orphans, 1)
	require.False(t, orphans[0].LastActive.Before(orphans[0].Initiated))
	time.Sleep(2500 * time.Millisecond)
	n, spared, err = st.AbortOrphans(ctx, loc, 2*time.Second)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Empty(t, spared)
	require.Empty(t, srv.Uploads(t, "programs"))

	// quiet 0: every upload, however recent.
	recent, err := st.Create(ctx, loc, nil)
	require.NoError(t, err)
	_, err = recent.Write(make([]byte, 6<<20))
	require.NoError(t, err)
	n, spared, err = st.AbortOrphans(ctx, loc, 0)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Empty(t, spared)
	require.Error(t, recent.Commit(), "an aborted upload cannot complete")
}
