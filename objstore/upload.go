package objstore

import (
	"bytes"
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/ptekit/ptekit/httprange"
)

// S3's limits on multipart uploads.
const (
	// MinPartSize is the smallest part but the last.
	MinPartSize = 5 << 20
	// MaxPartSize is the largest part, uploaded or copied.
	MaxPartSize = 5 << 30
	// MaxParts is the most parts of one upload.
	MaxParts = 10000
)

// DefaultPartSize is the size of the parts Upload sends while it streams.
const DefaultPartSize = 8 << 20

// DefaultCopyPartSize is about the size of the parts Assemble has the
// store copy (S3 allows up to MaxPartSize): a range is split into equal
// parts of 1 to 2 GiB. A store takes seconds per GiB it copies, and a
// part is a progress report, so a 20 GiB program is copied in 20 parts,
// not 4 silent ones. Parts grow when the count would pass MaxParts.
const DefaultCopyPartSize = 1 << 30

// abortTimeout bounds an abort made after the caller's context is done.
const abortTimeout = 30 * time.Second

// UploadOptions tunes Create.
type UploadOptions struct {
	// NoOverwrite refuses a key that holds an object: before the upload
	// starts (the error wraps fs.ErrExist), and again when it completes
	// (If-None-Match), so that a writer racing this one is not replaced.
	NoOverwrite bool
	// SizeHint is the expected size of the object, which sizes the parts
	// so that they stay under MaxParts; 0 means DefaultPartSize parts
	// (up to 80 GB).
	SizeHint int64
	// Progress, when non-nil, is told after every part, uploaded or
	// copied, how many bytes of the object are in place.
	Progress func(written int64)
	// CopyPartSize sizes the parts Assemble has the store copy: a range
	// is split into equal parts of CopyPartSize to twice that (one part
	// when shorter). 0 means DefaultCopyPartSize; it is kept within
	// MinPartSize and MaxPartSize/2.
	CopyPartSize int64
}

// Upload is an object being written at a key as a multipart upload: the
// key shows nothing until Commit completes the upload, and Abort (or a
// failed Commit) discards the parts. After a crash, Orphans finds the
// upload and AbortOrphans removes it.
type Upload struct {
	client   *s3.Client
	loc      Location
	id       string
	ctx      context.Context
	noOver   bool
	partSize int
	copyPart int64
	progress func(int64)
	previous string // the version id of the object at the key when the upload began, in a versioned bucket

	buf   []byte
	parts []types.CompletedPart
	size  int64
	done  bool

	// sent counts the body bytes sent (parts uploaded), copied the bytes
	// the store copied on its side.
	sent, copied atomic.Int64
}

// StoreError is a failed request to the store, with the operation, the
// location and the store's error code; it holds no credential.
type StoreError struct {
	// Op is the S3 operation, such as "UploadPartCopy".
	Op string
	// Location is the object the request was about.
	Location string
	// Status is the HTTP status (0 when no answer came).
	Status int
	// Code is the store's error code ("AccessDenied", "NotImplemented"),
	// or "".
	Code string
	// Err is the underlying error.
	Err error
}

// Error says which operation on which object failed, and how.
func (e *StoreError) Error() string {
	var what string
	switch {
	case e.Code != "" && e.Status != 0:
		what = fmt.Sprintf("%s (HTTP %d)", e.Code, e.Status)
	case e.Code != "":
		what = e.Code
	case e.Status != 0:
		what = fmt.Sprintf("HTTP %d", e.Status)
	default:
		what = e.Err.Error()
	}
	return fmt.Sprintf("objstore: %s %s: %s", e.Op, e.Location, what)
}

// Unwrap returns the underlying error.
func (e *StoreError) Unwrap() error { return e.Err }

