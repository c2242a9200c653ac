package export

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/internal/atomicfile"
	"github.com/ptekit/ptekit/internal/batch"
	"github.com/ptekit/ptekit/pte"
)

// MaxInlineDelegateData is the most delegate data, in bytes over all
// blobs, that Write stores inline (Options.InlineDelegateData). Inline data
// lives inside the flatbuffer, which is built in memory: writing holds about
// three times the payload (the blobs read, the flatbuffer builder, its
// output), and ExecuTorch loads the whole flatbuffer to run any method.
// Larger payloads belong in segments, which are streamed.
const MaxInlineDelegateData = 256 << 20

// Write writes p, built with opts (nil means defaults), as a .pte program to
// w. Engine bytes are streamed from their sources.
func Write(w io.Writer, p *Program, opts *Options) (*Result, error) {
	b, err := build(p, opts)
	if err != nil {
		return nil, err
	}
	defer b.close()
	size, err := b.writeTo(w, false)
	if err != nil {
		return nil, fmt.Errorf("export: writing the program: %w", err)
	}
	b.result.Size = size
	return b.result, nil
}

// WriteFile writes p to path atomically (see internal/atomicfile): path
// never holds a partial program, and a failed or interrupted write leaves
// nothing behind. An existing file at path is replaced (unless
// Options.NoOverwrite); when path is a symbolic link, the file it points
// to is replaced. An output that is one of the program's engine or blob
// files, or one of Options.Inputs, is refused with an *InputError.
func WriteFile(path string, p *Program, opts *Options) (*Result, error) {
	return WriteFileContext(context.Background(), path, p, opts)
}

// WriteFileContext is WriteFile with a context: when ctx is done before
// the program is in place, the write stops, nothing is left behind and the
// error wraps context.Cause(ctx).
func WriteFileContext(ctx context.Context, path string, p *Program, opts *Options) (*Result, error) {
	o := &atomicfile.Options{}
	if opts != nil {
		o.NoOverwrite, o.Inputs = opts.NoOverwrite, slices.Clone(opts.Inputs)
	}
	o.Inputs = append(o.Inputs, sourceFiles(p)...)
	// The output first: one that cannot be written fails before any work.
	out, err := atomicfile.CreateContext(ctx, path, o)
	if err != nil {
		return nil, err
	}
	defer out.Abort()
	b, err := build(p, opts)
	if err != nil {
		return nil, err
	}
	defer b.close()
	size, err := writeOutput(ctx, out, b.total, b.progress, func(f *os.File) (int64, error) { return b.writeTo(f, true) })
	if err != nil {
		return nil, fmt.Errorf("export: writing %s: %w", path, err)
	}
	b.result.Path = path
	b.result.Size = size
	return b.result, nil
}

// sourceFiles lists the engine and blob files p reads.
func sourceFiles(p *Program) []string {
	var files []string
	if p == nil {
		return nil
	}
	for _, m := range p.Methods {
		if m == nil {
			continue
		}
		for _, c := range m.Calls {
			if c != nil && c.Engine.Path != "" {
				files = append(files, c.Engine.Path)
			}
		}
	}
	return files
}

// built is a program ready to be written.
type built struct {
	prog     *pte.Program
	segments []*io.SectionReader
	align    uint64
	headRoom uint64 // Options.HeadRoom in bytes
	result   *Result
	total    int64 // expected output size, for progress
	progress func(written, total int64)
	files    fileSet
	held     int64  // bytes of engine files held in memory
	scratch  []byte // a small engine read to take its sum
	spool    *engineSpool
	spooled  bool // the spool was asked for (it may be nil)
	dir      engineDir
	hash     hash.Hash         // the sums of small engines' blobs
	meta     delegate.Metadata // a call's blob metadata, made in place (blobFor)
	// The last blob prefix made, of lastMeta and an engine of lastSize
	// bytes (see prefix).
	lastMeta   *delegate.Metadata
	lastSize   int64
	lastPrefix []byte
}

