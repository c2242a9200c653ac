package inspect

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/ptekit/ptekit/delegate"
	"io"
	"slices"
	"strings"

	"github.com/ptekit/ptekit/check"
	"github.com/ptekit/ptekit/internal/jsonerr"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// Document is the JSON form of a whole .pte file: what `pteinspect --json`
// prints. Member order is fixed; see docs/json.md for the schema.
type Document struct {
	File           File            `json:"file"`
	ExtendedHeader *ExtendedHeader `json:"extended_header"`
	Segments       []*Segment      `json:"segments"`
	Delegates      []*Delegate     `json:"delegates"`
	Program        *Program        `json:"program"`
	// Problems lists what Check finds (narrowed by Options.Method); []
	// when nothing.
	Problems []Problem `json:"problems"`
	// ExternalData is where the EXTERNAL tensors come from given
	// Options.Data; absent without data files.
	ExternalData *ExternalData `json:"external_data,omitempty"`
}

// File holds file-level facts.
type File struct {
	Size           int64  `json:"size"`
	SHA256         Digest `json:"sha256,omitzero"`
	RootOffset     uint32 `json:"root_offset"`     // u32 at byte 0
	FileIdentifier string `json:"file_identifier"` // bytes 4..8, "ET12"
	// URL is where a program read over HTTP came from, without user
	// information, query and fragment (which may carry credentials);
	// absent for a local file (Options.URL).
	URL string `json:"url,omitempty"`
}

// ExtendedHeader is the eh00 header. SegmentDataSize is 0 for the 24-byte
// header, which has no such field.
type ExtendedHeader struct {
	Magic             string `json:"magic"`
	Length            uint32 `json:"length"`
	ProgramSize       uint64 `json:"program_size"`
	SegmentBaseOffset uint64 `json:"segment_base_offset"`
	SegmentDataSize   uint64 `json:"segment_data_size"`
}

// Segment describes one entry of Program.segments and where its bytes are.
type Segment struct {
	Index  int    `json:"index"`
	Offset uint64 `json:"offset"` // as stored: relative to segment_base_offset
	Size   uint64 `json:"size"`
	// FileOffset is segment_base_offset + offset, or offset alone when the
	// file has no extended header.
	FileOffset uint64 `json:"file_offset"`
	// Resolvable is true when the file has an extended header with a
	// non-zero segment_base_offset and the segment lies inside the file.
	Resolvable bool `json:"resolvable"`
	// SHA256 is present with hashing on; null when not resolvable.
	SHA256 Digest `json:"sha256,omitzero"`
	// UsedBy lists what refers to the segment: "constant_segment",
	// "mutable_data_segment", "named_data:KEY" and
	// "delegate:PLAN:DELEGATE:ID" (plan and delegate indices, backend id).
	UsedBy []string `json:"used_by"`
}

// Delegate describes one delegate of one method, with its payload.
type Delegate struct {
	PlanIndex     int    `json:"plan_index"`
	Plan          string `json:"plan"` // method name
	DelegateIndex int    `json:"delegate_index"`
	ID            string `json:"id"` // backend id, e.g. "TensorRTBackend"
	// Location and Index are BackendDelegate.processed; null when absent.
	Location     *Enum             `json:"location"`
	Index        *uint32           `json:"index"`
	CompileSpecs []*CompileSpecRaw `json:"compile_specs"`
	// Size, SHA256 and Magic describe the payload; null when it cannot be
	// located (a bad reference, or a segment outside the file).
	Size   *int64 `json:"size"`
	SHA256 Digest `json:"sha256,omitzero"`
	// Magic is the payload's first four bytes (fewer when it is shorter),
	// each byte as the Unicode code point of the same value (Latin-1).
	Magic *string `json:"magic"`
	// TensorRT is present for TensorRTBackend delegates whose payload could
	// be located.
	TensorRT *TensorRT `json:"tensorrt,omitempty"`
}

