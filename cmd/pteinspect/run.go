package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/ptekit/ptekit/check"
	"github.com/ptekit/ptekit/httprange"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/cli"
	"github.com/ptekit/ptekit/internal/input"
	"github.com/ptekit/ptekit/internal/jsonerr"
	"github.com/ptekit/ptekit/internal/progress"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// tuneHTTP, when set (by tests), adjusts the transport options of URL
// inputs, such as shorter retry delays.
var tuneHTTP func(*httprange.Options)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1 // damaged input, failed check, differences found
	exitUsage = 2 // bad command line (and any error of diff)
	exitRetry = input.ExitRetry
)

const usageText = `usage: pteinspect [flags] FILE.pte|URL [--data FILE.ptd|URL ...]
       pteinspect [--json] [--hash] [--verify] FILE.ptd|URL
       pteinspect --size [--long|--json|--html FILE] FILE.pte|FILE.ptd|URL
       pteinspect diff [--paths | --json [--summary]] [--layout] A.pte|URL B.pte|URL
       pteinspect diff [--json] [--layout] A.ptd|URL B.ptd|URL
       pteinspect help [diff]

Shows what is inside an ExecuTorch program (.pte) or external data file
(.ptd, recognised by its content). FILE "-" reads a program from standard
input; an http:// or https:// URL is read with range requests, without
downloading it.

Exit status: 0, or 1 when a check finds an error, a method fails to load
(--plan) or the input cannot be read; 2 usage error; 3 reading a URL failed
in a way worth retrying; 130/143 interrupted. diff has its own (pteinspect
help diff).

Flags:
`

type options struct {
	json, hash, compileSpecs, verify, engine, plan bool
	force, long, quiet, version                    bool
	size                                           bool
	html                                           string
	method, backend, extract, output               string
	backendOptions                                 []string
	data                                           []string
	streamable, scratch, automatic                 string
	in                                             input.Flags
	// undo is what lies beside the program: the undo record of an
	// interrupted in-place re-bake (input.UndoNotice), or "".
	undo string
}

// undoFindings is the problem an undo record beside the program makes, for
// the views that list problems (inspect.Options.Findings).
func (o *options) undoFindings() []inspect.Problem {
	if o.undo == "" {
		return nil
	}
	return []inspect.Problem{inspect.UndoRecordProblem(o.undo)}
}

// warnUndo prints the notice of an undo record beside a program (msg, from
// input.UndoNotice) on stderr, for the views that list no problems and for
// a program that does not open; nothing with --quiet or without a record.
func warnUndo(stderr io.Writer, msg string, quiet bool) {
	if msg != "" && !quiet {
		fmt.Fprintf(stderr, "pteinspect: warning: %s\n", escText(msg))
	}
}

func newFlagSet(o *options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("pteinspect", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard)
	fs.BoolVar(&o.json, "json", false, "print the stable JSON form (docs/json.md)")
	fs.BoolVarP(&o.long, "long", "l", false, "show every delegate, segment, binding and compile spec, not only the summary")
	fs.BoolVar(&o.hash, "hash", false, "add SHA-256 digests of the file, segments, payloads and byte vectors")
	fs.StringVar(&o.method, "method", "", "show only the method `NAME`")
	fs.StringVar(&o.backend, "delegate", "", "show only delegates of backend `ID` (e.g. TensorRTBackend)")
	fs.BoolVar(&o.compileSpecs, "compile-specs", false, "print only the compile spec table")
	fs.BoolVar(&o.verify, "verify", false, "run every check the reader knows; exit 1 when any finding is an error")
	fs.StringVar(&o.extract, "extract", "", "write the payload of delegate `PLAN:DELEGATE` (method index or name : delegate index)")
	fs.StringVarP(&o.output, "output", "o", "", "output `FILE` for --extract (\"-\" for standard output)")
	fs.BoolVar(&o.force, "force", false, "with --extract, replace an existing output file")
	fs.BoolVar(&o.engine, "engine", false, "with --extract, write the TensorRT engine inside the payload")
	fs.BoolVar(&o.plan, "plan", false, "print the per-engine load plan (budget, device, bindings) without a GPU")
	fs.BoolVar(&o.size, "size", false, "show where the bytes go: every byte of the file by method, backend and part (--long, --json, --html)")
	fs.StringVar(&o.html, "html", "", "with --size, write a self-contained treemap page to `FILE` (replacing it)")
	fs.StringArrayVar(&o.data, "data", nil, "load the program with external data `FILE.ptd` (repeatable, in order) and show where each external tensor comes from")
	fs.StringArrayVar(&o.backendOptions, "backend-option", nil, "with --plan, a load-time option `BACKEND:KEY=VALUE` (repeatable)")
	fs.StringVar(&o.streamable, "streamable-bytes", "", "with --plan, the engines' streamable weight `SIZE` (e.g. 2GiB)")
	fs.StringVar(&o.scratch, "scratch-bytes", "", "with --plan, the engines' activation scratch `SIZE`")
	fs.StringVar(&o.automatic, "automatic-bytes", "", "with --plan, the automatic weight streaming budget `SIZE` TensorRT would choose")
	o.in.AddFlags(fs)
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no progress and no \"wrote\" line on a terminal; only errors on standard error")
	fs.BoolVar(&o.version, "version", false, "print the version and VCS revision, and exit")
	fs.BoolP("help", "h", false, "show this help")
	return fs
}