// writeTo writes the program to w and returns its size. The program is
// new, so it is written only if pte.Verify would find no error in it: a
// file the exporter writes must load. synced says w is a file that will be
// synced (WriteFile's), whose writeback may start early. It is called
// once: b lets go of the program's model, so that the collector can free
// it once it is encoded, while pte.Write reads the encoding back to check
// it (at 65,536 engines the model is about a third of the live heap).
func (b *built) writeTo(w io.Writer, synced bool) (int64, error) {
	prog := b.prog
	b.prog = nil
	defer holdBuildMemory(len(prog.BackendDelegateData) > 0)()
	return writeProgram(w, prog, b.segments, &pte.WriteOptions{SegmentAlignment: b.align, HeadRoom: b.headRoom, Strict: true, PageCongruent: true, EarlyWriteback: synced})
}

// writeProgram is pte.Write returning the size written.
func writeProgram(w io.Writer, prog *pte.Program, segs []*io.SectionReader, o *pte.WriteOptions) (int64, error) {
	info, err := pte.Write(w, prog, segs, o)
	if err != nil {
		return 0, err
	}
	return info.Size, nil
}

func (b *built) close() {
	b.files.close()
	b.spool.close()
	b.dir.close()
}

// collectAbove is the heap (what the process holds, less what it gave
// back) past which holdBuildMemory collects: low enough for an export of
// 16,384 engines of 1 KiB (peak memory per engine 4.5-5.0 -> 4.0-4.2 KiB,
// CPU time within the noise), which 64 MiB was not.
const collectAbove = 24 << 20

// buildMemory is held by the export whose holdBuildMemory set the
// process's memory limit; another export meanwhile does without.
var buildMemory sync.Mutex

// holdBuildMemory collects the build's garbage before a large program is
// encoded, when the process holds more than collectAbove, and until done
// is called keeps it from holding more than it does then: a memory limit
// (debug.SetMemoryLimit) at that size makes the runtime give free pages
// back as the encoder, the check and the copy take new ones, instead of
// holding both (at 65,536 engines 60-80 MB of peak RSS). A limit a caller
// set lower is kept. Not debug.FreeOSMemory: on a heap of huge pages
// (internal/cli.ReadyHeap) it splits those still holding live data, whose
// pages are then slow at their next touch (about 10% more CPU). A program
// with inline data is only collected: the encoder copies that data, and a
// limit the heap has to pass makes the collector run again and again. The
// limit is process-wide, so it is set only in a process whose main asked
// for batch tuning (internal/batch).
func holdBuildMemory(inline bool) (done func()) {
	ms := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(ms)
	if ms[0].Value.Kind() != metrics.KindUint64 || ms[1].Value.Kind() != metrics.KindUint64 {
		return func() {}
	}
	held := int64(ms[0].Value.Uint64() - ms[1].Value.Uint64())
	if held <= collectAbove {
		return func() {}
	}
	runtime.GC()
	if inline || !batch.Enabled() || !buildMemory.TryLock() {
		return func() {}
	}
	old := debug.SetMemoryLimit(-1) // reads it
	if held >= old {
		buildMemory.Unlock()
		return func() {}
	}
	debug.SetMemoryLimit(held)
	return func() {
		debug.SetMemoryLimit(old)
		buildMemory.Unlock()
	}
}

// source is an engine or blob source.
type source struct {
	r    io.ReaderAt
	size int64
	// sum is the SHA-256 of the bytes of a small engine file, read when
	// it was opened and not held (readSmallEngine); summed says it is set.
	sum    [sha256.Size]byte
	summed bool
}

