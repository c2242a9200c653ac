package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/atomicfile"
	"github.com/ptekit/ptekit/internal/input"
	"github.com/ptekit/ptekit/internal/progress"
	"github.com/ptekit/ptekit/pte"
)

// runExtract streams a delegate payload, or the TensorRT engine inside it,
// to a file (atomically: complete or absent) or to stdout. An interrupt
// (SIGINT, SIGTERM) discards the file and exits 130 or 143.
func runExtract(ctx context.Context, f *pte.File, name string, stdout, stderr io.Writer, o *options) int {
	plan, del, err := inspect.ParseDelegateRef(f.Program, o.extract)
	if err != nil {
		return usageErr(stderr, "--extract %q: %v", o.extract, err)
	}
	var out *atomicfile.File
	if o.output != "-" {
		var code int
		if out, code = createOutput(ctx, stderr, name, []string{name}, "-o", "payload", o.output, o.force); out == nil {
			return code
		}
		defer out.Abort()
	}
	pl, err := f.DelegateData(plan, del)
	if err != nil {
		return failErr(stderr, name, err)
	}
	var src *io.SectionReader = pl.SectionReader
	method := f.Program.PlanName(plan)
	what := fmt.Sprintf("payload of %s delegate %d", method, del)
	if o.engine {
		id := f.Program.PlanDelegates(plan)[del].ID
		if !delegate.IsTensorRT(id) {
			return failErr(stderr, name, fmt.Errorf("--engine: delegate %s:%d is %s, not %s", esc(method), del, esc(id), delegate.BackendID))
		}
		blob, err := delegate.Decode(pl, pl.Size())
		if err != nil {
			return failErr(stderr, name, fmt.Errorf("%s: %w", what, err))
		}
		src = blob.Engine()
		what = "TensorRT engine in the " + what
	}
	meter := newMeter(stderr, o.quiet, "pteinspect: extracting")
	var r io.Reader = &progress.Reader{R: src, M: meter, Total: src.Size()}
	if o.output == "-" {
		_, err := io.Copy(stdout, r)
		meter.Done()
		if err != nil {
			return failErr(stderr, name, fmt.Errorf("writing %s: %w", what, err))
		}
		return exitOK
	}
	if extractHook != nil {
		r = &hookReader{r, ctx}
	}
	n, err := io.Copy(out, r)
	meter.Done()
	if err == nil {
		err = out.Commit()
	}
	if err != nil {
		return writeFailed(ctx, stderr, name, o.output, what, err)
	}
	if !o.quiet {
		fmt.Fprintf(stdout, "wrote %s (%s) to %s\n", compilespec.FormatSizeApprox(n), what, esc(o.output))
	}
	return exitOK
}

// extractHook, when non-nil, is called with the run's context before each
// read of an extract to a file (the script tests use it to interrupt the
// write half way).
var extractHook func(ctx context.Context)

type hookReader struct {
	r   io.Reader
	ctx context.Context
}

func (h *hookReader) Read(p []byte) (int, error) {
	extractHook(h.ctx)
	return h.r.Read(p)
}

// writeFailed reports a failure to write or commit output, which then
// does not exist (an interrupt says so), and returns the exit status.
func writeFailed(ctx context.Context, stderr io.Writer, name, output, what string, err error) int {
	if ie := atomicfile.Interrupted(ctx, err); ie != nil {
		fmt.Fprintf(stderr, "pteinspect: interrupted; %s was not written\n", esc(output))
		return ie.ExitCode()
	}
	return failErr(stderr, name, fmt.Errorf("writing %s: %w", what, err))
}

// createOutput starts an output file (of --extract, --html), which may not
// be one of the inputs (by any name, even with --force) nor exist unless
// force. Standard input and a URL input are not local files to protect.
// An output refused for what the command line asks (the input, or an
// existing file without --force) is a usage error; flag names the option
// that named it (-o, --html) and what the output holds. When the output is
// nil, code is the exit status.
func createOutput(ctx context.Context, stderr io.Writer, name string, inputs []string, flag, what, output string, force bool) (out *atomicfile.File, code int) {
	opts := &atomicfile.Options{NoOverwrite: !force}
	for _, in := range inputs {
		if in != "-" && !input.IsURL(in) {
			opts.Inputs = append(opts.Inputs, in)
		}
	}
	out, err := atomicfile.CreateContext(ctx, output, opts)
	switch ie, ok := errors.AsType[*atomicfile.InputError](err); {
	case err == nil:
		return out, exitOK
	case ok:
		return nil, usageErr(stderr, "%s %s; write the %s elsewhere", flag, esc(ie.Error()), what)
	case errors.Is(err, fs.ErrExist):
		return nil, usageErr(stderr, "-o %s exists; pass --force to replace it", esc(output))
	}
	return nil, failErr(stderr, name, err)
}
