// Command pteexport builds ExecuTorch programs (.pte) that run serialized
// TensorRT engines through the TensorRTBackend delegate, from a JSON
// manifest, and re-bakes the weight streaming budget of existing programs
// without exporting them again.
//
// Usage:
//
//	pteexport --manifest model.json -o model.pte|s3://bucket/model.pte [--weight-streaming-budget-per-engine SIZE|auto]
//	          [--target-device cuda:N] [--inline-delegate-data] [--segment-alignment N] [--json] [--force]
//	pteexport --from in.pte|URL -o out.pte --weight-streaming-budget-per-engine SIZE|auto [--target-device cuda:N]
//	          [--header 'Name: value'] [--timeout DURATION]
//	pteexport --from in.pte --in-place --weight-streaming-budget-per-engine SIZE|auto [--target-device cuda:N]
//	pteexport --from s3://bucket/in.pte -o s3://bucket/out.pte --weight-streaming-budget-per-engine SIZE|auto
//	pteexport --recover in.pte|s3://bucket/out.pte
//
// --in-place rewrites only the head of in.pte where it is when the re-baked
// program fits before its segment base (else the whole file is re-baked
// atomically, with a warning); it is refused while another process has the
// file open or mapped, and stops (undoing what it wrote) when another
// process broke its write lease. A crash during it leaves an undo record
// (.in.pte.pteundo) that pteexport --recover, or the next --in-place
// re-bake of the file, applies: only a record owned by the file's owner,
// root or the user running pteexport, writable by nobody else, sound and
// about the file as it is. Every other command reads the file as it is and
// reports the record (a viewer never writes). --recover of a file that
// does not exist fails.
//
// --from takes an http:// or https:// URL too: the program is read with
// range requests and its segments are streamed from the server to the
// output once (credentials: --header, $PTEKIT_HTTP_BEARER_TOKEN).
//
// --from and -o take s3://bucket/key locations (credentials, region and
// endpoint from the AWS SDK's chain: AWS_PROFILE, AWS_ENDPOINT_URL_S3, ...).
// An s3:// output (of a build or a re-bake) is one multipart upload,
// streamed as the program is written, completed only when the whole
// program is in place and aborted on failure or interrupt; from an s3://
// input in the same store it is assembled there: the new head is sent and
// the segment bytes are copied by the store (UploadPartCopy), so that a
// re-bake of any size moves a few MiB. --recover s3://bucket/key aborts the
// unfinished uploads to that key that a killed pteexport left.
// The manifest schema is documented in package export and docs/manifest.md.
// The output is never one of the inputs (the manifest, an engine or blob it
// names; --from's input only for the in-place re-bake -o equal to --from).
// Exit status: 0 on success, 1 when the export fails, 2 for bad usage, 3
// when reading a --from URL failed in a way worth retrying (changed on the
// server, connection failed or cut, 5xx/429, --timeout), 130 (SIGINT) or
// 143 (SIGTERM) when interrupted; an interrupted or failed export leaves
// no output and no temporary file.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"slices"
	"time"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/export"
	"github.com/ptekit/ptekit/httprange"
	"github.com/ptekit/ptekit/internal/atomicfile"
	"github.com/ptekit/ptekit/internal/cli"
	"github.com/ptekit/ptekit/internal/input"
	"github.com/ptekit/ptekit/internal/jsonerr"
	"github.com/ptekit/ptekit/internal/progress"
	"github.com/ptekit/ptekit/objstore"
	"github.com/ptekit/ptekit/pte"
	"github.com/spf13/pflag"
)