// checkBlob reads the passed-through blob of m.Calls[i] the ways
// delegate.Check does and returns its strict reading. The bytes are stored
// as they are, so what matters is what the readers make of these bytes,
// not what a writer would have made of their metadata: the blob is refused
// when it is invalid, when the deployed C++ reader reads it differently
// from its metadata or rejects it, and when TensorRTBackend init would fail
// on a property both readers agree on (see refusedHazard).
func checkBlob(m *Method, i int, s *source) (*delegate.Blob, error) {
	rep, err := delegate.Check(s.r, s.size)
	if err != nil {
		return nil, callError(m, i, "", "cannot read the TensorRT blob", err)
	}
	if rep.Err != nil {
		return nil, callError(m, i, "", "not a valid TensorRT blob", rep.Err)
	}
	var refused []delegate.Hazard
	for _, h := range rep.Hazards {
		if refusedHazard(h.Kind) {
			refused = append(refused, h)
		}
	}
	if len(refused) == 0 && !rep.Deployed.OK {
		// Every rejection is a HazardDeployedRejects; this is a backstop.
		refused = append(refused, delegate.Hazard{Kind: delegate.HazardDeployedRejects,
			Msg: "the deployed reader rejects this blob (" + rep.Deployed.Reason + ")"})
	}
	if len(refused) > 0 {
		return nil, callError(m, i, "", "the blob would not load as its metadata says", &BlobHazardError{Hazards: refused})
	}
	return rep.Blob, nil
}

// refusedHazard reports whether a passed-through blob with a hazard of kind
// k is refused: every disagreement between the blob's metadata and the
// deployed C++ reader (including its rejecting the blob), a binding name
// used twice (TensorRT binds both to one tensor), and the properties both
// readers agree on that make TensorRTBackend init fail: an aliased_io entry
// it refuses and a negative device id (refused here even when a pinned
// target_device means the id is not otherwise looked at). Properties the
// runtime copes with (trailing bytes, a magic that does not match the
// metadata, no binding names) pass.
func refusedHazard(k delegate.HazardKind) bool {
	switch k {
	case delegate.HazardDuplicateName, delegate.HazardAliasedIOInvalid, delegate.HazardNegativeDeviceID:
		return true
	}
	return k.Disagreement()
}

// BlobHazardError is the cause of an *Error refusing a passed-through blob
// (SourceBlob) that the deployed runtime would not load as its metadata
// says: it lists the hazards, as delegate.Check reports them, for which
// the blob is refused.
type BlobHazardError struct {
	Hazards []delegate.Hazard
}

// Error names each hazard's kind and describes it:
// `outputs: outputs differ: ...; duplicate-name: ...`.
func (e *BlobHazardError) Error() string {
	parts := make([]string, len(e.Hazards))
	for i, h := range e.Hazards {
		parts[i] = h.Kind.String() + ": " + h.Msg
	}
	return strings.Join(parts, "; ")
}

// blobEntry is the delegate blob of one engine call.
type blobEntry struct {
	sr  *io.SectionReader
	del *pte.BackendDelegate // the delegate whose data it is
	// sum, when summed, names the blob's bytes: the SHA-256 of its
	// prefix (header, metadata, padding) and of its engine's SHA-256
	// (see blobSum); dedupBlobs compares blobs by it without reading them.
	sum    [sha256.Size]byte
	summed bool
	// method, call and callName name the call in an error reading the
	// blob (dedupBlobs): names, not the call's methodDef, which the build lets
	// go of once the method is planned.
	method, callName string
	call             int
}

func build(p *Program, opts *Options) (_ *built, err error) {
	if opts == nil {
		opts = &Options{}
	}
	b := &built{align: opts.SegmentAlignment, progress: opts.Progress}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	sp, err := newSpecPlan(opts)
	if err != nil {
		return nil, err
	}
	if err := checkAlignment(opts.SegmentAlignment); err != nil {
		return nil, err
	}
	if r := opts.HeadRoom; r < NoHeadRoom || r > 0 && r < pte.MinHeadRoom || r > pte.MaxHeadRoom {
		return nil, newError("", "", fmt.Sprintf("head room %d is out of range: %d (1 KiB) to %d (1 GiB) bytes, or none", r, pte.MinHeadRoom, pte.MaxHeadRoom), nil)
	}
	if p == nil || len(p.Methods) == 0 {
		return nil, newError("", "", "the program has no methods", nil)
	}
	eng, err := b.readEngines(p)
	if err != nil {
		return nil, err
	}
	b.spool.seal()
	mds, err := resolve(p, eng.blobs)
	if err != nil {
		return nil, err
	}
	prog, res, entries, err := b.planMethods(mds, eng, sp)
	if err != nil {
		return nil, err
	}
	if entries, err = dedupBlobs(entries); err != nil {
		return nil, err
	}
	res.Blobs = len(entries)
	res.Warnings = append(res.Warnings, summarize(prog, res)...)
	if err := b.place(prog, entries, opts); err != nil {
		return nil, err
	}
	b.prog = prog
	b.result = res
	switch {
	case opts.HeadRoom == 0:
		b.headRoom = DefaultHeadRoom(res.Delegates)
	case opts.HeadRoom > 0:
		b.headRoom = uint64(opts.HeadRoom)
	}
	return b, nil
}

