// Package s3test runs a real S3-compatible server for tests: versitygw
// (github.com/versity/versitygw, the version scripts/test pins) with its
// POSIX backend in a temporary directory, on loopback, with credentials
// made up for the run, behind a counting proxy that records every request
// and the bytes each moved, and can be told to fail requests.
//
// scripts/test builds the server into a cache directory before the tests
// (VersitygwPath); a test that needs it fails under CI=true when it is
// missing, and is skipped, saying how to get it, otherwise.
package s3test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Version is the versitygw release the tests run, as scripts/test builds
// it.
const Version = "v1.8.0"

// EnvVersitygw names the server binary when it is not where scripts/test
// puts it.
const EnvVersitygw = "PTEKIT_VERSITYGW"

// Region is the region the server and its clients use.
const Region = "us-east-1"

// VersitygwPath returns where the server binary is looked for:
// $PTEKIT_VERSITYGW, else versitygw-<Version>/versitygw under the user's
// cache directory's ptekit folder (what scripts/test builds).
func VersitygwPath() string {
	if p := os.Getenv(EnvVersitygw); p != "" {
		return p
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "ptekit", "versitygw-"+Version, "versitygw")
}

// Request is one request the proxy passed on.
type Request struct {
	// Method, Path and Query are the request's (the query as sent).
	Method, Path, Query string
	// Header is the request's header (the Authorization header included,
	// for tests that look at what was sent).
	Header http.Header
	// Status is the answer's status code.
	Status int
	// In is the request body's length, Out the response body's.
	In, Out int64
}

// Server is a running versitygw behind a counting proxy.
type Server struct {
	// Endpoint is the proxy's URL, the endpoint clients use.
	Endpoint string
	// AccessKey and SecretKey are the made-up credentials of this run.
	AccessKey, SecretKey string
	// Dir is the POSIX backend's root: a bucket is a directory in it.
	Dir string
	// Log is the server's own output (stdout and stderr).
	Log *bytes.Buffer

	mu       sync.Mutex
	requests []Request
	// active counts the proxy's handlers still running: a request is
	// recorded when its handler ends, which may be just after the client
	// has read the whole answer.
	active int
	fail   func(*http.Request) int
	hold   func(Request) time.Duration
	edit   func(Request, http.Header)
}

// Option changes how Start runs the server.
type Option func(*config)

type config struct{ versioned bool }

// Versioned lets buckets be versioned (versitygw --versioning-dir): a
// test turns versioning on with PutBucketVersioning.
func Versioned() Option { return func(c *config) { c.versioned = true } }

// Start starts a server for t, stopped when t ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	bin := VersitygwPath()
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("the S3 test server versitygw %s is not at %s (scripts/test builds it; or set %s)", Version, bin, EnvVersitygw)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	var c config
	for _, o := range opts {
		o(&c)
	}
	versions := t.TempDir()
	s := &Server{Dir: t.TempDir(), AccessKey: "ptekit-test-" + randHex(4), SecretKey: randHex(20), Log: &bytes.Buffer{}}
	var backend string
	for try := 0; ; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0") // a free port, for the server
		if err != nil {
			t.Fatal(err)
		}
		backend = l.Addr().String()
		l.Close()
		args := []string{"--access", s.AccessKey, "--secret", s.SecretKey, "--region", Region, "--port", backend, "--quiet", "posix"}
		if c.versioned {
			args = append(args, "--versioning-dir", versions)
		}
		cmd := exec.Command(bin, append(args, s.Dir)...)
		// One writer for both: os/exec then has one goroutine at a time write.
		cmd.Stdout, cmd.Stderr = s.Log, s.Log
		cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY=", "ROOT_SECRET_KEY=")
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting versitygw: %v", err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		if waitListening(backend, 15*time.Second, exited) {
			t.Cleanup(func() { cmd.Process.Kill(); <-exited })
			break
		}
		cmd.Process.Kill()
		<-exited
		if try == 2 {
			t.Fatalf("versitygw did not start listening on %s: %s", backend, s.Log)
		}
	}
	target := &url.URL{Scheme: "http", Host: backend}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host // the signature covers the host the client named
		},
		ErrorLog: log.New(io.Discard, "", 0), // a client that hung up (an interrupted test) is no news
		ModifyResponse: func(resp *http.Response) error {
			s.mu.Lock()
			edit := s.edit
			s.mu.Unlock()
			if edit != nil {
				r := resp.Request
				edit(Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header, Status: resp.StatusCode}, resp.Header)
			}
			return nil
		},
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone()}
		s.mu.Lock()
		s.active++
		fail, hold := s.fail, s.hold
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.active--
			s.mu.Unlock()
		}()
		if fail != nil {
			if code := fail(r); code != 0 {
				n, _ := io.Copy(io.Discard, r.Body)
				rec.In, rec.Status = n, code
				s.record(rec)
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(code)
				fmt.Fprintf(w, "<Error><Code>InternalError</Code><Message>injected by the test</Message></Error>")
				return
			}
		}
		body := &countingReader{r: r.Body}
		r.Body = body
		if hold != nil {
			// The store's answer is taken whole, then held back.
			rr := httptest.NewRecorder()
			proxy.ServeHTTP(rr, r)
			rec.In, rec.Out, rec.Status = body.n, int64(rr.Body.Len()), rr.Code
			s.record(rec)
			if d := hold(rec); d > 0 {
				select {
				case <-time.After(d):
				case <-r.Context().Done():
					return // the client went away
				}
			}
			maps.Copy(w.Header(), rr.Header())
			w.WriteHeader(rr.Code)
			w.Write(rr.Body.Bytes())
			return
		}
		cw := &countingWriter{ResponseWriter: w}
		proxy.ServeHTTP(cw, r)
		rec.In, rec.Out, rec.Status = body.n, cw.n, cw.status
		s.record(rec)
	}))
	t.Cleanup(ts.Close)
	s.Endpoint = ts.URL
	return s
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r)
	s.mu.Unlock()
}