func main() {
	// A process-wide setting, so here and not in run (which tests call);
	// it also lets build ready the heap (cli.ReadyHeap).
	cli.TuneBatchGC(os.LookupEnv)
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `Usage:
  pteexport --manifest model.json -o model.pte [options]   build a program from a manifest
                                                           (-o s3://b/model.pte: into an object store)
  pteexport --from in.pte|URL -o out.pte [options]         re-bake an existing program
  pteexport --from s3://b/in.pte -o s3://b/out.pte [opts]  re-bake inside an object store
  pteexport --from in.pte --in-place [options]             re-bake it where it is (head only)
  pteexport --recover in.pte                               undo an interrupted --in-place re-bake
  pteexport --recover s3://b/out.pte [--force]             abort a killed write's upload
  pteexport help                                           show this help

The manifest format is in docs/manifest.md. Exit status: 0 success, 1 failure
(one line on standard error), 2 usage error, 3 a --from URL failed in a way
worth retrying, 130/143 interrupted by SIGINT/SIGTERM.

Options:
`

// usageError is a bad command line (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

type config struct {
	manifest, from, output string
	budgetText             string
	budgetSet              bool
	budget                 compilespec.Budget // budgetText, read once by checkValues
	targetDevice           string
	inline                 bool
	alignment              uint64
	alignmentSet           bool
	headRoomText           string
	headRoomSet            bool
	headRoom               int64 // headRoomText, read once by checkValues
	jsonOut, force, help   bool
	in                     input.Flags
	quiet, version         bool
	inPlace                bool
	recover                string
}

// parseArgs reads the command line into a config; a bad one is a
// *usageError (exit status 2).
func parseArgs(args []string) (*config, *pflag.FlagSet, error) {
	c := &config{}
	fs := newFlagSet(c)
	if len(args) > 0 && args[0] == "help" {
		args = []string{"--help"} // "pteexport help", as go and git have
	}
	if err := fs.Parse(args); err != nil {
		return nil, fs, &usageError{err.Error()}
	}
	if c.help || c.version {
		return c, fs, nil
	}
	if objstore.IsS3(c.output) {
		if _, err := objstore.Parse(c.output); err != nil {
			return nil, fs, &usageError{"-o: " + err.Error()}
		}
	}
	c.budgetSet = fs.Changed("weight-streaming-budget-per-engine")
	c.alignmentSet = fs.Changed("segment-alignment")
	c.headRoomSet = fs.Changed("head-room")
	if c.recover != "" {
		// --force goes with --recover s3://: abort uploads active in the
		// last objstore.QuietPeriod too.
		forced := c.force && objstore.IsS3(c.recover)
		if fs.NArg() > 0 || (fs.NFlag() > 1 && !(forced && fs.NFlag() == 2)) {
			return nil, fs, &usageError{"--recover takes a file (and, for an s3:// location, --force) and no other option"}
		}
		return c, fs, nil
	}
	if c.inPlace && c.output == "" {
		c.output = c.from
	}
	if fs.NArg() > 0 {
		return nil, fs, &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if err := checkModes(c); err != nil {
		return nil, fs, err
	}
	if err := checkValues(c); err != nil {
		return nil, fs, err
	}
	return c, fs, nil
}

// newFlagSet defines the flags, bound to c.
func newFlagSet(c *config) *pflag.FlagSet {
	fs := pflag.NewFlagSet("pteexport", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.manifest, "manifest", "", "JSON manifest describing the program (see docs/manifest.md)")
	fs.StringVar(&c.from, "from", "", "existing .pte to re-bake: a file, an http(s) URL or s3://bucket/key")
	fs.StringVarP(&c.output, "output", "o", "", "output .pte file, or s3://bucket/key (from an s3:// input, re-baked inside the store)")
	fs.StringVar(&c.budgetText, "weight-streaming-budget-per-engine", "", `per-engine weight streaming budget: bytes or a size such as "4GiB", "512MiB", "8GB"; "auto" writes no budget (TensorRT's automatic budget)`)
	fs.StringVar(&c.targetDevice, "target-device", "", `pin target_device (e.g. "cuda:0") on every delegate instead of deriving it from each engine's device`)
	fs.BoolVar(&c.inline, "inline-delegate-data", false, "store delegate blobs inside the flatbuffer instead of segments (at most 256 MiB in total; built in memory)")
	fs.Uint64Var(&c.alignment, "segment-alignment", 0, "segment alignment in bytes, at most 1 MiB (default 128; re-bake keeps the input's)")
	fs.StringVar(&c.headRoomText, "head-room", "auto", `padding kept before the segment data so that a later --in-place re-bake that adds a budget fits: "auto" (1 KiB + 64 bytes per delegate), 0 for none, or a size from 1KiB to 1GiB (re-bake keeps the input's)`)
	fs.BoolVar(&c.jsonOut, "json", false, "print a machine-readable summary on stdout")
	fs.BoolVar(&c.force, "force", false, "overwrite an existing output file; with --recover s3://..., also abort uploads active in the last 15 minutes")
	fs.BoolVarP(&c.quiet, "quiet", "q", false, "print only errors: no progress, warnings or \"wrote\" line")
	fs.BoolVar(&c.version, "version", false, "print the version and VCS revision, and exit")
	fs.BoolVar(&c.inPlace, "in-place", false, "with --from: rewrite only the program's head where it is, when it fits before the segment data (refused while another process has the file open or mapped)")
	fs.StringVar(&c.recover, "recover", "", "undo an in-place re-bake of this file that a crash interrupted, or abort the unfinished uploads to this s3:// key, and exit")
	fs.BoolVarP(&c.help, "help", "h", false, "show this help")
	c.in.AddFlags(fs)
	return fs
}

// checkModes refuses flags that do not go together: what to build from,
// where to write it, and the options that apply to one mode only.
func checkModes(c *config) error {
	switch {
	case c.inPlace && c.from == "":
		return &usageError{"--in-place applies to --from only"}
	case c.inPlace && input.IsURL(c.from):
		return &usageError{"--in-place rewrites a local file; --from is a URL"}
	case c.inPlace && c.output != c.from:
		return &usageError{"--in-place rewrites --from itself; leave out -o"}
	case c.inPlace && c.alignmentSet:
		return &usageError{"--in-place keeps the segment layout; --segment-alignment cannot be given"}
	case c.manifest == "" && c.from == "":
		return &usageError{"give --manifest (build) or --from (re-bake)"}
	case c.manifest != "" && c.from != "":
		return &usageError{"--manifest and --from cannot be combined"}
	case c.output == "":
		return &usageError{"-o/--output is required"}
	case objstore.IsS3(c.output) && c.inPlace:
		return &usageError{"--in-place rewrites a local file; -o is an s3:// location"}
	case c.alignmentSet && c.alignment == 0:
		return &usageError{"--segment-alignment must be at least 1"}
	case c.from != "" && c.inline:
		return &usageError{"--inline-delegate-data applies to --manifest only; a re-bake keeps delegate data where it is"}
	case c.from != "" && c.headRoomSet:
		return &usageError{"--head-room applies to --manifest only; a re-bake keeps the input's head room"}
	case c.from != "" && !c.budgetSet && c.targetDevice == "":
		return &usageError{"--from needs --weight-streaming-budget-per-engine or --target-device"}
	}
	return nil
}

// checkValues refuses option values that are out of range or do not
// parse, before anything is read.
func checkValues(c *config) error {
	if c.alignmentSet && c.alignment > export.MaxSegmentAlignment {
		return &usageError{fmt.Sprintf("--segment-alignment %d exceeds %d (1 MiB)", c.alignment, export.MaxSegmentAlignment)}
	}
	if c.targetDevice != "" {
		// ParseTargetDevice also refuses an index outside
		// [0, compilespec.MaxDeviceIndex].
		if _, _, err := compilespec.ParseTargetDevice([]byte(c.targetDevice)); err != nil {
			return &usageError{fmt.Sprintf("--target-device: %v", err)}
		}
	}
	if _, err := c.in.Opener(nil, nil); err != nil {
		return &usageError{err.Error()}
	}
	var err error
	if c.budgetSet {
		if c.budget, err = compilespec.ParseBudgetSize(c.budgetText); err != nil {
			return &usageError{fmt.Sprintf("--weight-streaming-budget-per-engine: %v", err)}
		}
	}
	if c.headRoomSet {
		if c.headRoom, err = headRoomOption(c.headRoomText); err != nil {
			return &usageError{fmt.Sprintf("--head-room: %v", err)}
		}
	}
	return nil
}

// headRoomOption reads --head-room as export.Options.HeadRoom: "auto" is
// the default (0), "0" none, anything else a size of 1 KiB to 1 GiB.
func headRoomOption(s string) (int64, error) {
	n, auto, err := compilespec.ParseSize(s)
	switch {
	case err != nil:
		return 0, err
	case auto:
		return 0, nil
	case n == 0:
		return export.NoHeadRoom, nil
	case n < pte.MinHeadRoom || n > pte.MaxHeadRoom:
		return 0, fmt.Errorf("%s is outside 1KiB to 1GiB (0 for none)", s)
	}
	return n, nil
}

// run is the whole command; main only calls it. An interrupt (SIGINT or
// SIGTERM) stops a write in progress and discards it.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := atomicfile.NotifyInterrupt(context.Background())
	defer stop()
	c, fs, err := parseArgs(args)
	if err != nil {
		if cli.BoolFlag(args, "json") {
			writeFailure(stdout, &jsonerr.UsageError{Msg: cli.Plain(err.Error())})
		}
		fmt.Fprintf(stderr, "pteexport: %s (see pteexport --help)\n", cli.EscText(cli.Plain(err.Error())))
		return 2
	}
	// With --json, standard output holds one JSON object whatever
	// happens: the summary, or the failure object pteinspect --json prints.
	fail := func(msg string, err error) {
		if c.jsonOut {
			writeFailure(stdout, &failure{msg, err})
		}
		fmt.Fprintf(stderr, "pteexport: %s\n", cli.EscText(msg))
	}
	switch {
	case c.help:
		fmt.Fprint(stdout, usage)
		fmt.Fprint(stdout, cli.FlagUsages(fs))
		return 0
	case c.version:
		cli.PrintVersion(stdout, "pteexport")
		return 0
	case c.recover != "" && objstore.IsS3(c.recover):
		return recoverObject(ctx, c.recover, c.force, stdout, fail)
	case c.recover != "":
		return runRecover(c.recover, stdout, fail)
	}
	// The library creates the output before any work: an output that is
	// an input, or that exists without --force, fails first.
	ctx, cancel := c.in.WithTimeout(ctx, c.from)
	defer cancel()
	report, done := newProgress(ctx, stderr, c.quiet)
	var res *export.Result
	if c.from != "" {
		res, err = rebake(ctx, c, report)
	} else {
		res, err = build(ctx, c, report)
	}
	done()
	if err != nil {
		return failed(ctx, c, err, fail)
	}
	if !c.quiet {
		for _, w := range res.Warnings {
			fmt.Fprintf(stderr, "pteexport: %s\n", cli.EscText(cli.Plain(w.String())))
		}
	}
	if c.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res.Summary()); err != nil {
			fmt.Fprintf(stderr, "pteexport: %v\n", err)
			return 1
		}
		return 0
	}
	if !c.quiet {
		printResult(stdout, res)
	}
	return 0
}