// engines is what build learns by reading each call's engine source.
type engines struct {
	srcs    map[*EngineCall]*source
	blobs   map[*EngineCall]*blobMeta      // passed-through blobs only
	decoded map[*EngineCall]*delegate.Blob // passed-through blobs only
}

// readEngines opens the engine source of every call (one source per path;
// engine files are opened one at a time, see fileSet, so any number of them
// can be exported) and decodes and checks the passed-through blobs.
func (b *built) readEngines(p *Program) (*engines, error) {
	defer b.dir.close() // the writer opens no file relative to it
	// Sized once: growing maps of 100,000 engines showed in the profile.
	calls := 0
	for _, m := range p.Methods {
		if m != nil {
			calls += len(m.Calls)
		}
	}
	files := make(map[string]*source, calls)
	eng := &engines{
		srcs:    make(map[*EngineCall]*source, calls),
		blobs:   map[*EngineCall]*blobMeta{},
		decoded: map[*EngineCall]*delegate.Blob{},
	}
	for _, m := range p.Methods {
		if m == nil {
			continue
		}
		for i, c := range m.Calls {
			if c == nil {
				continue
			}
			s, err := b.open(c.Engine, files)
			if err != nil {
				return nil, callError(m, i, "", "cannot read the engine source", err)
			}
			if s.size == 0 {
				return nil, callError(m, i, "", "the engine is empty (0 bytes)", nil)
			}
			eng.srcs[c] = s
			if c.Engine.Kind == SourceBlob {
				blob, err := checkBlob(m, i, s)
				if err != nil {
					return nil, err
				}
				if blob.Header.EngineSize == 0 {
					return nil, callError(m, i, "", "the blob's engine is empty (0 bytes)", nil)
				}
				eng.decoded[c] = blob
				eng.blobs[c] = newBlobMeta(blob)
			}
		}
	}
	return eng, nil
}

// newBlobMeta is what resolve needs of a passed-through blob: its device
// and its bindings split into inputs and outputs, in order.
func newBlobMeta(blob *delegate.Blob) *blobMeta {
	meta := &blobMeta{deviceID: blob.Metadata.DeviceID}
	for _, bd := range blob.Metadata.IOBindings {
		if bd.IsInput {
			meta.inputs = append(meta.inputs, bd)
		} else {
			meta.outputs = append(meta.outputs, bd)
		}
	}
	return meta
}

