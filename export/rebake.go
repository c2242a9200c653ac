package export

import (
	"context"
	"fmt"
	"github.com/ptekit/ptekit/internal/quote"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/ptekit/ptekit/check"
	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/internal/atomicfile"
	"github.com/ptekit/ptekit/internal/undorecord"
	"github.com/ptekit/ptekit/pte"
)

// RebakeOptions says what Rebake changes. At least one change is needed.
type RebakeOptions struct {
	// WeightStreamingBudget, when non-nil, is written as the
	// weight_streaming_budget of every TensorRTBackend delegate; a pointer
	// to compilespec.AutoBudget removes the key from every one, restoring
	// TensorRT's automatic budget. nil keeps each delegate's.
	WeightStreamingBudget *compilespec.Budget
	// TargetDevice, when non-empty, is written verbatim as the
	// target_device of every TensorRTBackend delegate.
	TargetDevice string
	// SegmentAlignment is the alignment of segment data in the output;
	// 0 keeps the input's layout: its segments keep their offsets relative
	// to the segment base, and the base stays aligned as the input's was
	// (pte.File.SegmentAlignment: 128, ExecuTorch's default, when 128
	// reproduces the input, else the largest alignment up to 1 MiB that
	// does). When none does (a layout no alignment explains), 128 is used
	// and a WarnLayout warning says so. Either way the output is laid out
	// page-congruently (pte.WriteOptions.PageCongruent): when the head
	// grows, a base followed by segments of 64 KiB or more moves by a
	// multiple of 4096 bytes (of 64 KiB when a segment is 2 MiB or more:
	// pte.WideCongruentMin), so that their pages are copied (or shared)
	// by the kernel.
	SegmentAlignment uint64
	// Progress, when non-nil, is called as output bytes are written, with
	// the size of the input as the expected total. Writing to an object
	// store (RebakeObject), it is called after every part the store
	// holds, uploaded or copied on its side, with the output's size as the
	// total when the output is assembled in the store.
	Progress func(written, total int64)
	// NoOverwrite refuses to replace an existing output file (atomically;
	// the error wraps fs.ErrExist).
	NoOverwrite bool
	// Open is how the input is opened (its flatbuffer region limit); nil
	// gives pte.NewFile's defaults.
	Open *pte.OpenOptions
	// InPlace rewrites only the head of in (prefix, extended header,
	// tables, padding) where it is, when the re-baked program fits before
	// the segment base; out must be in or empty. See rebakeInPlace.
	InPlace bool
}

// Rebake rewrites the program in, changing only the compile specs of its
// TensorRTBackend delegates as opts says, and writes it to out atomically.
// out may be in itself under the same path (a re-bake in place); another
// name for the same file (a symbolic or hard link) is refused with an
// *InputError. Segment bytes are copied as they are (never decoded or
// re-encoded), inline delegate data stays inline, and everything else in
// the program is kept. On failure the
// input is untouched and out is not created or changed. When out is a
// symbolic link, the file it points to is replaced.
//
// An input is checked as `pteinspect --verify` checks it (check.Program):
// one with an error is refused, whether the reader finds it (a program
// ExecuTorch would refuse to load or whose methods would fail to load) or
// a TensorRTBackend delegate's checks do (a blob the backend's init
// refuses or the deployed reader reads otherwise than it says, a
// weight_streaming_budget key given twice or malformed); the *Error names
// the method and its message the delegate. The input's warnings are
// returned as WarnInput warnings.
//
// A delegate is a TensorRTBackend delegate when its id names that backend
// as a C string (as ExecuTorch looks backends up; bytes from a NUL on do
// not count). For each TensorRTBackend delegate a budget is set in place of the
// existing weight_streaming_budget entry or, when there is none, inserted before
// target_device, which is the order upstream writes; a target device is set
// the same way, or appended.
func Rebake(in, out string, opts *RebakeOptions) (*Result, error) {
	return RebakeContext(context.Background(), in, out, opts)
}

// RebakeContext is Rebake with a context: when ctx is done before the
// output is in place, the write stops, nothing is left behind and the
// error wraps context.Cause(ctx).
func RebakeContext(ctx context.Context, in, out string, opts *RebakeOptions) (*Result, error) {
	return rebake(ctx, in, out, opts, nil)
}

