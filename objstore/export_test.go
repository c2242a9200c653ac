package objstore

import "time"

// SetAnswerWait sets the bound on a write request's wait for its answer
// and returns what undoes it.
func SetAnswerWait(d time.Duration) func() {
	old := answerWait
	answerWait = d
	return func() { answerWait = old }
}