// planMethods builds the execution plan of each resolved method and one
// blob entry per call, in call order, with the call's compile specs.
func (b *built) planMethods(mds []*methodDef, eng *engines, sp *specPlan) (*pte.Program, *Result, []*blobEntry, error) {
	res := &Result{}
	var entries []*blobEntry
	prog := &pte.Program{
		ConstantBuffer:      []*pte.Buffer{},
		BackendDelegateData: []*pte.BackendDelegateInlineData{},
		ConstantSegment:     &pte.SubsegmentOffsets{SegmentIndex: 0, Offsets: []uint64{0}},
	}
	var plans []*pte.ExecutionPlan
	var arena planArena // one for every method, reset for each
	var tabs planTables
	// The last delegate's compile specs, shared by the next delegates
	// made of equal specs on the same device (they are only read):
	// three allocations per delegate, at 65,536 one-engine methods.
	var last struct {
		specs, extra []*pte.CompileSpec
		device       int64
	}
	for mi, md := range mds {
		// What is left of the method once it is planned is in prog and
		// the entries: the build lets go of its methodDef and of its
		// calls' sources in eng, so that the methods planned so far and
		// the plans made so far are not all live at once.
		mds[mi] = nil
		arena.reset()
		if err := arena.plan(md); err != nil {
			return nil, nil, nil, err
		}
		extra, pin, err := methodSpecs(md.m, sp)
		if err != nil {
			return nil, nil, nil, err
		}
		res.Warnings = append(res.Warnings, methodWarnings(md, pin, sp)...)
		// From here on the plan needs the method's name alone, and each
		// call until its blob is made: the program read from a manifest
		// is let go of call by call (a method of 65,536 calls holds
		// 40 MB of them).
		md.m = &Method{Name: md.m.Name}
		dels := tabs.delegates.Make(len(md.calls))[:0] // present even when empty: the runtime requires it
		for _, cd := range md.calls {
			e, err := b.blobFor(md, cd, eng.srcs[cd.call], eng.decoded[cd.call])
			delete(eng.srcs, cd.call)
			delete(eng.decoded, cd.call)
			delete(eng.blobs, cd.call)
			cd.call = nil
			if err != nil {
				return nil, nil, nil, err
			}
			specs := last.specs
			if specs == nil || cd.deviceID != last.device || !sameSpecs(extra, last.extra) {
				if specs, err = delegateSpecs(extra, sp, cd.deviceID); err != nil {
					return nil, nil, nil, cd.err(md.m, "", "cannot derive target_device from the engine's device", err)
				}
				last.specs, last.extra, last.device = specs, extra, cd.deviceID
			}
			dt := tabs.delegate.New()
			dt.d = pte.BackendDelegate{ID: delegate.BackendID, Processed: &dt.ref, CompileSpecs: specs}
			e.del = &dt.d
			e.method, e.call, e.callName = md.m.Name, cd.index, cd.name
			entries = append(entries, e)
			dels = append(dels, e.del)
		}
		plans = append(plans, executionPlan(md, dels, &tabs))
	}
	prog.SetPlans(plans)
	return prog, res, entries, nil
}

// place puts the deduplicated blobs in segments after the constant segment
// (index 0, empty, as upstream writes it), or inline with
// opts.InlineDelegateData, and points each delegate at its data.
func (b *built) place(prog *pte.Program, entries []*blobEntry, opts *Options) error {
	b.segments = []*io.SectionReader{io.NewSectionReader(bytes.NewReader(nil), 0, 0)}
	var inline int64
	for _, e := range entries {
		if opts.InlineDelegateData {
			inline += e.sr.Size()
			if inline > MaxInlineDelegateData {
				return newError("", "", fmt.Sprintf(
					"inline delegate data totals more than %d bytes (256 MiB), which is built in memory about three times over; store it in segments (drop the inline option), which are streamed",
					MaxInlineDelegateData), nil)
			}
			data := make([]byte, e.sr.Size())
			if _, err := e.sr.ReadAt(data, 0); err != nil && !(errors.Is(err, io.EOF) && len(data) == 0) {
				return newError("", "", "cannot read delegate data", err)
			}
			prog.BackendDelegateData = append(prog.BackendDelegateData, &pte.BackendDelegateInlineData{Data: data})
			continue
		}
		b.segments = append(b.segments, e.sr)
	}
	// The expected size, for progress: segment bytes with their padding,
	// and the flatbuffer, which holds little beyond inline data.
	align := int64(cmp.Or(opts.SegmentAlignment, pte.DefaultSegmentAlignment))
	b.total = inline + 4096
	for _, s := range b.segments {
		b.total += s.Size() + align
	}
	for _, ep := range prog.Plans() {
		for _, d := range ep.Delegates {
			if opts.InlineDelegateData {
				d.Processed.Location = pte.DataLocationINLINE
			} else {
				d.Processed.Location = pte.DataLocationSEGMENT
				d.Processed.Index++ // after the constant segment
			}
		}
	}
	return nil
}