// rebake is RebakeContext with a hook that may wrap the segment sources
// (tests use it to make a source fail mid-write).
func rebake(ctx context.Context, in, out string, opts *RebakeOptions, wrap func([]*io.SectionReader) []*io.SectionReader) (res *Result, err error) {
	opts, budget, err := checkRebakeOptions(opts)
	if err != nil {
		return nil, err
	}
	if opts.InPlace {
		return rebakeInPlace(ctx, in, out, opts, budget)
	}
	// An undo record that an interrupted in-place re-bake left beside in
	// is reported, never applied: only an in-place re-bake (above) and
	// RecoverInPlace apply one.
	undo := undorecord.Probe(in)
	defer func() { res, err = noteUndo(undo, in, res, err) }()

	// The output first: one that cannot be written fails before any work.
	// Re-baking in place (out names in by the same path) is allowed, and
	// safe since the input is read before the output replaces it; another
	// name for the input is refused as a likely mistake.
	dst, err := atomicfile.CreateContext(ctx, out, &atomicfile.Options{NoOverwrite: opts.NoOverwrite, InPlace: in})
	if err != nil {
		return nil, err
	}
	defer dst.Abort()

	fin, st, err := openRegular(in)
	if err != nil {
		return nil, fmt.Errorf("export: rebake: %w", err)
	}
	defer fin.Close()
	f, err := pte.NewFileWith(fin, st.Size(), opts.Open)
	if err != nil {
		return nil, fmt.Errorf("export: rebake: %s: %w", in, err)
	}
	defer f.Close()
	return rebakeOpen(ctx, f, in, dst, out, opts, budget, wrap)
}

// RebakeFile is RebakeContext for a program already open, such as one
// read over HTTP with pte.OpenURL: its segments are streamed from f to out
// once. name names the input in messages and warnings. out may not exist
// unless opts allow it; f is not closed. A program whose reader says it is
// not pinned to one version (an *httprange.Reader of a server without a
// strong validator, whose Pinned is false) is refused before anything is
// written: its reads could come from two versions.
func RebakeFile(ctx context.Context, f *pte.File, name, out string, opts *RebakeOptions) (*Result, error) {
	opts, budget, err := checkOpenRebake(f, name, opts)
	if err != nil {
		return nil, err
	}
	dst, err := atomicfile.CreateContext(ctx, out, &atomicfile.Options{NoOverwrite: opts.NoOverwrite})
	if err != nil {
		return nil, err
	}
	defer dst.Abort()
	return rebakeOpen(ctx, f, name, dst, out, opts, budget, nil)
}

// checkOpenRebake checks the options of a re-bake of an open program f
// (named name) that is written to a new output (RebakeFile,
// RebakeObject) and returns them (the defaults for nil) with the budget
// to write. Such a re-bake cannot be in place, and is refused from a
// reader that is not pinned to one version: the output is assembled from
// many reads of f, over HTTP each a request, and only a pinned reader
// makes them all one version.
func checkOpenRebake(f *pte.File, name string, opts *RebakeOptions) (*RebakeOptions, *compilespec.Budget, error) {
	opts, budget, err := checkRebakeOptions(opts)
	if err != nil {
		return nil, nil, err
	}
	if opts.InPlace {
		return nil, nil, newError("", "", fmt.Sprintf("%s is not a local file; an in-place re-bake needs one", name), nil)
	}
	if p, ok := f.ReaderAt().(interface{ Pinned() bool }); ok && !p.Pinned() {
		return nil, nil, newError("", "", fmt.Sprintf("%s is not pinned to one version (the server gives no strong validator): "+
			"a re-bake from it could mix two versions; open it with httprange.Options.RequirePinned, or download it first", name), nil)
	}
	return opts, budget, nil
}

// rebakeOpen is the re-bake of an open program f into dst, which the caller
// aborts unless this commits it.
func rebakeOpen(ctx context.Context, f *pte.File, in string, dst *atomicfile.File, out string, opts *RebakeOptions, budget *compilespec.Budget, wrap func([]*io.SectionReader) []*io.SectionReader) (*Result, error) {
	res, prog, err := rebakeProgram(f, in, opts, budget)
	if err != nil {
		return nil, err
	}

	segs, wopts, err := rebakeLayout(f, in, opts, prog, res)
	if err != nil {
		return nil, err
	}
	if wrap != nil {
		segs = wrap(segs)
	}
	size, err := writeOutput(ctx, dst, f.Size, opts.Progress, func(w *os.File) (int64, error) {
		// Not Strict: the input was verified above and refused on an
		// Error, and only its compile specs change.
		return writeProgram(w, prog, segs, wopts)
	})
	if err != nil {
		return nil, fmt.Errorf("export: rebake: writing %s: %w", out, err)
	}
	res.Path = out
	res.Size = size
	return res, nil
}

