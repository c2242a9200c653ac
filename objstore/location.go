package objstore

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/ptekit/ptekit/internal/quote"
)

// Scheme is the prefix of an object store location.
const Scheme = "s3://"

// Location is an object in a bucket.
type Location struct {
	// Bucket is the bucket's name.
	Bucket string
	// Key is the object's key: everything after the bucket and its slash,
	// as given (no escaping or cleaning).
	Key string
}

// IsS3 reports whether s is an s3:// location rather than a path or an
// http(s) URL (the scheme is matched without regard to case).
func IsS3(s string) bool {
	return len(s) >= len(Scheme) && strings.EqualFold(s[:len(Scheme)], Scheme)
}

// LocationError reports an s3:// location that cannot name an object.
type LocationError struct {
	// Location is the location as given, quoted.
	Location string
	// Msg says what is wrong.
	Msg string
}

// Error says which location is wrong and how.
func (e *LocationError) Error() string {
	return fmt.Sprintf("objstore: %s: %s", e.Location, e.Msg)
}

// Parse reads s3://bucket/key. The bucket must be a DNS-style name of 3 to
// 63 characters (lower-case letters, digits, dots and hyphens, as S3 and
// its compatible stores accept); the key must not be empty, may hold any
// byte but NUL and control characters, is at most 1024 bytes (S3's
// limit), and has no empty (but a last one), "." or ".." segment.
func Parse(s string) (Location, error) {
	if !IsS3(s) {
		return Location{}, &LocationError{quote.String(s), "not an s3://bucket/key location"}
	}
	bucket, key, ok := strings.Cut(s[len(Scheme):], "/")
	if !ok || key == "" {
		return Location{}, &LocationError{quote.String(s), "no object key after the bucket (want s3://bucket/key)"}
	}
	loc := Location{Bucket: bucket, Key: key}
	if err := loc.check(); err != "" {
		return Location{}, &LocationError{quote.String(s), err}
	}
	return loc, nil
}

// check returns what is wrong with l, or "".
func (l Location) check() string { return cmp.Or(checkBucket(l.Bucket), checkKey(l.Key)) }

// checkKey returns what is wrong with a key, or "". Besides S3's limits,
// a key may not hold a "." or ".." segment, nor an empty one but the
// last ("dir/"): AWS S3 reads such a key as it is, but S3-compatible
// stores and proxies clean the path they are sent in, so that
// s3://b/a/../x.pte would read or replace s3://b/x.pte there, and
// s3://b/../c/x.pte an object of another bucket.
func checkKey(key string) string {
	if key == "" {
		return "no object key after the bucket (want s3://bucket/key)"
	}
	if len(key) > 1024 {
		return fmt.Sprintf("the key is %d bytes, more than S3's 1024", len(key))
	}
	if strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "the key holds a control character"
	}
	segs := strings.Split(key, "/")
	for i, seg := range segs {
		if seg == "." || seg == ".." || seg == "" && i < len(segs)-1 {
			return "the key has an empty, \".\" or \"..\" path segment, which S3-compatible stores resolve to another key"
		}
	}
	return ""
}

// Check reports whether l can name an object, as Parse checks a location
// (a Location made by hand is checked by every Store method that takes
// one).
func (l Location) Check() error {
	if err := l.check(); err != "" {
		return &LocationError{quote.String(l.String()), err}
	}
	return nil
}

// checkBucket returns what is wrong with a bucket name, or "".
func checkBucket(b string) string {
	if len(b) < 3 || len(b) > 63 {
		return fmt.Sprintf("the bucket name is %d characters; S3 wants 3 to 63", len(b))
	}
	for i, c := range []byte(b) {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || (c == '.' || c == '-') && i > 0 && i < len(b)-1
		if !ok {
			return "the bucket name may hold only lower-case letters, digits, and inner dots and hyphens"
		}
	}
	return ""
}

// String returns the location as s3://bucket/key.
func (l Location) String() string { return Scheme + l.Bucket + "/" + l.Key }