// runRecover is --recover FILE: undo an interrupted in-place re-bake.
func runRecover(name string, stdout io.Writer, fail func(string, error)) int {
	done, err := export.RecoverInPlace(name)
	switch {
	case err != nil:
		fail(cli.Message(err), err)
		return 1
	case done:
		fmt.Fprintf(stdout, "recovered %s: an interrupted in-place re-bake was undone\n", name)
	default:
		fmt.Fprintf(stdout, "%s: no interrupted in-place re-bake to undo\n", name)
	}
	return 0
}

// failed reports a failed build or re-bake in the user's terms and returns
// the exit status: 130/143 when interrupted, 3 for a --from URL worth
// retrying, else 1.
func failed(ctx context.Context, c *config, err error, fail func(string, error)) int {
	var inputErr *export.InputError
	cut, isCut := errors.AsType[*objstore.CutCommitError](err)
	switch {
	case errors.Is(err, context.Canceled):
		// When the store completed (or may have completed) the upload as
		// the interrupt cut the request (isCut), say what is at the key.
		switch {
		case isCut && cut.Written:
			fail(fmt.Sprintf("interrupted, but %s was written: the store completed the upload (ETag %s) as the request was cut; the object is whole", c.output, cut.ETag), err)
		case isCut:
			fail(fmt.Sprintf("interrupted; %s may have been written: the store completed the upload or not as the request was cut, "+
				"and did not say which; check the object before relying on it", c.output), err)
		default:
			fail(fmt.Sprintf("interrupted; %s was not written", c.output), err)
		}
		if ie := atomicfile.Interrupted(ctx, err); ie != nil {
			return ie.ExitCode() // 130 or 143, as the shell reports a signal
		}
		return 1
	case errors.As(err, &inputErr):
		// Never a hint to --force: that would replace the input.
		fail(fmt.Sprintf("-o %v; choose another output file", inputErr), err)
		return 1
	case errors.Is(err, iofs.ErrExist):
		fail(fmt.Sprintf("%s already exists; use --force to overwrite it", c.output), err)
		return 1
	}
	fail(cli.Message(err)+failHint(c, err), err)
	if code, ok := input.ExitCode(err); ok {
		return code // a --from URL: 3 when worth retrying
	}
	return 1
}