// storeError turns an SDK error into a *StoreError. The SDK's own text
// names the operation, status, request id and the store's message; only
// the code and status are kept, so that nothing a store echoes (some
// echo the string to sign of a refused signature) reaches a message.
func storeError(op string, loc Location, err error) error {
	if err == nil {
		return nil
	}
	e := &StoreError{Op: op, Location: loc.String(), Err: err}
	if api, ok := errors.AsType[smithy.APIError](err); ok && validCode(api.ErrorCode()) {
		e.Code = api.ErrorCode()
	}
	if re, ok := errors.AsType[*smithyhttp.ResponseError](err); ok {
		e.Status = re.HTTPStatusCode()
	}
	if e.Code == "" && e.Status == 0 {
		// No answer: a network error or the context. Keep the cause (a
		// context's, or the connection's), not the SDK's wrapping.
		for _, cause := range []error{errNoAnswer, context.DeadlineExceeded, context.Canceled} {
			if errors.Is(err, cause) {
				e.Err = cause
				break
			}
		}
	} else {
		e.Err = errors.New(e.Code)
	}
	return e
}

// validCode reports whether c looks like an S3 error code (an identifier
// such as "AccessDenied" or versitygw's "XAdminUserNotFound"): the code
// comes from the store's answer, and a store could fill it with anything
// for a message to show.
func validCode(c string) bool { return validToken(c, 64, alnum+"._-") }

// errNotS3 is a successful answer that lacks what every S3 store sends:
// the endpoint is not an S3 store (a web server that answers anything
// with 200), and taking its word would report an object written that is
// not there.
var errNotS3 = errors.New("is the endpoint (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL) an S3-compatible store?")

// notS3 reports op's successful answer that lacks what.
func notS3(op string, loc Location, what string) error {
	return &StoreError{Op: op, Location: loc.String(), Err: fmt.Errorf("the store's answer holds no %s: %w", what, errNotS3)}
}

// Create starts a multipart upload of loc. ctx governs every request of
// the Upload but Abort's.
func (s *Store) Create(ctx context.Context, loc Location, opts *UploadOptions) (*Upload, error) {
	var o UploadOptions
	if opts != nil {
		o = *opts
	}
	if err := loc.Check(); err != nil {
		return nil, err
	}
	if err := s.checkCredentials(ctx, loc); err != nil {
		return nil, err
	}
	c := s.Client(ctx, loc.Bucket)
	// What is at the key: refused with NoOverwrite, else the version a
	// versioned bucket keeps when the upload replaces it (one HEAD).
	var previous string
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &loc.Bucket, Key: &loc.Key})
	switch {
	case err == nil && o.NoOverwrite:
		return nil, fmt.Errorf("objstore: %s: %w (use --force to replace it)", loc, fs.ErrExist)
	case err == nil:
		if v := aws.ToString(head.VersionId); validVersionID(v) {
			previous = v
		}
	case o.NoOverwrite:
		if re, ok := errors.AsType[*smithyhttp.ResponseError](err); !ok || re.HTTPStatusCode() != http.StatusNotFound {
			return nil, storeError("HeadObject", loc, err)
		}
	default:
		// Without NoOverwrite only a notice depends on it: a role that
		// may write the key but not read it still writes.
		if ctx.Err() != nil {
			return nil, storeError("HeadObject", loc, err)
		}
	}
	// The request creating the upload is not cut when ctx ends: a store
	// that acted on it would keep an upload whose id only its answer
	// gives, and that nobody would abort. Its answer is waited for, at
	// most abortTimeout after ctx ends, and the upload aborted.
	cctx, ccancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		time.AfterFunc(abortTimeout, func() { ccancel(ctx.Err()) })
	})
	out, err := c.CreateMultipartUpload(cctx, &s3.CreateMultipartUploadInput{Bucket: &loc.Bucket, Key: &loc.Key,
		ContentType: aws.String("application/octet-stream")})
	stop()
	ccancel(nil)
	if err != nil {
		return nil, storeError("CreateMultipartUpload", loc, err)
	}
	if aws.ToString(out.UploadId) == "" {
		return nil, notS3("CreateMultipartUpload", loc, "upload id")
	}
	ps := DefaultPartSize
	if o.SizeHint > 0 {
		ps = max(ps, int((o.SizeHint+MaxParts/2-1)/(MaxParts/2)))
	}
	cp := min(max(cmp.Or(o.CopyPartSize, DefaultCopyPartSize), MinPartSize), MaxPartSize/2)
	u := &Upload{client: c, loc: loc, id: aws.ToString(out.UploadId), ctx: ctx, noOver: o.NoOverwrite, partSize: ps,
		copyPart: cp, progress: o.Progress, previous: previous}
	if ctx.Err() != nil {
		u.Abort()
		return nil, storeError("CreateMultipartUpload", loc, ctx.Err())
	}
	return u, nil
}