func printUsage(w io.Writer, fs *pflag.FlagSet) {
	io.WriteString(w, usageText)
	io.WriteString(w, cli.FlagUsages(fs))
}

// usageErr reports a command line problem on stderr and, when the command
// line asks for JSON (stderr is a *jsonStderr), as the failure object on
// standard output, so that a pipeline gets JSON whatever happens.
func usageErr(stderr io.Writer, format string, args ...any) int {
	return usageErrSee(stderr, "pteinspect --help", format, args...)
}

// diffUsageErr is usageErr for the diff subcommand: the message starts
// with "diff: " and the hint names diff's own help, which lists its flags.
func diffUsageErr(stderr io.Writer, format string, args ...any) int {
	return usageErrSee(stderr, "pteinspect help diff", "diff: "+format, args...)
}

func usageErrSee(stderr io.Writer, help, format string, args ...any) int {
	msg := cli.Plain(fmt.Sprintf(format, args...))
	if j, ok := stderr.(*jsonStderr); ok {
		writeFailure(j.stdout, &jsonerr.UsageError{Msg: msg}, j.plan)
	}
	fmt.Fprintf(stderr, "pteinspect: %s (see %s)\n", msg, help)
	return exitUsage
}

// jsonStderr is standard error of a run whose command line asks for JSON:
// usage errors also go to stdout as the failure object (for --plan, the
// plan's).
type jsonStderr struct {
	io.Writer
	stdout io.Writer
	plan   bool
}

// failErr reports a failure in one line, with a hint when there is one,
// and returns its exit status: exitFail, or for a URL input the status
// input.ExitCode gives (exitRetry for a transient failure, 130/143 when
// interrupted). name is shown as input.Display shows it.
func failErr(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "pteinspect: %s%s\n", escText(cli.Message(err)), hint(input.Display(name), err))
	if code, ok := input.ExitCode(err); ok {
		return code
	}
	return exitFail
}

