package objstore

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/ptekit/ptekit/httprange"
)

// answerWait bounds how long a request of the SDK's client waits for the
// store's answer once it is sent: httprange's bound on reads. (A
// variable for the tests.)
var answerWait = httprange.DefaultResponseHeaderTimeout

// errNoAnswer is a request the store did not answer in time.
var errNoAnswer = errors.New("the store sent no answer within " + answerWait.String() + " of the request (check AWS_ENDPOINT_URL_S3 and AWS_ENDPOINT_URL, and the store)")

// answerLimit fails a request whose answer does not begin within
// answerWait of the request being sent, as httprange's transport does
// for reads; the SDK sets no such bound, so a store that accepted a
// connection and stalled held pteexport forever. UploadPartCopy and
// CompleteMultipartUpload are not bounded: a store may work on its side
// for minutes (copying gigabytes) before it answers.
type answerLimit struct {
	base http.RoundTripper
}

func (t *answerLimit) RoundTrip(req *http.Request) (*http.Response, error) {
	bounded := req.Header.Get("X-Amz-Copy-Source") == "" && !(req.Method == http.MethodPost && req.URL.Query().Has("uploadId"))
	ctx, cancel := context.WithCancelCause(req.Context())
	var mu sync.Mutex
	var timer *time.Timer
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		mu.Lock()
		if timer == nil && bounded {
			timer = time.AfterFunc(answerWait, func() { cancel(errNoAnswer) })
		}
		mu.Unlock()
	}}
	resp, err := t.base.RoundTrip(req.WithContext(httptrace.WithClientTrace(ctx, trace)))
	mu.Lock()
	if timer != nil {
		timer.Stop()
	}
	timer = &time.Timer{} // a late WroteRequest starts none
	mu.Unlock()
	if err != nil {
		stalled := context.Cause(ctx) == errNoAnswer
		cancel(nil)
		if stalled && req.Context().Err() == nil {
			return nil, errNoAnswer
		}
		return nil, err
	}
	resp.Body = &limitBody{ReadCloser: resp.Body, left: maxAnswer, cancel: cancel}
	return resp, nil
}

// maxAnswer bounds the body of an answer to the SDK's client, none of
// whose requests reads an object's bytes: a listing of 1,000 uploads is
// under 1 MiB, and a store that sends more (a web server's page, or no
// end) is not an S3 store.
const maxAnswer = 16 << 20

// errAnswerTooLong is an answer longer than maxAnswer.
var errAnswerTooLong = errors.New("the store's answer is longer than any S3 answer (is the endpoint an S3-compatible store?)")

// limitBody fails a body that goes on past left bytes, and ends its
// request's context when it is closed.
type limitBody struct {
	io.ReadCloser
	left   int64
	cancel context.CancelCauseFunc
}

func (b *limitBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	k, err := b.ReadCloser.Read(p)
	b.left -= int64(k)
	if b.left < 0 {
		return 0, errAnswerTooLong
	}
	return k, err
}

func (b *limitBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}