// PreviousVersion returns the version id of the object that was at the
// key when the upload began, when the bucket is versioned: the store keeps
// that version when Commit replaces it, and copying it back (S3's
// CopyObject with ?versionId=) restores it. "" when there was no object,
// or the bucket keeps no versions (a replaced object is then gone).
func (u *Upload) PreviousVersion() string { return u.previous }

// validVersionID reports whether v is a version id worth naming: S3's
// are up to 1024 URL-safe characters, and "null" names the unversioned
// object of a bucket that was not versioned when it was written.
func validVersionID(v string) bool { return v != "null" && validToken(v, 1024, alnum+"._-+=/") }

// Location returns where the Upload writes.
func (u *Upload) Location() Location { return u.loc }

// Moved returns the bytes sent to the store so far and the bytes it
// copied on its side.
func (u *Upload) Moved() (sent, copied int64) { return u.sent.Load(), u.copied.Load() }

// Write buffers p and sends each full part.
func (u *Upload) Write(p []byte) (int, error) {
	if u.done {
		return 0, fmt.Errorf("objstore: %s: write after the upload ended", u.loc)
	}
	if u.ctx.Err() != nil {
		// Stop a writer between parts at once, not at the next part.
		return 0, context.Cause(u.ctx)
	}
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), u.partSize-len(u.buf))
		u.buf = append(u.buf, p[:k]...)
		p = p[k:]
		if len(u.buf) == u.partSize {
			if err := u.flush(false); err != nil {
				return n - len(p) - k, err
			}
		}
	}
	return n, nil
}

// flush sends the buffered bytes as a part; with empty set, also when
// there are none (S3 wants one part, however empty, to complete an upload).
// The SDK rewinds a part's body (a bytes.Reader) to retry it.
func (u *Upload) flush(empty bool) error {
	if len(u.buf) == 0 && !empty {
		return nil
	}
	if len(u.parts) >= MaxParts {
		return fmt.Errorf("objstore: %s: more than %d parts", u.loc, MaxParts)
	}
	num := int32(len(u.parts) + 1)
	out, err := u.client.UploadPart(u.ctx, &s3.UploadPartInput{Bucket: &u.loc.Bucket, Key: &u.loc.Key, UploadId: &u.id,
		PartNumber: aws.Int32(num), Body: bytes.NewReader(u.buf), ContentLength: aws.Int64(int64(len(u.buf)))})
	if err != nil {
		return storeError("UploadPart", u.loc, err)
	}
	if aws.ToString(out.ETag) == "" {
		return notS3("UploadPart", u.loc, "part ETag")
	}
	u.added(out.ETag, num, int64(len(u.buf)), &u.sent)
	u.buf = u.buf[:0]
	return nil
}

// added records part num, of n bytes (counted in moved: sent or
// copied), and tells Progress how much of the object is in place when
// it grew.
func (u *Upload) added(etag *string, num int32, n int64, moved *atomic.Int64) {
	u.parts = append(u.parts, types.CompletedPart{ETag: etag, PartNumber: aws.Int32(num)})
	moved.Add(n)
	u.size += n
	if u.progress != nil && n > 0 {
		u.progress(u.size)
	}
}

// Source is an object the store copies ranges of (UploadPartCopy): its
// location, its reader (for the bytes a part must hold that cannot be
// copied) and the ETag that pins both.
type Source struct {
	Location Location
	Reader   *httprange.Reader
}

