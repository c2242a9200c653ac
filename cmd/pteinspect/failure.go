package main

import (
	"io"

	"github.com/ptekit/ptekit/inspect"
)

// writeFailure prints the JSON object of a --json run that failed before
// it had a result, so that pipelines get JSON whatever happens:
// {"error": {...}}, and for --plan also the plan's members, empty.
func writeFailure(w io.Writer, err error, plan bool) {
	if plan {
		inspect.Encode(w, inspect.NewPlanFailure(err))
		return
	}
	inspect.Encode(w, struct {
		Error *inspect.Failure `json:"error"`
	}{inspect.NewFailure(err)})
}
