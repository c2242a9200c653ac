package objstore

import "time"

// SetAnswerWait sets the bound on a write request's wait for its answer
// and returns what undoes it.
func SetAnswerWait(d time.Duration) func() {
	old := answerWait
	answerWait = d
	return func() { answerWait = old }
}

// ExpectedETag is the ETag S3 gives the object the upload's parts make.
func (u *Upload) ExpectedETag() (string, bool) { return multipartETag(u.parts) }

// ValidETag is validETag.
var ValidETag = validETag