// Piece is a run of bytes of an object being assembled: Data, or when
// Data is nil the Len bytes of the source at Off.
type Piece struct {
	Data     []byte
	Off, Len int64
}

// CopyRefusedError reports a store that refused to copy a range on its
// side; Assemble then sends the bytes itself.
type CopyRefusedError struct{ Err error }

// Error says what was refused.
func (e *CopyRefusedError) Error() string {
	return fmt.Sprintf("the store refused a server-side copy (%v); sending the bytes instead", e.Err)
}

// Unwrap returns the store's error.
func (e *CopyRefusedError) Unwrap() error { return e.Err }

// Assemble writes pieces, in order, as the whole object: literal bytes
// are sent, source ranges copied by the store (UploadPartCopy with
// x-amz-copy-source-range and x-amz-copy-source-if-match, so that a
// source replaced meanwhile fails the copy), except where S3's minimum
// part size needs bytes of a range to fill a part that holds literal
// bytes: those are read from src. What crosses the network is the
// literal bytes plus at most MinPartSize per literal run. When the store
// refuses a copy (NotImplemented, or an error that says copies are not
// allowed), the rest is streamed through src, and refused (when non-nil)
// is told once. Nothing is visible at the key until Commit.
func (u *Upload) Assemble(src *Source, pieces []Piece, refused func(error)) error {
	if src.Reader.ETag() == "" {
		return fmt.Errorf("objstore: %s has no strong ETag to pin a copy to", src.Location)
	}
	stream := false
	for i, p := range pieces {
		if p.Data != nil {
			if _, err := u.Write(p.Data); err != nil {
				return err
			}
			continue
		}
		off, n := p.Off, p.Len
		last := i == len(pieces)-1
		if len(u.buf) > 0 && len(u.buf) < MinPartSize {
			take := min(n, int64(MinPartSize-len(u.buf)))
			if err := u.readFrom(src, off, take); err != nil {
				return err
			}
			off, n = off+take, n-take
		}
		if n == 0 {
			continue
		}
		if stream || (n < MinPartSize && !last) {
			if err := u.readFrom(src, off, n); err != nil {
				return err
			}
			continue
		}
		if err := u.flush(false); err != nil {
			return err
		}
		err := u.copyRange(src, off, n)
		if _, ok := errors.AsType[*CopyRefusedError](err); ok {
			if refused != nil {
				refused(err)
			}
			stream = true
			err = u.readFrom(src, off, n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// readFrom writes n bytes of src at off through the part buffer.
func (u *Upload) readFrom(src *Source, off, n int64) error {
	chunk := make([]byte, min(n, int64(u.partSize)))
	for n > 0 {
		k := min(n, int64(len(chunk)))
		if _, err := src.Reader.ReadAtContext(u.ctx, chunk[:k], off); err != nil {
			return err
		}
		if _, err := u.Write(chunk[:k]); err != nil {
			return err
		}
		off, n = off+k, n-k
	}
	return nil
}

// copyRange has the store copy n bytes of src at off as parts of at most
// the copy part size (MaxPartSize when more would pass MaxParts), and at
// least MinPartSize, but for a short last one.
func (u *Upload) copyRange(src *Source, off, n int64) error {
	// Equal parts, each at least the copy part size (so at least
	// MinPartSize) when n is, and at most MaxPartSize.
	count := max(1, n/u.copyPart)
	if (n+count-1)/count > MaxPartSize || len(u.parts)+int(count) > MaxParts {
		count = (n + MaxPartSize - 1) / MaxPartSize
	}
	size := (n + count - 1) / count
	if len(u.parts)+int(count) > MaxParts {
		return fmt.Errorf("objstore: %s: more than %d parts", u.loc, MaxParts)
	}
	source := src.Location.Bucket + "/" + escapeKey(src.Location.Key)
	for n > 0 {
		k := min(n, size)
		num := int32(len(u.parts) + 1)
		out, err := u.client.UploadPartCopy(u.ctx, &s3.UploadPartCopyInput{Bucket: &u.loc.Bucket, Key: &u.loc.Key, UploadId: &u.id,
			PartNumber: aws.Int32(num), CopySource: aws.String(source), CopySourceIfMatch: aws.String(src.Reader.ETag()),
			CopySourceRange: aws.String("bytes=" + strconv.FormatInt(off, 10) + "-" + strconv.FormatInt(off+k-1, 10))})
		if err != nil {
			se := storeError("UploadPartCopy", u.loc, err).(*StoreError)
			if se.Code == "NotImplemented" || se.Status == http.StatusNotImplemented || se.Code == "MethodNotAllowed" {
				return &CopyRefusedError{Err: se}
			}
			if se.Status == http.StatusPreconditionFailed {
				return fmt.Errorf("objstore: %s changed while it was re-baked (its ETag no longer matches): %w", src.Location,
					&httprange.Error{Kind: httprange.KindChanged, URL: src.Location.String(), Err: se})
			}
			return se
		}
		if out.CopyPartResult == nil || aws.ToString(out.CopyPartResult.ETag) == "" {
			return notS3("UploadPartCopy", u.loc, "part ETag")
		}
		u.added(out.CopyPartResult.ETag, num, k, &u.copied)
		off, n = off+k, n-k
	}
	return nil
}

// Commit sends the last part and completes the upload: the object
// appears at the key, whole. On failure the upload is aborted.
func (u *Upload) Commit() error {
	if u.done {
		return fmt.Errorf("objstore: %s: the upload already ended", u.loc)
	}
	if err := u.flush(len(u.parts) == 0); err != nil {
		u.Abort()
		return err
	}
	in := &s3.CompleteMultipartUploadInput{Bucket: &u.loc.Bucket, Key: &u.loc.Key, UploadId: &u.id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: u.parts}}
	if u.noOver {
		in.IfNoneMatch = aws.String("*")
	}
	out, err := u.client.CompleteMultipartUpload(u.ctx, in)
	if err != nil {
		se := storeError("CompleteMultipartUpload", u.loc, err).(*StoreError)
		if se.Status == 0 && se.Code == "" {
			// No answer (the context ended, the connection or the store
			// failed): the store may have completed the upload anyway.
			// When it did and nothing asked to stop, the write succeeded
			// and only its answer was lost.
			err := u.settle(se)
			if ce, ok := errors.AsType[*CutCommitError](err); ok && ce.Written && u.ctx.Err() == nil {
				return nil
			}
			return err
		}
		u.Abort()
		if se.Status == http.StatusPreconditionFailed {
			return fmt.Errorf("objstore: %s: %w (another writer created it meanwhile)", u.loc, fs.ErrExist)
		}
		return se
	}
	if aws.ToString(out.ETag) == "" {
		u.Abort()
		return notS3("CompleteMultipartUpload", u.loc, "object ETag")
	}
	u.done = true
	return nil
}

// CutCommitError is a Commit whose request got no answer (its context
// ended, the connection failed) while the store had completed the upload,
// or may have: Written says the object at the key is this upload's (its
// ETag is the one its parts give, ETag), which Commit returns only when
// its context ended (otherwise the write succeeded: Commit returns nil);
// without Written, whether the store completed it could not be found out.
// Err is why the request was cut. When the store had not completed the
// upload, Commit aborts it and returns the plain error instead: nothing
// was written.
type CutCommitError struct {
	Location string
	Written  bool
	ETag     string
	Err      error
}

// Error says what is at the key.
func (e *CutCommitError) Error() string {
	if e.Written {
		return fmt.Sprintf("objstore: %s was written: the store completed the upload (ETag %s) as the request was cut (%v)", e.Location, e.ETag, e.Err)
	}
	return fmt.Sprintf("objstore: %s may have been written: the request completing the upload was cut (%v) and the store did not say whether it completed it; "+
		"check the object before relying on it", e.Location, e.Err)
}

// Unwrap returns why the request was cut.
func (e *CutCommitError) Unwrap() error { return e.Err }

// settle finds out, after a CompleteMultipartUpload that got no answer,
// whether the store completed the upload, under its own time limit (the
// Upload's context may have ended). It aborts the upload, then looks at
// the key: the object there with this upload's ETag is this upload's,
// written, even when the store said yes to the abort (S3 refuses to abort
// a completed upload with NoSuchUpload, but not every S3-compatible store
// does). Otherwise an abort that succeeded means nothing was written: cut
// is returned. An abort refused with NoSuchUpload means the upload is
// gone, completed (or aborted by another hand): the key's ETag and size
// say whether the object there is this upload's, or that it cannot be
// known.
func (u *Upload) settle(cut *StoreError) error {
	u.done = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(u.ctx), abortTimeout)
	defer cancel()
	_, err := u.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &u.loc.Bucket, Key: &u.loc.Key, UploadId: &u.id})
	aborted := err == nil
	uncertain := &CutCommitError{Location: u.loc.String(), Err: cut}
	if !aborted {
		if ae := storeError("AbortMultipartUpload", u.loc, err).(*StoreError); ae.Code != "NoSuchUpload" && ae.Status != http.StatusNotFound {
			return uncertain
		}
	}
	head, err := u.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &u.loc.Bucket, Key: &u.loc.Key})
	if err != nil {
		if re, ok := errors.AsType[*smithyhttp.ResponseError](err); aborted || ok && re.HTTPStatusCode() == http.StatusNotFound {
			return cut // aborted (by us, or by another hand): nothing of ours at the key
		}
		return uncertain
	}
	want, ok := multipartETag(u.parts)
	got := aws.ToString(head.ETag)
	switch {
	case ok && got == want:
		return &CutCommitError{Location: u.loc.String(), Written: true, ETag: want, Err: cut}
	case aborted:
		// The store said it had not completed the upload, and the
		// object at the key does not say otherwise.
		return cut
	case head.ContentLength != nil && *head.ContentLength != u.size:
		// Another object (an older one, another writer's): not of this
		// upload's size.
		return cut
	case ok && validETag(got) && strings.Contains(got, "-") && !strings.HasSuffix(got, fmt.Sprintf(`-%d"`, len(u.parts))):
		// Another object: S3's ETag of a multipart object of another
		// number of parts. A plain MD5 proves nothing: a store may give
		// a completed upload the MD5 of its bytes (not S3's sum of its
		// parts' sums), and one of as many parts with another ETag may
		// be this one from a store that sums parts its own way.
		return cut
	}
	return uncertain
}

