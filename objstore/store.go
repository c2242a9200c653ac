package objstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/ptekit/ptekit/httprange"
)

// Environment variables naming an S3-compatible endpoint, as the AWS SDKs
// and CLI read them: the S3-specific one wins.
const (
	EnvEndpointS3 = "AWS_ENDPOINT_URL_S3"
	EnvEndpoint   = "AWS_ENDPOINT_URL"
)

// DefaultRegion is the region used when neither the configuration nor the
// store names one.
const DefaultRegion = "us-east-1"

// emptySHA256 is the SHA-256 of no bytes, the payload hash of a GET or
// HEAD request.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// Options tunes a Store.
type Options struct {
	// Getenv reads the endpoint variables (EnvEndpointS3, EnvEndpoint);
	// nil means os.Getenv. The SDK's credential chain reads the process
	// environment itself.
	Getenv func(string) string
	// Transport sends the requests of reads and writes; nil means
	// httprange's default transport (a clone of http.DefaultTransport with
	// its connect limits).
	Transport http.RoundTripper
}

// Store is a configured object store: credentials, endpoint and the
// region of each bucket seen. It is safe for concurrent use.
type Store struct {
	cfg       aws.Config
	endpoint  *url.URL // an S3-compatible endpoint, or nil for AWS S3
	transport http.RoundTripper

	regions sync.Map // bucket -> region

	mu      sync.Mutex
	clients map[string]*s3.Client // region -> client
}

// New loads the SDK's default configuration (credentials chain, profile,
// region) and the endpoint. Loading makes no request: credentials are
// fetched when a request needs them.
func New(ctx context.Context, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("objstore: loading the AWS configuration: %w", err)
	}
	// The SDK logs warnings to standard error on its own; the commands'
	// standard error holds their one-line messages only.
	cfg.Logger = logging.Nop{}
	s := &Store{cfg: cfg, transport: cmp.Or[http.RoundTripper](o.Transport, http.DefaultTransport.(*http.Transport).Clone()),
		clients: map[string]*s3.Client{}}
	if ep := cmp.Or(o.Getenv(EnvEndpointS3), o.Getenv(EnvEndpoint), aws.ToString(cfg.BaseEndpoint)); ep != "" {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
			return nil, fmt.Errorf("objstore: the S3 endpoint %s is not an http(s)://host[:port] URL", httprange.Redact(ep))
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		s.endpoint = u
	}
	return s, nil
}

// Region returns the region of bucket: the configured one, else what the
// store says in an x-amz-bucket-region header to an unsigned HEAD of the
// bucket, else DefaultRegion. The answer is kept for the Store's life.
func (s *Store) Region(ctx context.Context, bucket string) string {
	if s.cfg.Region != "" {
		return s.cfg.Region
	}
	if r, ok := s.regions.Load(bucket); ok {
		return r.(string)
	}
	r := s.discoverRegion(ctx, bucket)
	s.regions.Store(bucket, r)
	return r
}

// discoverRegion asks the store where bucket lives. S3 answers a HEAD of
// a bucket, even an unsigned one it refuses, with x-amz-bucket-region.
func (s *Store) discoverRegion(ctx context.Context, bucket string) string {
	u := s.bucketURL(bucket, DefaultRegion)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u.String(), nil)
	if err != nil {
		return DefaultRegion
	}
	resp, err := s.transport.RoundTrip(req)
	if err != nil {
		return DefaultRegion
	}
	resp.Body.Close()
	if r := resp.Header.Get("X-Amz-Bucket-Region"); validRegion(r) {
		return r
	}
	return DefaultRegion
}

// validRegion reports whether r looks like a region name (it goes into a
// host name and a signature scope).
func validRegion(r string) bool { return validToken(r, 32, "abcdefghijklmnopqrstuvwxyz0123456789-") }

// alnum is the ASCII letters and digits, for validToken.
const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// validToken reports whether s, a word a store's answer names, is 1 to
// max bytes, each one of allowed: only then is it put in a request, a
// host name or a message.
func validToken(s string, max int, allowed string) bool {
	return s != "" && len(s) <= max && strings.Trim(s, allowed) == ""
}

// pathStyle reports whether bucket is addressed in the URL's path: always
// on a custom endpoint (S3-compatible stores), and on AWS for a bucket
// whose name has a dot (a virtual host would break TLS name matching).
func (s *Store) pathStyle(bucket string) bool {
	return s.endpoint != nil || strings.Contains(bucket, ".")
}