// failHint is the hint that ends the message of a failed build or re-bake:
// a URL input's, or for a file that does not exist where to look.
func failHint(c *config, err error) string {
	if h := input.Hint(err); h != "" {
		return h
	}
	if errors.Is(err, iofs.ErrNotExist) {
		if c.from == "" {
			return " (hint: check the path; paths in a manifest are relative to its directory)"
		}
		return " (hint: check the path)"
	}
	return ""
}

// printResult prints the one "wrote" (or "re-baked ... in place") line.
func printResult(stdout io.Writer, res *export.Result) {
	var budget string
	switch {
	case res.MixedBudgets:
		budget = "differs between delegates (see --json)"
	case res.Budget == nil:
		budget = "automatic (no weight_streaming_budget)"
	default:
		budget = compilespec.FormatSize(*res.Budget) + " per engine"
	}
	if res.InPlace {
		fmt.Fprintf(stdout, "re-baked %s in place: rewrote %s of its %s, %s, %s, weight streaming budget %s\n",
			res.Path, compilespec.FormatSizeApprox(res.Rewritten), compilespec.FormatSizeApprox(res.Size), cli.Count(len(res.Methods), "method"),
			cli.Count(res.Delegates, "TensorRT delegate"), budget)
		return
	}
	fmt.Fprintf(stdout, "wrote %s: %s, %s, %s, %s, weight streaming budget %s\n",
		res.Path, compilespec.FormatSizeApprox(res.Size), cli.Count(len(res.Methods), "method"),
		cli.Count(res.Delegates, "TensorRT delegate"), cli.Count(res.Blobs, "blob"), budget)
}