// multipartETag is the ETag S3 gives the object completed from parts:
// the MD5 of their MD5s, then the count. ok is false when a part's ETag
// is not an MD5 (as with some server-side encryption).
func multipartETag(parts []types.CompletedPart) (string, bool) {
	var sums []byte
	for _, p := range parts {
		b, err := hex.DecodeString(strings.Trim(aws.ToString(p.ETag), `"`))
		if err != nil || len(b) != md5.Size {
			return "", false
		}
		sums = append(sums, b...)
	}
	sum := md5.Sum(sums)
	return fmt.Sprintf(`"%s-%d"`, hex.EncodeToString(sum[:]), len(parts)), true
}

// validETag reports whether e is an S3 ETag: a quoted MD5, with a part
// count for a multipart object.
func validETag(e string) bool {
	h, n, multi := strings.Cut(strings.Trim(e, `"`), "-")
	if b, err := hex.DecodeString(h); err != nil || len(b) != md5.Size || len(e) < 2 || e[0] != '"' || e[len(e)-1] != '"' {
		return false
	}
	if multi {
		k, err := strconv.Atoi(n)
		return err == nil && k > 0 && k <= MaxParts
	}
	return true
}

// Abort discards the upload and its parts; after Commit, or a second
// time, it does nothing. It runs under its own time limit, not the
// Upload's context, so that an interrupted write still cleans up.
func (u *Upload) Abort() error {
	if u.done {
		return nil
	}
	u.done = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(u.ctx), abortTimeout)
	defer cancel()
	_, err := u.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &u.loc.Bucket, Key: &u.loc.Key, UploadId: &u.id})
	return storeError("AbortMultipartUpload", u.loc, err)
}