// bucketURL is the URL of bucket's root.
func (s *Store) bucketURL(bucket, region string) *url.URL {
	if s.endpoint != nil {
		u := *s.endpoint
		u.Path += "/" + bucket + "/"
		return &u
	}
	if s.pathStyle(bucket) {
		return &url.URL{Scheme: "https", Host: "s3." + region + ".amazonaws.com", Path: "/" + bucket + "/"}
	}
	return &url.URL{Scheme: "https", Host: bucket + ".s3." + region + ".amazonaws.com", Path: "/"}
}

// escapeKey escapes a key as SigV4's canonical URI escapes each of its
// path segments: every byte but the unreserved ones (RFC 3986) and the
// slashes as %XX. ObjectURL and x-amz-copy-source escape a key so.
func escapeKey(k string) string {
	var b strings.Builder
	for _, c := range []byte(k) {
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || c == '/' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// ObjectURL returns the URL of loc in region, the key escaped once (as S3
// signs it).
func (s *Store) ObjectURL(loc Location, region string) *url.URL {
	u := s.bucketURL(loc.Bucket, region)
	u.Path += loc.Key
	u.RawPath = escapeKey(u.Path)
	return u
}

// Open opens loc for reading with httprange, with a copy of base (nil for
// httprange's defaults) whose Client signs every request to the object's
// host (and only to it) and names the object as loc, with SingleRange set
// (S3 serves one range per request). The caller's Header is kept, but for
// Authorization, which the signature replaces.
func (s *Store) Open(ctx context.Context, loc Location, base *httprange.Options) (*httprange.Reader, error) {
	if err := loc.Check(); err != nil {
		return nil, err
	}
	if err := s.checkCredentials(ctx, loc); err != nil {
		return nil, err
	}
	var o httprange.Options
	if base != nil {
		o = *base
	}
	region := s.Region(ctx, loc.Bucket)
	u := s.ObjectURL(loc, region)
	o.Header = o.Header.Clone()
	o.Header.Del("Authorization")
	c := http.Client{}
	if o.Client != nil {
		c = *o.Client
	}
	c.Transport = &signingTransport{base: cmp.Or(c.Transport, s.transport), creds: s.cfg.Credentials, region: region, host: u.Host}
	o.Client = &c
	o.Name = loc.String()
	o.AuthHint = authHint
	o.SingleRange = true
	return httprange.Open(ctx, u.String(), &o)
}

// authHint is what a refused read tells the user to check.
const authHint = "the store refused the request: check the AWS credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, " +
	"an expired AWS_SESSION_TOKEN), the permissions on the bucket, and its region (AWS_REGION)"

// Open opens the object at location, an s3:// location, with a Store
// of the default configuration (New with nil Options).
func Open(ctx context.Context, location string, base *httprange.Options) (*httprange.Reader, error) {
	loc, err := Parse(location)
	if err != nil {
		return nil, err
	}
	s, err := New(ctx, nil)
	if err != nil {
		return nil, err
	}
	return s.Open(ctx, loc, base)
}

// OpenURL opens rawURL for reading: an s3:// location as Open does, an
// http:// or https:// URL with httprange.Open. It is the one way ptekit
// opens a remote input (pte.OpenURL and the commands' inputs call it).
func OpenURL(ctx context.Context, rawURL string, opts *httprange.Options) (*httprange.Reader, error) {
	if IsS3(rawURL) {
		return Open(ctx, rawURL, opts)
	}
	return httprange.Open(ctx, rawURL, opts)
}

// signingTransport signs each request to host with SigV4 and pins the
// object version the first successful response names.
type signingTransport struct {
	base   http.RoundTripper
	creds  aws.CredentialsProvider
	region string
	host   string

	version atomic.Pointer[string] // x-amz-version-id of the first answer, when versioned
}

// checkCredentials fails, at once and for good, when the credential chain
// finds none: every request would fail alike, and retrying cannot help.
// The SDK caches what it finds, so the requests that follow do not look
// again.
func (s *Store) checkCredentials(ctx context.Context, loc Location) error {
	if s.cfg.Credentials == nil {
		return fmt.Errorf("objstore: %s: %w", loc, errNoCredentials)
	}
	if _, err := s.cfg.Credentials.Retrieve(ctx); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("objstore: %s: %w", loc, errNoCredentials)
	}
	return nil
}

// errNoCredentials is returned when the chain finds none.
var errNoCredentials = errors.New("no AWS credentials found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or run where a role provides them)")

// RoundTrip signs a copy of req. A request to another host (a redirect
// off the store) is sent unsigned. A multi-range request (which a reader
// with SingleRange does not send) is answered here with 416 without
// reaching the store: S3 serves one range per request and answers several
// with the whole object, which httprange would then refuse after the
// store had started sending it; httprange falls back to single ranges.
func (t *signingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != t.host {
		return t.base.RoundTrip(req)
	}
	if strings.Contains(req.Header.Get("Range"), ",") {
		if req.Body != nil {
			req.Body.Close()
		}
		return &http.Response{
			StatusCode: http.StatusRequestedRangeNotSatisfiable, Status: "416 multi-range requests are not sent to an object store",
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{}, Body: http.NoBody, Request: req,
		}, nil
	}
	resp, err := t.send(req.Clone(req.Context()))
	if err == nil && resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && resp.Header.Get("Content-Range") == "" && req.Method == http.MethodGet {
		// S3 refuses any range of an empty object without saying its
		// size (httprange needs "bytes */0" to read it as empty): a HEAD
		// says it.
		head := req.Clone(req.Context())
		head.Method = http.MethodHead
		head.Header.Del("Range")
		if hr, herr := t.send(head); herr == nil {
			hr.Body.Close()
			if hr.StatusCode == http.StatusOK && hr.ContentLength == 0 {
				resp.Header.Set("Content-Range", "bytes */0")
			}
		}
	}
	return resp, err
}

// send signs r (a request of the caller's own) and sends it.
func (t *signingTransport) send(r *http.Request) (*http.Response, error) {
	if v := t.version.Load(); v != nil {
		q := r.URL.Query()
		q.Set("versionId", *v)
		r.URL.RawQuery = q.Encode()
	}
	var creds aws.Credentials
	if t.creds != nil {
		var err error
		if creds, err = t.creds.Retrieve(r.Context()); err != nil {
			return nil, fmt.Errorf("objstore: %w", errNoCredentials)
		}
	}
	r.Header.Del("Authorization")
	if creds.HasKeys() {
		r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
		if err := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).
			SignHTTP(r.Context(), creds, r, emptySHA256, "s3", t.region, time.Now()); err != nil {
			return nil, fmt.Errorf("objstore: signing the request: %w", err)
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err == nil && resp.StatusCode >= 400 && resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		authStatus(resp)
	}
	if err == nil && resp.StatusCode/100 == 2 {
		if v := resp.Header.Get("X-Amz-Version-Id"); v != "" && v != "null" && len(v) <= 1024 {
			t.version.CompareAndSwap(nil, &v)
		}
	}
	return resp, err
}

// Client returns the SDK's S3 client for bucket's region, addressed as
// reads are (the endpoint, path-style on it).
func (s *Store) Client(ctx context.Context, bucket string) *s3.Client {
	region := s.Region(ctx, bucket)
	path := s.pathStyle(bucket)
	key := fmt.Sprintf("%s/%t", region, path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[key]; ok {
		return c
	}
	c := s3.NewFromConfig(s.cfg, func(o *s3.Options) {
		o.Region = region
		o.UsePathStyle = path
		if s.endpoint != nil {
			o.BaseEndpoint = aws.String(s.endpoint.String())
		}
		// The SDK signs a request and the client sends it: a redirect
		// followed by net/http would carry the headers along, the
		// session token to any host and the signature to the same host
		// at another port. S3 redirects only to say a bucket is in
		// another region, an error the SDK reports as such.
		o.HTTPClient = &http.Client{Transport: &answerLimit{base: s.transport}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		// Checksums only where an operation needs them: S3-compatible
		// stores differ in the trailing checksums they accept.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	s.clients[key] = c
	return c
}

// authCodes are the S3 error codes that mean the request's credentials
// were refused, whatever status the store gave them (S3 answers an expired
// session token with 400, some stores an unknown key with 404).
var authCodes = map[string]bool{
	"AccessDenied": true, "InvalidAccessKeyId": true, "SignatureDoesNotMatch": true, "ExpiredToken": true,
	"InvalidToken": true, "TokenRefreshRequired": true, "AuthorizationHeaderMalformed": true,
	"InvalidSecurity": true, "RequestTimeTooSkewed": true, "AccountProblem": true,
	"XAdminUserNotFound": true, // versitygw's unknown access key (404)
}

// maxErrorBody is the most of an error answer read for its code.
const maxErrorBody = 8 << 10

// authStatus reads the S3 error code of a failed answer and, when it says
// the credentials were refused, makes the status 403 (httprange's
// KindAuth, with its hint). Only the code is looked at: the rest of the
// body (some stores echo the string to sign) is never shown. The body
// is given back as read.
func authStatus(resp *http.Response) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var doc struct {
		Code string `xml:"Code"`
	}
	if xml.Unmarshal(body, &doc) == nil && authCodes[doc.Code] {
		resp.StatusCode, resp.Status = http.StatusForbidden, "403 "+doc.Code
	}
}
