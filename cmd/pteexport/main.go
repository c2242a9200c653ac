// Command pteexport builds ExecuTorch programs (.pte) that run serialized
// TensorRT engines through the TensorRTBackend delegate, from a JSON
// manifest, and re-bakes the weight streaming budget of existing programs
// without exporting them again.
//
// Usage:
//
//	pteexport --manifest model.json -o model.pte [--weight-streaming-budget-per-engine SIZE|auto]
//	          [--target-device cuda:N] [--inline-delegate-data] [--segment-alignment N] [--json] [--force]
//	pteexport --from in.pte -o out.pte --weight-streaming-budget-per-engine SIZE|auto [--target-device cuda:N]
//
// The manifest schema is documented in package export and docs/manifest.md.
// Exit status: 0 on success, 1 when the export fails, 2 for bad usage.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/export"
	"github.com/spf13/pflag"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `Usage:
  pteexport --manifest model.json -o model.pte [options]   build a program from a manifest
  pteexport --from in.pte -o out.pte [options]             re-bake an existing program

Options:
`

// usageError is a bad command line (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

type config struct {
	manifest, from, output string
	budgetText             string
	budgetSet              bool
	targetDevice           string
	inline                 bool
	alignment              uint64
	alignmentSet           bool
	jsonOut, force, help   bool
}

func parseArgs(args []string) (*config, *pflag.FlagSet, error) {
	c := &config{}
	fs := pflag.NewFlagSet("pteexport", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.manifest, "manifest", "", "JSON manifest describing the program (see docs/manifest.md)")
	fs.StringVar(&c.from, "from", "", "existing .pte to re-bake")
	fs.StringVarP(&c.output, "output", "o", "", "output .pte file")
	fs.StringVar(&c.budgetText, "weight-streaming-budget-per-engine", "", `per-engine weight streaming budget: bytes or a size such as "4GiB", "512MiB", "8GB"; "auto" writes no budget (TensorRT's automatic budget)`)
	fs.StringVar(&c.targetDevice, "target-device", "", `pin target_device (e.g. "cuda:0") on every delegate instead of deriving it from each engine's device`)
	fs.BoolVar(&c.inline, "inline-delegate-data", false, "store delegate blobs inside the flatbuffer instead of segments")
	fs.Uint64Var(&c.alignment, "segment-alignment", 0, "segment alignment in bytes (default 128; re-bake keeps the input's)")
	fs.BoolVar(&c.jsonOut, "json", false, "print a machine-readable summary on stdout")
	fs.BoolVar(&c.force, "force", false, "overwrite an existing output file")
	fs.BoolVarP(&c.help, "help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return nil, fs, &usageError{err.Error()}
	}
	if c.help {
		return c, fs, nil
	}
	c.budgetSet = fs.Changed("weight-streaming-budget-per-engine")
	c.alignmentSet = fs.Changed("segment-alignment")
	switch {
	case fs.NArg() > 0:
		return nil, fs, &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	case c.manifest == "" && c.from == "":
		return nil, fs, &usageError{"give --manifest (build) or --from (re-bake)"}
	case c.manifest != "" && c.from != "":
		return nil, fs, &usageError{"--manifest and --from cannot be combined"}
	case c.output == "":
		return nil, fs, &usageError{"-o/--output is required"}
	case c.alignmentSet && c.alignment == 0:
		return nil, fs, &usageError{"--segment-alignment must be at least 1"}
	case c.from != "" && c.inline:
		return nil, fs, &usageError{"--inline-delegate-data applies to --manifest only; a re-bake keeps delegate data where it is"}
	case c.from != "" && !c.budgetSet && c.targetDevice == "":
		return nil, fs, &usageError{"--from needs --weight-streaming-budget-per-engine or --target-device"}
	}
	if c.targetDevice != "" {
		if _, _, err := compilespec.ParseTargetDevice([]byte(c.targetDevice)); err != nil {
			return nil, fs, &usageError{fmt.Sprintf("--target-device: %v", err)}
		}
	}
	if c.budgetSet {
		if _, _, err := compilespec.ParseSize(c.budgetText); err != nil {
			return nil, fs, &usageError{fmt.Sprintf("--weight-streaming-budget-per-engine: %v", err)}
		}
	}
	return c, fs, nil
}