// rebakeLayout returns the segment sources of f and how a re-bake writes
// prog (the re-baked program of f) with them: the input's alignment and
// head room (with a warning in res when no alignment reproduces its
// layout) unless opts give an alignment, page-congruently. Every re-bake
// that writes a new object, a file or a store's, lays it out here.
func rebakeLayout(f *pte.File, in string, opts *RebakeOptions, prog *pte.Program, res *Result) ([]*io.SectionReader, *pte.WriteOptions, error) {
	segs, err := f.SegmentReaders()
	if err != nil {
		return nil, nil, fmt.Errorf("export: rebake: %w", err)
	}
	res.Blobs = countBlobs(prog)
	align, room := opts.SegmentAlignment, uint64(0)
	if align == 0 {
		var ok bool
		// The input's head room (Options.HeadRoom at its export) is kept
		// with its alignment, so a later in-place re-bake still fits.
		room = f.HeadRoom()
		if align, ok = f.SegmentAlignment(); !ok {
			res.Warnings = append(res.Warnings, Warning{Kind: WarnLayout, Msg: fmt.Sprintf(
				"%s: no segment alignment up to %d reproduces its segment layout (another writer's, or gaps between segments); segments are re-laid at %d bytes",
				in, MaxSegmentAlignment, align)})
		}
	}
	return segs, &pte.WriteOptions{SegmentAlignment: align, HeadRoom: room, PageCongruent: true, CongruentAnyReader: true, EarlyWriteback: true}, nil
}

// rebakeProgram verifies f (read from in) and returns the program re-baked
// as opts says (budget is the one to write, AutoBudget to clear it, nil to
// keep each delegate's), with
// a Result holding its warnings and summary.
func rebakeProgram(f *pte.File, in string, opts *RebakeOptions, budget *compilespec.Budget) (*Result, *pte.Program, error) {
	res := &Result{}
	if err := verifyInput(f, in, res); err != nil {
		return nil, nil, err
	}

	prog := cloneForRebake(f)
	for i, ep := range prog.Plans() {
		if ep == nil {
			continue
		}
		n := 0
		for j, d := range ep.Delegates {
			if d == nil || !delegate.IsTensorRT(d.ID) {
				continue
			}
			n++
			specs := d.CompileSpecs
			switch {
			case budget == nil:
			case budget.IsAuto():
				specs, _ = compilespec.Delete(specs, compilespec.KeyWeightStreamingBudget)
			default:
				specs = compilespec.Set(specs, compilespec.KeyWeightStreamingBudget, budget.Spec())
			}
			if opts.TargetDevice != "" {
				specs = compilespec.Set(specs, compilespec.KeyTargetDevice, []byte(opts.TargetDevice))
				res.Warnings = append(res.Warnings, rebakeDeviceWarnings(f, i, j, opts.TargetDevice)...)
			}
			d.CompileSpecs = specs
		}
		if budget != nil {
			res.Warnings = append(res.Warnings, engineCountWarnings(ep.Name, n, *budget, false)...)
		}
	}
	res.Warnings = append(res.Warnings, summarize(prog, res)...)
	if res.Delegates == 0 {
		return nil, nil, newError("", "", fmt.Sprintf("%s has no %s delegate; nothing to re-bake", in, delegate.BackendID), nil)
	}
	return res, prog, nil
}