// Engine files up to maxHeldEngine bytes are small. On Linux a small
// engine is read once when it is opened, to take its SHA-256, by which
// dedupBlobs compares it, and again when it is written, with raw system
// calls (see readSmallEngine): holding them instead was a quarter of the
// peak memory of an export of 65,536 engines of 1 KiB. Elsewhere, and
// for passed-through blobs (read several times to check them), small
// files are held in memory, up to maxHeldEngines bytes in all.
const maxHeldEngine = 16 << 10

// maxHeldEngines is a variable so that tests can reach past it.
var maxHeldEngines int64 = 64 << 20

// open returns the source of s, one per path. A file is checked (a
// regular file, readable) and then read through b.files, which keeps one
// engine file open at a time.
func (b *built) open(s Source, files map[string]*source) (*source, error) {
	switch {
	case s.Path != "" && s.ReaderAt != nil:
		return nil, errors.New("source has both a path and a reader")
	case s.Path != "":
		if src, ok := files[s.Path]; ok {
			return src, nil
		}
		src, err := b.openPath(s)
		if err != nil {
			return nil, err
		}
		files[s.Path] = src
		return src, nil
	case s.ReaderAt != nil:
		if s.Size < 0 {
			return nil, fmt.Errorf("negative size %d", s.Size)
		}
		return &source{r: s.ReaderAt, size: s.Size}, nil
	default:
		return nil, errors.New("source has neither a path nor a reader")
	}
}

// openPath opens the file of s, a path not opened before.
func (b *built) openPath(s Source) (*source, error) {
	if s.Kind == SourceEngine {
		if b.scratch == nil {
			b.scratch = make([]byte, maxHeldEngine)
		}
		if !b.spooled {
			b.spool, b.spooled = newEngineSpool(), true
		}
		sf, sum, ok, err := readSmallEngine(s.Path, maxHeldEngine, b.scratch, b.spool, &b.dir)
		if err != nil {
			return nil, err
		}
		if ok {
			return &source{r: sf, size: sf.size, sum: sum, summed: true}, nil
		}
	} else if b.held < maxHeldEngines {
		data, ok, err := readSmallFile(s.Path, min(maxHeldEngine, maxHeldEngines-b.held))
		if err != nil {
			return nil, err
		}
		if ok {
			b.held += int64(len(data))
			return &source{r: bytes.NewReader(data), size: int64(len(data))}, nil
		}
	}
	lf, err := b.files.add(s.Path)
	if err != nil {
		return nil, err
	}
	src := &source{r: lf, size: lf.size}
	if lf.size <= maxHeldEngine && b.held+lf.size <= maxHeldEngines {
		// Small: read once now, instead of once to compare it with
		// the others and once to write it.
		data := make([]byte, lf.size)
		if _, err := lf.ReadAt(data, 0); err != nil {
			return nil, err
		}
		b.held += lf.size
		src.r = bytes.NewReader(data)
	}
	return src, nil
}

// blobFor returns the delegate blob of one call.
func (b *built) blobFor(md *methodDef, cd *callDef, src *source, blob *delegate.Blob) (*blobEntry, error) {
	if blob != nil {
		return &blobEntry{sr: io.NewSectionReader(src.r, 0, src.size)}, nil
	}
	c := cd.call
	// The metadata is made in b.meta, call after call: prefix keeps a
	// copy of what it encodes.
	meta := &b.meta
	*meta = delegate.Metadata{
		IOBindings:         meta.IOBindings[:0],
		AliasedIO:          meta.AliasedIO[:0],
		HardwareCompatible: c.HardwareCompatible,
		DeviceID:           int64(c.DeviceID),
		SerializedMetadata: c.SerializedMetadata,
		TargetPlatform:     c.TargetPlatform,
	}
	for k, t := range cd.inputs {
		meta.IOBindings = append(meta.IOBindings, delegate.Binding{Name: cd.inNames[k], DType: string(t.dtype), Shape: t.shape, IsInput: true})
	}
	for k, t := range cd.outputs {
		meta.IOBindings = append(meta.IOBindings, delegate.Binding{Name: cd.outNames[k], DType: string(t.dtype), Shape: t.shape})
	}
	for _, a := range c.AliasedIO {
		meta.AliasedIO = append(meta.AliasedIO, delegate.AliasedIO{Output: a.Output, Input: a.Input, Kind: a.Kind})
	}
	// Safe-mode encoding refuses exactly the metadata no blob can carry to
	// both readers unchanged, and lays out the rest so that they read it
	// alike (an aliased name "device_id" moves the scalars first).
	// CheckNames, which assumes upstream's layout, would refuse more.
	var e *blobEntry
	var err error
	if src.summed {
		var prefix []byte
		if prefix, err = b.prefix(meta, src.size); err == nil {
			e, err = b.smallBlobEntry(prefix, src)
		}
	} else {
		var sr *io.SectionReader
		sr, err = delegate.NewBlobReader(meta, src.r, src.size)
		e = &blobEntry{sr: sr}
	}
	if err != nil {
		return nil, cd.err(md.m, "", "cannot encode the TensorRT blob", err)
	}
	return e, nil
}