func hint(name string, err error) string {
	if h := input.Hint(err); h != "" {
		return h
	}
	var fe *pte.FormatError
	var le *pte.ProgramLimitError
	switch {
	case errors.As(err, &fe) && fe.Path == "file_identifier":
		return "" // the message says what the file is
	case errors.As(err, &le):
		return "" // the message says how to raise the limit; --verify could not open it either
	case errors.As(err, &fe):
		return " (hint: pteinspect --verify " + esc(name) + " lists every problem found)"
	case errors.Is(err, os.ErrNotExist):
		return " (hint: check the path)"
	case errors.Is(err, syscall.EISDIR):
		return " (hint: give a program file, not a directory)"
	case errors.Is(err, io.ErrUnexpectedEOF):
		// Opening checked the size: bytes it vouched for are gone.
		return " (hint: the file changed while it was read, " + esc(name) + " is shorter now; run again)"
	}
	return ""
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "diff" {
		return runDiff(args[1:], stdin, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "help" {
		return runHelp(args[1:], stdin, stdout, stderr)
	}
	if cli.BoolFlag(args, "json") {
		stderr = &jsonStderr{Writer: stderr, stdout: stdout, plan: cli.BoolFlag(args, "plan")}
	}
	var o options
	name, code, ok := parseArgs(args, &o, stdout, stderr)
	if !ok {
		return code
	}
	opener, err := o.in.Opener(stdin, nil)
	if err != nil {
		return usageErr(stderr, "%v", err)
	}
	if tuneHTTP != nil {
		tuneHTTP(&opener.HTTP)
	}
	// The views show a truncated file whose program region is whole, the
	// truncation a problem (pte.OpenOptions.Truncated); --plan, which
	// models ExecuTorch's load, and --compile-specs, which shows no
	// problems, refuse it, as diff does.
	opener.ProgramOptions.Truncated = !o.plan && !o.compileSpecs
	// Every view reads the program a method at a time
	// (pte.OpenOptions.LazyPlans): it holds the flatbuffer region and a
	// method or so decoded, not a decoded program several times the
	// region. --extract, which copies payloads out, reads it whole.
	opener.ProgramOptions.LazyPlans = o.extract == ""
	ctx, stop := o.in.Context(context.Background(), name)
	defer stop()
	// A viewer never applies an undo record; it reports it (every view of
	// a program, from this one look).
	o.undo = input.UndoNotice(name)
	if o.size {
		return runSize(ctx, opener, name, stdout, stderr, &o)
	}
	if isPTD(ctx, opener, name) {
		return runPTD(ctx, opener, name, stdout, stderr, &o)
	}
	srcs, closeData := openData(ctx, opener, o.data)
	defer closeData()
	if o.verify {
		return runVerify(ctx, opener, name, stdout, stderr, &o, srcs)
	}
	return runProgram(ctx, opener, name, stdout, stderr, &o, srcs)
}

// runHelp answers "pteinspect help" and "pteinspect help diff", as go and
// git have; a file named help is ./help.
func runHelp(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "diff" {
		return runDiff([]string{"--help"}, stdin, stdout, stderr)
	}
	var o options
	printUsage(stdout, newFlagSet(&o))
	return exitOK
}

// parseArgs parses the flags into o and returns the one FILE argument; when
// ok is false, run is done (help, version or a usage error) with code.
func parseArgs(args []string, o *options, stdout, stderr io.Writer) (name string, code int, ok bool) {
	fs := newFlagSet(o)
	if err := fs.Parse(args); err != nil { // not pflag.ErrHelp: --help is a flag of ours
		return "", usageErr(stderr, "%v", err), false
	}
	if help, _ := fs.GetBool("help"); help {
		printUsage(stdout, fs)
		return "", exitOK, false
	}
	if o.version {
		cli.PrintVersion(stdout, "pteinspect")
		return "", exitOK, false
	}
	if fs.NArg() != 1 {
		return "", usageErr(stderr, "expected one FILE, got %d arguments", fs.NArg()), false
	}
	if code := o.check(stderr); code != exitOK {
		return "", code, false
	}
	return fs.Arg(0), exitOK, true
}

// failure reports err on standard error and, with --json, as the one
// {"error": ...} object standard output holds when there is no result.
func failure(stdout, stderr io.Writer, name string, o *options, err error) int {
	if o.json {
		writeFailure(stdout, err, o.plan)
	}
	return failErr(stderr, name, err)
}

// runProgram opens the program and prints the view the flags ask for.
func runProgram(ctx context.Context, opener *input.Opener, name string, stdout, stderr io.Writer, o *options, srcs []ptd.Source) int {
	f, err := opener.Program(ctx, name)
	if err != nil {
		warnUndo(stderr, o.undo, o.quiet)
		return failure(stdout, stderr, name, o, err)
	}
	defer f.Close()
	if err := checkFilters(f, o); err != nil {
		return failure(stdout, stderr, name, o, err)
	}

	w := bufio.NewWriter(stdout)
	defer w.Flush()
	if o.extract != "" || o.plan || o.compileSpecs {
		warnUndo(stderr, o.undo, o.quiet) // views without problems
	}
	switch {
	case o.extract != "":
		return runExtract(ctx, f, name, stdout, stderr, o)
	case o.plan:
		return runPlan(f, name, w, stderr, o, srcs)
	case o.compileSpecs:
		return runCompileSpecs(f, name, w, stderr, o)
	}
	return runDocument(f, name, w, stdout, stderr, o, srcs)
}

// runDocument prints the inspection document: as JSON, in full (--long) or
// as a summary. A damaged file still gets its complete output, and exit 1.
// The human views read the program method by method (inspect.Stream,
// inspect.Summarize) and keep only what they print; --json builds the whole
// document, a value a pipeline reads.
func runDocument(f *pte.File, name string, w, stdout, stderr io.Writer, o *options, srcs []ptd.Source) int {
	meter := newMeter(stderr, o.quiet, "pteinspect: hashing")
	// The summary prints at most summaryLines methods (one line or more
	// each) and needs one more to know it stopped early.
	bo := &inspect.Options{Hash: o.hash, Method: o.method, Backend: o.backend, Progress: meter.Report, SummaryMethods: summaryLines + 1, Findings: o.undoFindings()}
	if len(srcs) > 0 {
		bo.Data = ptd.Resolve(f.Program, srcs)
	}
	var doc *inspect.Document
	var err error
	switch {
	case o.json:
		if input.IsURL(name) {
			bo.URL = input.Display(name)
		}
		// WriteJSON reads the delegates (and the payloads with --hash)
		// before it writes, and fails after that only when w does: a
		// failure to read still leaves one {"error": ...} object on
		// standard output.
		doc, err = inspect.WriteJSON(w, f, bo)
		meter.Done()
		if err != nil && doc != nil {
			return failErr(stderr, name, err) // writing began
		}
	case o.long:
		var st *inspect.Stream
		st, err = inspect.NewStream(f, bo)
		meter.Done()
		if err == nil {
			doc, err = printHuman(w, name, f, st, o)
		}
	default:
		var s *inspect.Summary
		s, doc, err = inspect.Summarize(f, bo)
		meter.Done()
		if err == nil {
			printSummary(w, name, f, s, doc)
		}
	}
	if err != nil {
		return failure(stdout, stderr, name, o, err)
	}
	if _, _, bad := check.FirstError(doc.Problems); bad {
		return exitFail // the output is complete; the file is damaged
	}
	return exitOK
}

// newMeter returns the progress line of a long read on stderr (shown only
// on a terminal), or nil, which shows nothing, with --quiet.
func newMeter(stderr io.Writer, quiet bool, label string) *progress.Meter {
	if quiet {
		return nil
	}
	return progress.New(stderr, label)
}

// checkFilters makes sure --method and --delegate name something in f.
func checkFilters(f *pte.File, o *options) error {
	if o.method != "" && f.PlanIndex(o.method) < 0 {
		return fmt.Errorf("%w %q (methods: %s)", inspect.ErrNoMethod, o.method, joinOr(each(inspect.MethodNames(f), esc)))
	}
	if o.backend != "" {
		ids := inspect.BackendIDs(f.Program, o.method)
		if !slices.Contains(ids, o.backend) {
			where := ""
			if o.method != "" {
				where = " in method " + strconv.Quote(o.method)
			}
			return fmt.Errorf("%w %q%s (backends: %s)", inspect.ErrNoBackend, o.backend, where, joinOr(each(ids, esc)))
		}
	}
	return nil
}

// check rejects flag combinations that make no sense.
func (o *options) check(stderr io.Writer) int {
	modes := []string{}
	for _, m := range []struct {
		on   bool
		name string
	}{{o.verify, "--verify"}, {o.compileSpecs, "--compile-specs"}, {o.extract != "", "--extract"}, {o.plan, "--plan"}, {o.size, "--size"}} {
		if m.on {
			modes = append(modes, m.name)
		}
	}
	switch {
	case len(modes) > 1:
		return usageErr(stderr, "%s cannot be combined", strings.Join(modes, " and "))
	case o.extract != "" && o.output == "":
		return usageErr(stderr, "--extract needs -o FILE")
	case o.extract != "" && input.IsURL(o.output):
		return usageErr(stderr, "--extract writes a local file; -o cannot be a URL or an s3:// location")
	case o.html != "" && input.IsURL(o.html):
		return usageErr(stderr, "--html writes a local file; it cannot be a URL or an s3:// location")
	case o.extract == "" && (o.output != "" || o.engine || o.force):
		return usageErr(stderr, "-o, --engine and --force go with --extract")
	case o.extract != "" && (o.json || o.hash):
		return usageErr(stderr, "--extract writes bytes; --json and --hash do not apply")
	case o.extract != "" && (o.method != "" || o.backend != ""):
		return usageErr(stderr, "--extract PLAN:DELEGATE names the delegate; --method and --delegate do not apply")
	case o.html != "" && !o.size:
		return usageErr(stderr, "--html goes with --size")
	case o.size && (o.hash || o.method != "" || o.backend != ""):
		return usageErr(stderr, "--size accounts for the whole file; --hash, --method and --delegate do not apply")
	case o.size && o.html != "" && (o.json || o.long):
		return usageErr(stderr, "--html writes the treemap page; --json and --long go with the --size view on standard output")
	case o.size && o.long && o.json:
		return usageErr(stderr, "--json lists every item; --long goes with the --size view")
	case o.long && !o.size && (len(modes) > 0 || o.json):
		return usageErr(stderr, "--long goes with the default view")
	case o.hash && len(modes) > 0:
		return usageErr(stderr, "--hash goes with the default view and --json, not with %s", modes[0])
	case o.verify && o.backend != "":
		return usageErr(stderr, "--verify checks every delegate; --delegate does not apply (--method does)")
	case len(o.data) > 0 && (o.compileSpecs || o.extract != ""):
		return usageErr(stderr, "--data goes with the default view, --json, --verify, --plan and --size")
	case !o.plan && (len(o.backendOptions) > 0 || o.streamable != "" || o.scratch != "" || o.automatic != ""):
		return usageErr(stderr, "--backend-option, --streamable-bytes, --scratch-bytes and --automatic-bytes go with --plan")
	}
	return exitOK
}