// checkRebakeOptions refuses options that ask for nothing or for
// something invalid, and returns them (the defaults for nil) with the
// budget to write (AutoBudget to clear it, nil to keep each delegate's).
func checkRebakeOptions(opts *RebakeOptions) (*RebakeOptions, *compilespec.Budget, error) {
	if opts == nil {
		opts = &RebakeOptions{}
	}
	budget := opts.WeightStreamingBudget
	if budget == nil && opts.TargetDevice == "" {
		return nil, nil, newError("", "", "nothing to change: give a budget, clear it, or give a target device", nil)
	}
	if opts.TargetDevice != "" {
		if err := checkTargetDevice([]byte(opts.TargetDevice)); err != nil {
			return nil, nil, newError("", "", "bad target device", err)
		}
	}
	if err := checkAlignment(opts.SegmentAlignment); err != nil {
		return nil, nil, err
	}
	return opts, budget, nil
}

// verifyInput refuses an input that check.Program, the verdict
// `pteinspect --verify` prints, finds an error in: re-baking would only copy
// a program that ExecuTorch refuses, or whose methods would fail to load
// (a TensorRT blob the backend's init refuses, a budget key it refuses),
// and no new budget changes that. The *Error names the method, and the
// path names the delegate. Its warnings become WarnInput warnings in res.
func verifyInput(f *pte.File, in string, res *Result) error {
	probs, err := check.Program(f)
	if err != nil {
		return fmt.Errorf("export: rebake: %s: %w", in, err)
	}
	first, n, bad := check.FirstError(probs)
	if !bad {
		for _, p := range probs {
			res.Warnings = append(res.Warnings, Warning{Kind: WarnInput, Method: p.Method, Msg: in + ": " + problemText(p)})
		}
		return nil
	}
	more := ""
	if n > 1 {
		more = fmt.Sprintf(" (and %d more)", n-1)
	}
	return newError(first.Method, "", fmt.Sprintf(
		"%s fails verification, so it is not re-baked (ExecuTorch would refuse it; pteinspect --verify lists every problem): %s%s",
		in, problemText(first), more), nil)
}

// problemText is a problem without its severity and method, which the
// message around it gives: "PATH: MESSAGE (at byte N) [CODE]".
func problemText(p check.Problem) string {
	p.Severity, p.Method = "", ""
	return strings.TrimPrefix(p.String(), ": ")
}

// rebakeDeviceWarnings warns when the target device pinned by a re-bake
// disagrees with the device_id in delegate j's blob of plan i.
func rebakeDeviceWarnings(f *pte.File, i, j int, pin string) []Warning {
	name := f.Program.PlanName(i)
	label := fmt.Sprintf("delegates[%d]", j)
	p, err := f.DelegateData(i, j)
	if err == nil {
		var blob *delegate.Blob
		if blob, err = delegate.Decode(p, p.Size()); err == nil {
			return deviceWarnings(name, label, []byte(pin), blob.Metadata.DeviceID)
		}
	}
	return []Warning{{Kind: WarnDeviceMismatch, Method: name, Msg: fmt.Sprintf(
		"engine %s: cannot read the blob's device_id to compare it with target_device %s: %v", label, quote.String(pin), err)}}
}

// cloneForRebake returns f's program with its plans, copying the parts
// Rebake changes: the plans' delegate lists and their compile spec lists.
// Everything else is shared with f.
func cloneForRebake(f *pte.File) *pte.Program {
	cp := *f.Program
	plans := make([]*pte.ExecutionPlan, 0, f.Program.NumPlans())
	for _, ep := range f.Program.Plans() {
		if ep == nil {
			plans = append(plans, nil)
			continue
		}
		e := *ep
		e.Delegates = slices.Clone(ep.Delegates)
		for j, d := range e.Delegates {
			if d == nil {
				continue
			}
			dd := *d
			dd.CompileSpecs = slices.Clone(d.CompileSpecs)
			e.Delegates[j] = &dd
		}
		plans = append(plans, &e)
	}
	cp.SetPlans(plans)
	return &cp
}

func plannedBytes(ep *pte.ExecutionPlan) int64 {
	return compilespec.AddSizes(ep.NonConstBufferSizes...)
}

// countBlobs counts the distinct delegate payloads of TensorRT delegates.
func countBlobs(p *pte.Program) int {
	type ref struct {
		loc pte.DataLocation
		idx uint32
	}
	seen := map[ref]bool{}
	for _, ep := range p.Plans() {
		for _, d := range ep.Delegates {
			if d != nil && delegate.IsTensorRT(d.ID) && d.Processed != nil {
				seen[ref{d.Processed.Location, d.Processed.Index}] = true
			}
		}
	}
	return len(seen)
}