// CompileSpecRaw is a compile spec with its value bytes, in full up to
// MaxDocumentSpecValue bytes; a longer value is cut there (Truncated, Size),
// so a hostile 16 MB value cannot make a 50 MB document. --compile-specs
// (CompileSpecRows) always has the full value.
type CompileSpecRaw struct {
	Key      string `json:"key"`
	ValueHex string `json:"value_hex"` // lowercase hex, "" for no bytes
	// ValueUTF8 is the value as text; null when it is not valid UTF-8.
	ValueUTF8 *string `json:"value_utf8"`
	// Size is the value's length in bytes, set only when Truncated.
	Size int `json:"value_size,omitempty"`
	// Truncated says the value is longer than MaxDocumentSpecValue and
	// ValueHex and ValueUTF8 hold only its beginning.
	Truncated bool `json:"value_truncated,omitempty"`
	// full is the whole value when the document was built from a file.
	full []byte
}

// MaxDocumentSpecValue is how many bytes of a compile spec value the
// inspection document holds.
const MaxDocumentSpecValue = 4096

// Options control Build. The zero value (or nil) builds everything without
// hashes.
type Options struct {
	// Hash adds SHA-256 digests: of the file, of every segment, of every
	// delegate payload and of every byte vector in the program. Payloads
	// are streamed, never loaded whole.
	Hash bool
	// Method, when not empty, keeps only that method in program.execution_plan
	// and delegates (plan_index still counts every method).
	Method string
	// Backend, when not empty, keeps only delegates with this id.
	Backend string
	// Data, when not nil, is the program resolved against the data files
	// it is inspected with (ptd.Resolve): the document then has
	// ExternalData, and the resolution's findings replace the reader's
	// notices that tensor data is external (see CheckData).
	Data *ptd.Resolution
	// Progress, when not nil, is called as hashing goes on with the bytes
	// read so far and the bytes to read in all (both files for
	// BuildDiffPair).
	Progress func(done, total int64)
	// URL, when not empty, is where the file was read from, for the
	// document's file.url (see File.URL): the caller knows the source.
	URL string
	// SummaryMethods, when positive, makes Summarize keep only the first
	// SummaryMethods entries of Summary.Methods (the totals still count
	// every method). The other views ignore it.
	SummaryMethods int
	// Findings are problems the caller found about the file from outside
	// it, such as an undo record beside it (UndoRecordProblem); every view
	// that lists problems lists them first.
	Findings []Problem
}

// ErrNoMethod is returned (wrapped) by Build when Options.Method names no
// method of the program.
var ErrNoMethod = jsonerr.NotFound("no such method")

// ErrNoBackend is returned (wrapped) by Build when Options.Backend names no
// backend of the program's delegates (of Options.Method, when set).
var ErrNoBackend = jsonerr.NotFound("no delegate of backend")

// Build returns the JSON form of f. It reads the first bytes of each
// delegate payload (and the header and metadata of TensorRT blobs), and with
// Options.Hash every segment, payload and the file itself, in one pass
// that keeps those first bytes: each byte is then read once.
func Build(f *pte.File, opts *Options) (*Document, error) {
	return build(f, opts, nil)
}

var errNoProgram = errors.New("inspect: file has no decoded program")

// meterOf returns a function that counts bytes hashed and reports them to
// progress (nil: none) against total.
func meterOf(progress func(done, total int64), total int64) func(n int64) {
	if progress == nil {
		return nil
	}
	var done int64
	return func(n int64) {
		done += n
		progress(done, total)
	}
}

// build is Build after a pass over the file (nil: the file is hashed
// here, in one pass, when Options.Hash asks for it).
func build(f *pte.File, opts *Options, pass *passed) (*Document, error) {
	st, err := newStream(f, opts, pass, true)
	if err != nil {
		return nil, err
	}
	var dels []*Delegate
	plans := []*pte.ExecutionPlan{} // present, maybe empty
	if err := st.Each(func(m *MethodView) error {
		dels = append(dels, m.Delegates...)
		plans = append(plans, m.Plan)
		return nil
	}); err != nil {
		return nil, err
	}
	doc := st.Document()
	doc.Delegates = nonNil(dels)
	rest := *f.Program
	rest.SetPlans(plans)
	doc.Program = &Program{Program: &rest, Hash: st.b.opts.Hash}
	return doc, nil
}