// heapPerManifestByte is about how many bytes of heap an export grows to
// per byte of its manifest (cli.ReadyHeap): 9.8 with one method per engine
// and 12 for a chain of engines, at 65,536 engines of 1 KiB (gctrace's
// peak heap). What is readied and not used is never touched.
const heapPerManifestByte = 12

func build(ctx context.Context, c *config, progress func(int64, int64)) (*export.Result, error) {
	if st, err := os.Stat(c.manifest); err == nil && st.Mode().IsRegular() {
		cli.ReadyHeap(st.Size() * heapPerManifestByte)
	}
	m, err := export.ReadManifest(c.manifest)
	if err != nil {
		return nil, err
	}
	opts := m.Options
	if c.budgetSet {
		opts.WeightStreamingBudget = c.budget
	}
	if c.targetDevice != "" {
		opts.TargetDevice = c.targetDevice
	}
	if c.inline {
		opts.InlineDelegateData = true
	}
	if c.alignmentSet {
		opts.SegmentAlignment = c.alignment
	}
	if c.headRoomSet {
		opts.HeadRoom = c.headRoom
	}
	opts.Progress = progress
	opts.NoOverwrite = !c.force
	if objstore.IsS3(c.output) {
		st, dst, err := outputStore(ctx, c.output)
		if err != nil {
			return nil, err
		}
		return export.WriteObject(ctx, st, dst, m.Program, &opts)
	}
	opts.Inputs = append(opts.Inputs, c.manifest)
	return export.WriteFileContext(ctx, c.output, m.Program, &opts)
}

func rebake(ctx context.Context, c *config, progress func(int64, int64)) (*export.Result, error) {
	opts := &export.RebakeOptions{TargetDevice: c.targetDevice, Progress: progress, NoOverwrite: !c.force && !c.inPlace, InPlace: c.inPlace}
	if c.budgetSet {
		opts.WeightStreamingBudget = &c.budget
	}
	if c.alignmentSet {
		opts.SegmentAlignment = c.alignment
	}
	opener, err := c.in.Opener(nil, nil)
	if err != nil {
		return nil, &usageError{err.Error()}
	}
	if objstore.IsS3(c.output) {
		return rebakeObject(ctx, c, opener, opts)
	}
	if !input.IsURL(c.from) {
		opts.Open = &opener.ProgramOptions
		res, err := export.RebakeContext(ctx, c.from, c.output, opts)
		return res, input.ExplainLimit(err)
	}
	// The output is written from many range reads: each must be of the
	// same version of the file, which only a strong validator ensures.
	opener.HTTP.RequirePinned = true
	f, err := opener.Program(ctx, c.from)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return export.RebakeFile(ctx, f, input.Display(c.from), c.output, opts)
}