// run is the whole command; main only calls it.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c, fs, err := parseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "pteexport: %v (see pteexport --help)\n", err)
		return 2
	}
	if c.help {
		fmt.Fprint(stdout, usage)
		fmt.Fprint(stdout, fs.FlagUsages())
		return 0
	}
	if _, err := os.Stat(c.output); err == nil && !c.force {
		fmt.Fprintf(stderr, "pteexport: %s already exists; use --force to overwrite it\n", c.output)
		return 1
	}
	prog := newProgress(stderr)
	var res *export.Result
	if c.from != "" {
		res, err = rebake(c, prog.report)
	} else {
		res, err = build(c, prog.report)
	}
	prog.done()
	if err != nil {
		fmt.Fprintf(stderr, "pteexport: %s\n", oneLine(err.Error()))
		return 1
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "pteexport: %s\n", w)
	}
	if c.jsonOut {
		if err := writeSummary(stdout, res, c); err != nil {
			fmt.Fprintf(stderr, "pteexport: %v\n", err)
			return 1
		}
		return 0
	}
	budget := "automatic (no weight_streaming_budget)"
	if res.Budget != nil {
		budget = fmt.Sprintf("%d bytes (%s) per engine", *res.Budget, compilespec.FormatSize(*res.Budget))
	}
	fmt.Fprintf(stdout, "wrote %s: %d bytes, %d method(s), %d TensorRT delegate(s), %d blob(s), weight streaming budget %s\n",
		res.Path, res.Size, len(res.Methods), res.Delegates, res.Blobs, budget)
	return 0
}

func budgetOption(c *config) (budget *int64, auto bool) {
	n, auto, _ := compilespec.ParseSize(c.budgetText) // validated by parseArgs
	if auto {
		return nil, true
	}
	return &n, false
}

func build(c *config, progress func(int64, int64)) (*export.Result, error) {
	m, err := export.ReadManifest(c.manifest)
	if err != nil {
		return nil, err
	}
	opts := m.Options
	if c.budgetSet {
		opts.WeightStreamingBudget, _ = budgetOption(c)
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
	opts.Progress = progress
	return export.WriteFile(c.output, m.Program, &opts)
}

func rebake(c *config, progress func(int64, int64)) (*export.Result, error) {
	opts := &export.RebakeOptions{TargetDevice: c.targetDevice, Progress: progress}
	if c.budgetSet {
		opts.WeightStreamingBudget, opts.ClearBudget = budgetOption(c)
	}
	if c.alignmentSet {
		opts.SegmentAlignment = c.alignment
	}
	return export.Rebake(c.from, c.output, opts)
}

// summary is the --json output.
type summary struct {
	Output       string          `json:"output"`
	Size         int64           `json:"size"`
	Methods      []methodSummary `json:"methods"`
	Delegates    int             `json:"delegates"`
	Blobs        int             `json:"blobs"`
	Budget       *int64          `json:"weight_streaming_budget"`
	TargetDevice *string         `json:"target_device"`
	Warnings     []warning       `json:"warnings"`
}

type methodSummary struct {
	Name         string `json:"name"`
	Delegates    int    `json:"delegates"`
	PlannedBytes int64  `json:"planned_bytes"`
}

type warning struct {
	Kind    string `json:"kind"`
	Method  string `json:"method,omitempty"`
	Message string `json:"message"`
}

func writeSummary(w io.Writer, res *export.Result, c *config) error {
	s := summary{Output: res.Path, Size: res.Size, Delegates: res.Delegates, Blobs: res.Blobs,
		Budget: res.Budget, Methods: []methodSummary{}, Warnings: []warning{}}
	if c.targetDevice != "" {
		s.TargetDevice = &c.targetDevice
	}
	for _, m := range res.Methods {
		s.Methods = append(s.Methods, methodSummary{Name: m.Name, Delegates: m.Delegates, PlannedBytes: m.PlannedBytes})
	}
	for _, x := range res.Warnings {
		s.Warnings = append(s.Warnings, warning{Kind: string(x.Kind), Method: x.Method, Message: x.Msg})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// oneLine joins a multi-line error (errors.Join) into one line.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}

// progress shows write progress on stderr when it is a terminal and the
// write has taken more than a second.
type progress struct {
	w       io.Writer
	tty     bool
	start   time.Time
	printed bool
}

func newProgress(stderr io.Writer) *progress {
	p := &progress{w: stderr, start: time.Now()}
	if f, ok := stderr.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) report(written, total int64) {
	if !p.tty || time.Since(p.start) < time.Second {
		return
	}
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(written) / float64(total)
	}
	fmt.Fprintf(p.w, "\rpteexport: writing %5.1f%% (%s of %s)", pct,
		compilespec.FormatSize(written), compilespec.FormatSize(total))
	p.printed = true
}

func (p *progress) done() {
	if p.printed {
		fmt.Fprintln(p.w)
	}
}