// prefix is delegate.EncodeOptions.Prefix of meta and an engine of size
// bytes, in safe mode. The calls of a program mostly have the same
// metadata (the same binding names, types and shapes): a prefix the same
// as the previous call's is that one again, shared (prefixes are only
// read), and neither encoded nor checked again: 4 us and about 500 bytes
// per engine of the bench's shapes.
func (b *built) prefix(meta *delegate.Metadata, size int64) ([]byte, error) {
	if b.lastPrefix != nil && size == b.lastSize && sameMetadata(meta, b.lastMeta) {
		return b.lastPrefix, nil
	}
	prefix, err := (*delegate.EncodeOptions)(nil).Prefix(meta, size)
	if err != nil {
		return nil, err
	}
	// meta may be made again in the same memory (b.meta): keep a copy.
	// Shapes are only read.
	last := *meta
	last.IOBindings, last.AliasedIO = slices.Clone(meta.IOBindings), slices.Clone(meta.AliasedIO)
	b.lastMeta, b.lastSize, b.lastPrefix = &last, size, prefix
	return prefix, nil
}

// sameMetadata reports whether a and b are the same metadata, field by
// field (TestSameMetadataComparesEveryField keeps it complete).
func sameMetadata(a, b *delegate.Metadata) bool {
	return a.HardwareCompatible == b.HardwareCompatible && a.DeviceID == b.DeviceID &&
		a.SerializedMetadata == b.SerializedMetadata && a.TargetPlatform == b.TargetPlatform &&
		slices.Equal(a.AliasedIO, b.AliasedIO) &&
		slices.EqualFunc(a.IOBindings, b.IOBindings, func(x, y delegate.Binding) bool {
			return x.Name == y.Name && x.DType == y.DType && x.IsInput == y.IsInput && slices.Equal(x.Shape, y.Shape)
		})
}

// smallBlobEntry returns the entry of the blob of a small engine file src
// (see readSmallEngine) whose bytes before the engine are prefix
// (delegate.EncodeOptions.Prefix): the blob as a smallBlob, in about half
// the memory of delegate.NewBlobReader's reader, and its sum, the SHA-256
// of that prefix and of src's SHA-256. Two blobs have the same bytes
// exactly when their prefixes and engines are the same: the header at the
// start of the prefix gives the prefix's length, so equal blobs split alike.
func (b *built) smallBlobEntry(prefix []byte, src *source) (*blobEntry, error) {
	sf, ok := src.r.(*smallFile)
	if !ok {
		return nil, fmt.Errorf("a summed engine is not a small file (%T)", src.r)
	}
	if b.hash == nil {
		b.hash = sha256.New()
	}
	b.hash.Reset()
	b.hash.Write(prefix)
	b.hash.Write(src.sum[:])
	e := &blobEntry{summed: true}
	b.hash.Sum(e.sum[:0])
	e.sr = io.NewSectionReader(&smallBlob{prefix: prefix, engine: sf}, 0, int64(len(prefix))+src.size)
	return e, nil
}