// A Stream builds the inspection document of a file method by method, for
// views that print each method as it comes and keep only what they show.
// Build is a Stream whose delegates are all kept, with the program member
// added.
type Stream struct {
	b    *builder
	doc  *Document
	next int  // the next method index Each looks at
	done bool // Each passed the last method; the problems are complete
}

// MethodView is one method of a Stream: its index in the program, its
// decoded plan and the Document delegates of it (narrowed by
// Options.Backend), as Build would list them.
type MethodView struct {
	Index     int
	Plan      *pte.ExecutionPlan
	Delegates []*Delegate
}

// NewStream checks opts against f (ErrNoMethod, ErrNoBackend), hashes the
// file with Options.Hash and builds the document's head and segments; Each
// (or EachDelegate) then gives the methods.
func NewStream(f *pte.File, opts *Options) (*Stream, error) {
	return newStream(f, opts, nil, true)
}

// newStream is NewStream after a pass over the file (see build); segments
// false leaves Document().Segments nil, for a view that does not show them.
func newStream(f *pte.File, opts *Options, pass *passed, segments bool) (*Stream, error) {
	if opts == nil {
		opts = &Options{}
	}
	p := f.Program
	if p == nil {
		return nil, errNoProgram
	}
	b := &builder{f: f, r: f.ReaderAt(), opts: opts, reports: &blobReports{}}
	if opts.Hash && pass == nil {
		// Each vector's digest is taken from its own bytes: vectors that
		// overlap would make the hashing quadratic in the program's size.
		if err := checkInlineOverlap(f, -1); err != nil {
			return nil, err
		}
		var err error
		if pass, err = passFile(f, b.spans(), meterOf(opts.Progress, f.Size)); err != nil {
			return nil, err
		}
	}
	if pass != nil {
		// What the pass read is read from memory, not the file again.
		b.sums, b.r = pass.sums, pass.keep.reader(b.r)
	}
	if opts.Method != "" && f.PlanIndex(opts.Method) < 0 {
		return nil, fmt.Errorf("inspect: %w %q (methods: %s)", ErrNoMethod, opts.Method, strings.Join(MethodNames(f), ", "))
	}
	if opts.Backend != "" {
		if ids := BackendIDs(f.Program, opts.Method); !slices.Contains(ids, opts.Backend) {
			return nil, fmt.Errorf("inspect: %w %q (backends: %s)", ErrNoBackend, opts.Backend, orNone(ids))
		}
	}
	if pass == nil {
		// After a pass the heads are in memory: fetching them ahead
		// would fetch them again.
		check.Prefetch(f)
	}
	doc, err := b.head()
	if err != nil {
		return nil, err
	}
	doc.Problems = append(slices.Clone(opts.Findings), check.Reader(f, opts.Method)...)
	// After Verify, which allocates much more: a segment table held while
	// it ran would count as live at each collection and raise the heap's
	// goal by twice its size.
	if segments {
		if doc.Segments, err = b.segments(); err != nil {
			return nil, err
		}
	}
	return &Stream{b: b, doc: doc}, nil
}