// Orphan is a multipart upload in progress.
type Orphan struct {
	// ID is the upload's id.
	ID string
	// Initiated is when it started.
	Initiated time.Time
	// LastActive is when it last grew: the newest of Initiated and its
	// parts' times (the store's clocks).
	LastActive time.Time
}

// QuietPeriod is how long an upload in progress must have been idle
// (Orphan.LastActive) before AbortOrphans takes it for a killed writer's
// by default. The store does not say whose an upload is, and a writer that
// is still running (in another process or on another machine) adds a part
// every few seconds while it sends, or every minute or two while the store
// copies a large part; an upload idle this long has no writer left.
const QuietPeriod = 15 * time.Minute

// Orphans lists the multipart uploads in progress for exactly loc's key:
// what a killed writer leaves (storage is billed for its parts), and what
// a running writer is making: LastActive tells them apart.
func (s *Store) Orphans(ctx context.Context, loc Location) ([]Orphan, error) {
	if err := loc.Check(); err != nil {
		return nil, err
	}
	c := s.Client(ctx, loc.Bucket)
	var found []Orphan
	in := &s3.ListMultipartUploadsInput{Bucket: &loc.Bucket, Prefix: &loc.Key}
	for range 1000 {
		out, err := c.ListMultipartUploads(ctx, in)
		if err != nil {
			return nil, storeError("ListMultipartUploads", loc, err)
		}
		for _, up := range out.Uploads {
			if aws.ToString(up.Key) == loc.Key {
				at := aws.ToTime(up.Initiated)
				found = append(found, Orphan{ID: aws.ToString(up.UploadId), Initiated: at, LastActive: at})
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
	for i := range found {
		last, err := lastPart(ctx, c, loc, found[i].ID)
		if err != nil {
			return nil, err
		}
		if last.After(found[i].LastActive) {
			found[i].LastActive = last
		}
	}
	return found, nil
}

// lastPart returns the time of the newest part of upload id (zero when it
// has none, or when it ended while listed).
func lastPart(ctx context.Context, c *s3.Client, loc Location, id string) (time.Time, error) {
	var last time.Time
	in := &s3.ListPartsInput{Bucket: &loc.Bucket, Key: &loc.Key, UploadId: &id}
	for range 100 { // at most 10,000 parts, 1,000 a page
		out, err := c.ListParts(ctx, in)
		if err != nil {
			if api, ok := errors.AsType[smithy.APIError](err); ok && api.ErrorCode() == "NoSuchUpload" {
				return last, nil // finished or aborted since it was listed
			}
			return last, storeError("ListParts", loc, err)
		}
		for _, p := range out.Parts {
			if t := aws.ToTime(p.LastModified); t.After(last) {
				last = t
			}
		}
		if !aws.ToBool(out.IsTruncated) || out.NextPartNumberMarker == nil {
			break
		}
		in.PartNumberMarker = out.NextPartNumberMarker
	}
	return last, nil
}

// AbortOrphans aborts the multipart uploads in progress for loc's key
// that have been idle for at least quiet (QuietPeriod is the safe
// choice; 0 aborts every one, a running writer's too, whose next part or
// completion then fails). It returns how many it aborted and the uploads
// it left because they were active more recently (by the local clock
// against the store's times).
func (s *Store) AbortOrphans(ctx context.Context, loc Location, quiet time.Duration) (aborted int, spared []Orphan, err error) {
	list, err := s.Orphans(ctx, loc)
	if err != nil {
		return 0, nil, err
	}
	c := s.Client(ctx, loc.Bucket)
	now := time.Now()
	for _, o := range list {
		if quiet > 0 && now.Sub(o.LastActive) < quiet {
			spared = append(spared, o)
			continue
		}
		if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &loc.Bucket, Key: &loc.Key, UploadId: aws.String(o.ID)}); err != nil {
			return aborted, spared, storeError("AbortMultipartUpload", loc, err)
		}
		aborted++
	}
	return aborted, spared, nil
}