// smallBlob is the TensorRT blob of a small engine file: its prefix in
// memory, then the file's bytes, read when the blob is written. Unlike
// the reader of delegate.NewBlobReader it does not give its parts
// (pte.Composite): the writer would copy an engine of at most
// maxHeldEngine bytes through its buffer and lay it out as any reader's
// (pte.CongruentMin is larger) either way, and making the parts cost
// eight allocations per blob.
type smallBlob struct {
	prefix []byte
	engine *smallFile
}

// ReadAt reads the blob's bytes at off; an engine file that ends early
// (it changed since it was read) is an error.
func (sb *smallBlob) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("trt blob: negative offset %d", off)
	}
	np := int64(len(sb.prefix))
	size := np + sb.engine.size
	if off >= size {
		return 0, io.EOF
	}
	n := 0
	if off < np {
		n = copy(p, sb.prefix[off:])
	}
	if n < len(p) && off+int64(n) < size {
		eoff := off + int64(n) - np
		want := int(min(int64(len(p)-n), sb.engine.size-eoff))
		k, err := sb.engine.ReadAt(p[n:n+want], eoff)
		n += k
		if k < want {
			if err == nil || err == io.EOF {
				err = fmt.Errorf("%s ended after %d of %d bytes: %w", sb.engine.path, eoff+int64(k), sb.engine.size, io.ErrUnexpectedEOF)
			}
			return n, err
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// dedupBlobs stores blobs with the same bytes once (pte.DedupPayloads):
// it points each delegate at its blob's position among the distinct ones
// and returns those.
func dedupBlobs(entries []*blobEntry) ([]*blobEntry, error) {
	if out, ok := dedupSummed(entries); ok {
		return out, nil
	}
	srs := make([]*io.SectionReader, len(entries))
	for i, e := range entries {
		srs[i] = e.sr
	}
	remap, unique, err := pte.DedupPayloads(srs)
	if err != nil {
		if se, ok := errors.AsType[*pte.SegmentError](err); ok && se.Index < len(entries) {
			e := entries[se.Index] // the error is its call's
			return nil, &Error{Method: e.method, CallIndex: e.call, Call: e.callName, Msg: "cannot compare engine bytes", Err: se.Err}
		}
		return nil, newError("", "", "cannot compare engine bytes", err)
	}
	for i, e := range entries {
		e.del.Processed.Index = uint32(remap[i])
	}
	out := make([]*blobEntry, len(unique))
	for k, i := range unique {
		out[k] = entries[i]
	}
	return out, nil
}

// dedupSummed is dedupBlobs when every blob has its sum (small engine
// files, see readSmallEngine): blobs of the same size and sum are the
// same, as pte.DedupPayloads would find by reading them (it too compares
// by SHA-256). ok is false, with nothing done, when a blob has none.
func dedupSummed(entries []*blobEntry) (out []*blobEntry, ok bool) {
	type key struct {
		size int64
		sum  [sha256.Size]byte
	}
	for _, e := range entries {
		if !e.summed {
			return nil, false
		}
	}
	first := make(map[key]uint32, len(entries))
	for _, e := range entries {
		k := key{e.sr.Size(), e.sum}
		i, dup := first[k]
		if !dup {
			i = uint32(len(out))
			first[k] = i
			out = append(out, e)
		}
		e.del.Processed.Index = i
	}
	return out, true
}

// openRegular opens path for reading after checking that it is a regular
// file, so that a FIFO or a device is refused instead of blocking the open
// or reading forever; the opened file is checked to be the file inspected.
func openRegular(path string) (*os.File, os.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file (%s)", path, fileKind(st.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	fst, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !os.SameFile(st, fst) {
		f.Close()
		return nil, nil, fmt.Errorf("%s changed while it was opened", path)
	}
	return f, fst, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	default:
		return "mode " + m.String()
	}
}

// checkAlignment refuses a segment alignment above MaxSegmentAlignment.
func checkAlignment(a uint64) error {
	if a > MaxSegmentAlignment {
		return newError("", "", fmt.Sprintf("segment alignment %d exceeds %d (1 MiB): each segment would be padded with up to that many zero bytes", a, MaxSegmentAlignment), nil)
	}
	return nil
}
