package objstore

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in, bucket, key, err string
	}{
		{in: "s3://bucket/key.pte", bucket: "bucket", key: "key.pte"},
		{in: "S3://my-bucket.x/a/b/c d+e%20.pte", bucket: "my-bucket.x", key: "a/b/c d+e%20.pte"},
		{in: "s3://bucket/dir/", bucket: "bucket", key: "dir/"},
		{in: "s3://bucket", err: "no object key"},
		{in: "s3://bucket/", err: "no object key"},
		{in: "s3://Bucket/k", err: "lower-case"},
		{in: "s3://-bucket/k", err: "lower-case"},
		{in: "s3://ab/k", err: "3 to 63"},
		{in: "s3://bucket/a\x00b", err: "control character"},
		{in: "s3://bucket/" + strings.Repeat("k", 1025), err: "1025 bytes"},
		{in: "https://bucket/key", err: "not an s3://"},
		{in: "s3://bucket/a/../b.pte", err: `".." path segment`},
		{in: "s3://bucket/../other/b.pte", err: `".." path segment`},
		{in: "s3://bucket/./b.pte", err: `".." path segment`},
		{in: "s3://bucket/a/..", err: `".." path segment`},
		{in: "s3://bucket//b.pte", err: "empty"},
		{in: "s3://bucket/a//b.pte", err: "empty"},
		{in: "s3://bucket/a/.../b..pte/.x", bucket: "bucket", key: "a/.../b..pte/.x"},
		{in: "bucket/key", err: "not an s3://"},
	} {
		loc, err := Parse(c.in)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, c.in)
			require.False(t, strings.Contains(err.Error(), strings.Repeat("k", 100)), "the error quotes a long key whole")
			continue
		}
		require.NoError(t, err, c.in)
		require.Equal(t, Location{Bucket: c.bucket, Key: c.key}, loc)
		back, err := Parse(loc.String())
		require.NoError(t, err)
		require.Equal(t, loc, back)
	}
	require.True(t, IsS3("S3://x"))
	require.False(t, IsS3("s3:/x"))
}

func TestObjectURL(t *testing.T) {
	aws := &Store{}
	loc := Location{Bucket: "bucket", Key: "dir/a b+c.pte"}
	require.Equal(t, "https://bucket.s3.eu-west-1.amazonaws.com/dir/a%20b%2Bc.pte", aws.ObjectURL(loc, "eu-west-1").String())
	require.Equal(t, "https://s3.eu-west-1.amazonaws.com/my.bucket/k", aws.ObjectURL(Location{Bucket: "my.bucket", Key: "k"}, "eu-west-1").String())
}

// FuzzParse: any string either parses to a location that prints back to
// an equal one, or is refused with a *LocationError; never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"s3://bucket/key", "s3://a.b-c/d/e/", "s3://x", "S3://BUCKET/k", "s3://bucket/\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		loc, err := Parse(s)
		if err != nil {
			var le *LocationError
			require.ErrorAs(t, err, &le)
			require.LessOrEqual(t, len(err.Error()), 512, "a refusal quotes the input bounded")
			return
		}
		back, err := Parse(loc.String())
		require.NoError(t, err)
		require.Equal(t, loc, back)
	})
}