// outputStore parses the s3:// output (a usage error when malformed) and
// opens its store.
func outputStore(ctx context.Context, output string) (*objstore.Store, objstore.Location, error) {
	dst, err := objstore.Parse(output)
	if err != nil {
		return nil, dst, &usageError{"-o: " + err.Error()}
	}
	st, err := objstore.New(ctx, nil)
	return st, dst, err
}

// rebakeObject is a re-bake whose output is an s3:// object: assembled in
// the store when the input is an object too, else streamed to it.
func rebakeObject(ctx context.Context, c *config, opener *input.Opener, opts *export.RebakeOptions) (*export.Result, error) {
	st, dst, err := outputStore(ctx, c.output)
	if err != nil {
		return nil, err
	}
	opener.HTTP.RequirePinned = true
	f, err := opener.Program(ctx, c.from)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var src *objstore.Source
	if objstore.IsS3(c.from) {
		loc, err := objstore.Parse(c.from)
		if err != nil {
			return nil, err
		}
		if r, ok := f.ReaderAt().(*httprange.Reader); ok {
			src = &objstore.Source{Location: loc, Reader: r}
		}
	}
	res, err := export.RebakeObject(ctx, f, input.Display(c.from), st, src, dst, opts)
	if !input.IsURL(c.from) && c.from != "-" {
		// As a re-bake to a file does: an input left half re-baked by
		// an interrupted --in-place is said, not silently uploaded. An
		// object has no such record: a write to a key never shows a
		// partial object (see docs/security.md).
		res, err = export.NoteUndoRecord(c.from, res, err)
	}
	return res, err
}

// recoverObject is --recover s3://bucket/key: abort the multipart uploads
// to that key that a killed pteexport left. An upload active in the last
// objstore.QuietPeriod may be a running writer's (the store does not say
// whose it is): it is left, and named, unless force.
func recoverObject(ctx context.Context, name string, force bool, stdout io.Writer, fail func(string, error)) int {
	quiet := objstore.QuietPeriod
	if force {
		quiet = 0
	}
	var n int
	var spared []objstore.Orphan
	loc, err := objstore.Parse(name)
	if err == nil {
		var st *objstore.Store
		if st, err = objstore.New(ctx, nil); err == nil {
			n, spared, err = st.AbortOrphans(ctx, loc, quiet)
		}
	}
	if err != nil {
		fail(cli.Message(err), err)
		return 1
	}
	switch {
	case n > 0:
		fmt.Fprintf(stdout, "recovered %s: aborted %s\n", loc, cli.Count(n, "unfinished multipart upload"))
	case len(spared) == 0:
		fmt.Fprintf(stdout, "%s: no unfinished upload to abort\n", loc)
	}
	if len(spared) == 0 {
		return 0
	}
	o := slices.MaxFunc(spared, func(a, b objstore.Orphan) int { return a.LastActive.Compare(b.LastActive) })
	err = fmt.Errorf("%s: left %s, the newest active %s ago (started %s): it may be a running pteexport's",
		loc, cli.Count(len(spared), "unfinished multipart upload"), time.Since(o.LastActive).Round(time.Second),
		o.Initiated.UTC().Format(time.RFC3339))
	fail(fmt.Sprintf("%v; wait until it has been idle %s, or pass --force to abort it now", err, objstore.QuietPeriod), err)
	return 1
}

// failure is an error with the message the command prints for it.
type failure struct {
	msg string
	err error
}

func (f *failure) Error() string { return f.msg }
func (f *failure) Unwrap() error { return f.err }

// writeFailure prints the failure object of docs/json.md,
// {"error": {"kind", "message", "offset", "path"}}, as pteinspect --json does.
func writeFailure(w io.Writer, err error) {
	f := jsonerr.New(err)
	f.Message = cli.Message(err) // the message standard error shows
	jsonerr.Write(w, f)
}

// progressHook, when non-nil, is called with the run's context on every
// progress report (tests use it to interrupt a write).
var progressHook func(ctx context.Context, written, total int64)

// newProgress returns the progress report of a write: a line on stderr
// when it is a terminal (package progress), nothing with --quiet.
func newProgress(ctx context.Context, stderr io.Writer, quiet bool) (report func(int64, int64), done func()) {
	var m *progress.Meter
	if !quiet {
		m = progress.New(stderr, "pteexport: writing")
	}
	return func(written, total int64) {
		if progressHook != nil {
			progressHook(ctx, written, total)
		}
		m.Report(written, total)
	}, m.Done
}