// settle waits, for at most ten seconds, until no handler of the proxy
// is running, so that every request a finished client made is recorded
// (and none of them is recorded after a Reset), and returns with s.mu
// held.
func (s *Server) settle() {
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		if s.active == 0 || time.Now().After(deadline) {
			return
		}
		s.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
}

// Requests returns the requests so far, once the proxy has finished
// those on their way.
func (s *Server) Requests() []Request {
	s.settle()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Reset forgets the requests so far, once the proxy has finished those
// on their way.
func (s *Server) Reset() {
	s.settle()
	s.requests = nil
	s.mu.Unlock()
}

// Moved returns how many requests were made and how many body bytes
// crossed the proxy, both ways, since the last Reset.
func (s *Server) Moved() (requests int, bytes int64) {
	for _, r := range s.Requests() {
		requests++
		bytes += r.In + r.Out
	}
	return requests, bytes
}

// FailWith makes the proxy answer each request for which f returns a
// status code other than 0 with that status (an S3 error document),
// without passing it on; nil stops it.
func (s *Server) FailWith(f func(*http.Request) int) {
	s.mu.Lock()
	s.fail = f
	s.mu.Unlock()
}

// HoldAnswer makes the proxy hold back the store's answer to each request
// (the store has done what it asked) for as long as f returns, or until
// the client gives up: a request cut after the store acted on it. f sees
// the request with its status; nil stops it.
func (s *Server) HoldAnswer(f func(Request) time.Duration) {
	s.mu.Lock()
	s.hold = f
	s.mu.Unlock()
}

// EditAnswer lets f change the headers of the store's answer to each
// request before the client gets them (a store that words them its own
// way, or lies); f sees the request with the store's status; nil stops
// it.
func (s *Server) EditAnswer(f func(Request, http.Header)) {
	s.mu.Lock()
	s.edit = f
	s.mu.Unlock()
}

// Env returns the environment a client of this server needs: the
// credentials, region and endpoint, and no shared config, credentials
// files or instance metadata (so that the machine's own never interfere).
func (s *Server) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_SESSION_TOKEN=",
		"AWS_REGION=" + Region,
		"AWS_DEFAULT_REGION=",
		"AWS_PROFILE=",
		"AWS_ENDPOINT_URL_S3=" + s.Endpoint,
		"AWS_ENDPOINT_URL=",
		"AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_WEB_IDENTITY_TOKEN_FILE=",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI=",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=",
	}
}

// Setenv sets Env for the rest of t (t.Setenv: not with t.Parallel).
func (s *Server) Setenv(t testing.TB) {
	t.Helper()
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// Client returns an SDK client of the server for setting tests up; it
// goes through the proxy, whose counts a test may Reset after.
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:                     Region,
		BaseEndpoint:               aws.String(s.Endpoint),
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// Bucket creates a bucket named name.
func (s *Server) Bucket(t testing.TB, name string) {
	t.Helper()
	if _, err := s.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("creating bucket %s: %v", name, err)
	}
}

// Put uploads the file at path as bucket/key and returns its s3://
// location.
func (s *Server) Put(t testing.TB, bucket, key, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client().PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: f, ContentLength: aws.Int64(st.Size()),
	}); err != nil {
		t.Fatalf("uploading %s to %s/%s: %v", path, bucket, key, err)
	}
	return "s3://" + bucket + "/" + key
}

// Get returns the bytes of bucket/key, or an error (a missing key is one).
func (s *Server) Get(bucket, key string) ([]byte, error) {
	out, err := s.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

// Uploads returns the keys of the multipart uploads in progress in bucket.
func (s *Server) Uploads(t testing.TB, bucket string) []string {
	t.Helper()
	out, err := s.Client().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("listing the multipart uploads of %s: %v", bucket, err)
	}
	var keys []string
	for _, u := range out.Uploads {
		keys = append(keys, aws.ToString(u.Key))
	}
	return keys
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func waitListening(addr string, limit time.Duration, exited chan struct{}) bool {
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		select {
		case <-exited:
			return false
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

type countingReader struct {
	r io.ReadCloser
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

func (c *countingReader) Close() error { return c.r.Close() }

type countingWriter struct {
	http.ResponseWriter
	n      int64
	status int
}

func (c *countingWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	k, err := c.ResponseWriter.Write(p)
	c.n += int64(k)
	return k, err
}

func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