// Each calls fn with each method Options.Method selects (every method
// when empty), in order, with its delegates, reading their payloads and
// checking them, until the last or an error (the Stream's or fn's, which
// it returns).
func (s *Stream) Each(fn func(*MethodView) error) error {
	for m := s.nextMethod(); m != nil; m = s.nextMethod() {
		if err := s.delegates(m, func(d *Delegate) error {
			m.Delegates = append(m.Delegates, d)
			return nil
		}); err != nil {
			return err
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

// EachDelegate is Each for a view that holds one delegate at a time: for
// each method Each would pass it calls method with the MethodView
// (Delegates nil), then delegate with each of the delegates Each would
// list, in order, keeping none of them. The problems and the document are
// those Each makes. It stops at the first error and returns it.
func (s *Stream) EachDelegate(method func(*MethodView) error, delegate func(*MethodView, *Delegate) error) error {
	for m := s.nextMethod(); m != nil; m = s.nextMethod() {
		if err := method(m); err != nil {
			return err
		}
		if err := s.delegates(m, func(d *Delegate) error { return delegate(m, d) }); err != nil {
			return err
		}
	}
	return nil
}

// nextMethod returns the next method Options.Method selects, without its
// delegates; nil after the last one, when it also completes the problems.
func (s *Stream) nextMethod() *MethodView {
	b := s.b
	for n := b.f.Program.NumPlans(); s.next < n; s.next++ {
		pi := s.next
		if b.opts.Method != "" && b.f.Program.PlanName(pi) != b.opts.Method {
			continue
		}
		ep := b.f.Program.Plan(pi)
		if ep == nil {
			continue
		}
		s.next++
		return &MethodView{Index: pi, Plan: ep}
	}
	if !s.done {
		s.done = true
		s.finish()
	}
	return nil
}

// delegates reads and checks the delegates of m in order: every one's
// problems go to the document, and each Options.Backend selects is given
// to fn (after its problems), which keeps it or not.
func (s *Stream) delegates(m *MethodView, fn func(*Delegate) error) error {
	b, ep := s.b, m.Plan
	for di, d := range ep.Delegates {
		var del *Delegate
		if SelectsDelegate(d, b.opts.Backend) {
			var err error
			if del, err = b.delegate(m.Index, ep.Name, di, d); err != nil {
				return err
			}
		}
		ps, err := check.Delegate(b.f, m.Index, di, d, b.reports.check)
		if err != nil {
			return err
		}
		s.doc.Problems = append(s.doc.Problems, ps...)
		if del != nil {
			if err := fn(del); err != nil {
				return err
			}
		}
	}
	return nil
}

// SelectsDelegate says whether the views show delegate d when narrowed to
// backend id backend (every backend when empty): a nil delegate (a damaged
// file) is never shown.
func SelectsDelegate(d *pte.BackendDelegate, backend string) bool {
	return d != nil && (backend == "" || d.ID == backend)
}

// SelectedDelegates is the number of ep's delegates SelectsDelegate keeps:
// what a Stream gives of the method, known before reading them.
func SelectedDelegates(ep *pte.ExecutionPlan, backend string) int {
	n := 0
	for _, d := range ep.Delegates {
		if SelectsDelegate(d, backend) {
			n++
		}
	}
	return n
}

// finish completes the problems with the external data's (Options.Data).
func (s *Stream) finish() {
	doc, opts := s.doc, s.b.opts
	if opts.Data != nil {
		doc.Problems = append(slices.DeleteFunc(doc.Problems, isExternalNotice), DataProblems(opts.Data, opts.Method)...)
		doc.ExternalData = NewExternalData(opts.Data, opts.Method)
	}
	doc.Problems = nonNil(doc.Problems)
}

// Document returns the document built so far: file, extended header,
// segments and problems, and external data once Each has passed the last
// method. Delegates and Program are nil.
func (s *Stream) Document() *Document { return s.doc }

// head returns the document with its file and extended header facts (and
// the file's digest with Options.Hash).
func (b *builder) head() (*Document, error) {
	f := b.f
	doc := &Document{
		File: File{Size: f.Size, RootOffset: f.RootOffset, FileIdentifier: f.Identifier, URL: b.opts.URL},
	}
	if h := f.Header; h != nil {
		doc.ExtendedHeader = new(ExtendedHeader(*h))
	}
	if b.opts.Hash {
		d, err := b.hashRange(0, f.Size)
		if err != nil {
			return nil, err
		}
		doc.File.SHA256 = d
	}
	return doc, nil
}

// MethodNames returns the names of f's methods in order, without decoding
// them (pte.Program.PlanName). The result is never nil.
func MethodNames(f *pte.File) []string {
	names := make([]string, f.Program.NumPlans())
	for i := range names {
		names[i] = f.Program.PlanName(i)
	}
	return names
}

// BackendIDs returns the distinct backend ids of the delegates of p, in
// order of first use; only those of the method named method when it is not
// empty. It reads only the plans' delegates (pte.Program.PlanDelegates).
// The result is never nil.
func BackendIDs(p *pte.Program, method string) []string {
	ids := []string{}
	for i := range p.NumPlans() {
		if method != "" && p.PlanName(i) != method {
			continue // not decoded
		}
		for _, d := range p.PlanDelegates(i) {
			if d != nil && !slices.Contains(ids, d.ID) {
				ids = append(ids, d.ID)
			}
		}
	}
	return ids
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

type builder struct {
	f    *pte.File
	r    io.ReaderAt
	opts *Options
	// sums are the digests of spans(), with Options.Hash.
	sums digests
	// reports keeps the TensorRT blob last read, for its problems to reuse.
	reports *blobReports
}

// spans are the file ranges the document gives digests of: the whole file
// and every segment whose bytes are in it (a SEGMENT delegate payload is a
// whole segment).
func (b *builder) spans() []span {
	out := []span{{0, b.f.Size}}
	for i, s := range b.f.Program.Segments {
		if off, ok := b.segmentRange(i); ok {
			out = append(out, span{int64(off), int64(s.Size)})
		}
	}
	return out
}

// segmentRange returns where segment i is in the file, and whether its
// bytes can be reached there (header with a non-zero base, inside the file).
func (b *builder) segmentRange(i int) (fileOff uint64, ok bool) {
	s := b.f.Program.Segments[i]
	if s == nil {
		return 0, false
	}
	h := b.f.Header
	if h == nil {
		return s.Offset, false
	}
	fileOff = h.SegmentBaseOffset + s.Offset
	size := uint64(b.f.Size)
	ok = h.SegmentBaseOffset != 0 && fileOff >= h.SegmentBaseOffset &&
		fileOff <= size && s.Size <= size-fileOff
	return fileOff, ok
}

func (b *builder) hashRange(off, n int64) (Digest, error) {
	if d, ok := b.sums[span{off, n}]; ok {
		return d, nil
	}
	d, err := digestOf(io.NewSectionReader(b.r, off, n))
	if err != nil {
		return d, fmt.Errorf("inspect: hashing bytes %d..%d: %w", off, off+n, err)
	}
	return d, nil
}

func (b *builder) segments() ([]*Segment, error) {
	p := b.f.Program
	out := make([]*Segment, len(p.Segments))
	for i, s := range p.Segments {
		off, ok := b.segmentRange(i)
		seg := &Segment{Index: i, FileOffset: off, Resolvable: ok, UsedBy: []string{}}
		if s != nil {
			seg.Offset, seg.Size = s.Offset, s.Size
		}
		if b.opts.Hash {
			seg.SHA256 = Digest{Unavailable: true}
			if ok {
				var err error
				if seg.SHA256, err = b.hashRange(int64(off), int64(s.Size)); err != nil {
					return nil, err
				}
			}
		}
		out[i] = seg
	}
	use := func(idx uint64, what string) {
		if idx < uint64(len(out)) {
			out[idx].UsedBy = append(out[idx].UsedBy, what)
		}
	}
	if cs := p.ConstantSegment; cs != nil {
		use(uint64(cs.SegmentIndex), "constant_segment")
	}
	for _, m := range p.MutableDataSegments {
		if m != nil {
			use(uint64(m.SegmentIndex), "mutable_data_segment")
		}
	}
	for _, nd := range p.NamedData {
		if nd != nil {
			use(uint64(nd.SegmentIndex), "named_data:"+nd.Key)
		}
	}
	for pi := range b.f.Program.NumPlans() {
		for di, d := range b.f.Program.PlanDelegates(pi) {
			if d != nil && d.Processed != nil && d.Processed.Location == pte.DataLocationSEGMENT {
				use(uint64(d.Processed.Index), fmt.Sprintf("delegate:%d:%d:%s", pi, di, d.ID))
			}
		}
	}
	return out, nil
}

// payload locates a delegate's processed bytes: in memory for INLINE, a
// file range for SEGMENT.
type payload struct {
	inline []byte
	r      io.ReaderAt
	off    int64
	size   int64
}

func (pl *payload) reader() io.ReaderAt {
	if pl.r == nil {
		return bytes.NewReader(pl.inline)
	}
	return io.NewSectionReader(pl.r, pl.off, pl.size)
}

func (b *builder) locate(ref *pte.BackendDelegateDataReference) (*payload, bool) {
	p := b.f.Program
	if ref == nil {
		return nil, false
	}
	switch ref.Location {
	case pte.DataLocationINLINE:
		if uint64(ref.Index) >= uint64(len(p.BackendDelegateData)) || p.BackendDelegateData[ref.Index] == nil {
			return nil, false
		}
		data := p.BackendDelegateData[ref.Index].Data
		return &payload{inline: data, size: int64(len(data))}, true
	case pte.DataLocationSEGMENT:
		if uint64(ref.Index) >= uint64(len(p.Segments)) {
			return nil, false
		}
		off, ok := b.segmentRange(int(ref.Index))
		if !ok {
			return nil, false
		}
		return &payload{r: b.r, off: int64(off), size: int64(p.Segments[ref.Index].Size)}, true
	}
	return nil, false
}

func (b *builder) delegate(pi int, plan string, di int, d *pte.BackendDelegate) (*Delegate, error) {
	del := &Delegate{
		PlanIndex:     pi,
		Plan:          plan,
		DelegateIndex: di,
		ID:            d.ID,
		CompileSpecs:  make([]*CompileSpecRaw, 0, len(d.CompileSpecs)),
	}
	if ref := d.Processed; ref != nil {
		del.Location, del.Index = new(enum(ref.Location, int64(ref.Location))), new(ref.Index)
	}
	for _, cs := range d.CompileSpecs {
		if cs == nil {
			continue
		}
		v := cs.Value
		raw := &CompileSpecRaw{Key: cs.Key, full: cs.Value}
		if len(v) > MaxDocumentSpecValue {
			v = v[:MaxDocumentSpecValue]
			raw.Size, raw.Truncated = len(cs.Value), true
		}
		raw.ValueHex, raw.ValueUTF8 = hexAndText(v)
		del.CompileSpecs = append(del.CompileSpecs, raw)
	}

	pl, ok := b.locate(d.Processed)
	if !ok {
		if b.opts.Hash {
			del.SHA256 = Digest{Unavailable: true}
		}
		return del, nil
	}
	size := pl.size
	del.Size = &size
	r := pl.reader()
	// A TensorRT blob is read once (delegate.Check, shared with the
	// problems), and its magic taken from the header that read.
	var rep *delegate.Report
	var err error
	if delegate.IsTensorRT(d.ID) {
		if rep, err = b.reports.check(d.Processed, r, size); err != nil {
			return nil, fmt.Errorf("inspect: execution_plan[%d].delegates[%d]: reading TensorRT blob: %w", pi, di, err)
		}
		del.TensorRT = newTensorRT(rep, size)
	}
	if rep != nil && size >= delegate.HeaderSize {
		del.Magic = new(latin1(rep.Deployed.Magic[:]))
	} else {
		var head [4]byte
		n, err := r.ReadAt(head[:min(4, size)], 0)
		if err != nil && !(errors.Is(err, io.EOF) && int64(n) == min(4, size)) {
			return nil, fmt.Errorf("inspect: execution_plan[%d].delegates[%d]: reading payload: %w", pi, di, err)
		}
		del.Magic = new(latin1(head[:n]))
	}
	if b.opts.Hash {
		// A segment's digest is known from the file's one pass.
		if pl.r != nil {
			del.SHA256, err = b.hashRange(pl.off, size)
		} else {
			sum := sha256.Sum256(pl.inline)
			del.SHA256 = Digest{Hex: hex.EncodeToString(sum[:])}
		}
		if err != nil {
			return nil, fmt.Errorf("inspect: execution_plan[%d].delegates[%d]: hashing payload: %w", pi, di, err)
		}
	}
	return del, nil
}

// latin1 maps each byte to the code point of the same value.
func latin1(b []byte) string {
	var s strings.Builder
	for _, c := range b {
		s.WriteRune(rune(c))
	}
	return s.String()
}
