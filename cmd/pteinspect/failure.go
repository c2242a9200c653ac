package main

import (
	"io"

	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/cli"
	"github.com/ptekit/ptekit/internal/jsonerr"
)

// writeFailure prints the JSON object of a --json run that failed before
// it had a result, so that pipelines get JSON whatever happens:
// {"error": {...}}, and for --plan also the plan's members, empty.
//
// The message is the one standard error shows (cli.Message).
func writeFailure(w io.Writer, err error, plan bool) {
	if plan {
		doc := inspect.NewPlanFailure(err)
		doc.Error.Message = cli.Message(err)
		inspect.Encode(w, doc)
		return
	}
	f := jsonerr.New(err)
	f.Message = cli.Message(err)
	jsonerr.Write(w, f)
}
