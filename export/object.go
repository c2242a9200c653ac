package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/ptekit/ptekit/objstore"
	"github.com/ptekit/ptekit/pte"
)

// RebakeObject is RebakeFile writing to an object store: the re-baked
// program f (named name in messages) becomes the object dst of st,
// written as one multipart upload that is completed only when every byte
// is in place, and aborted on any failure or when ctx is done (nothing
// appears at dst, and no upload is left behind).
//
// When src is non-nil, f is the object src of the same store (f reads
// src.Reader): the output is then assembled in the store (see
// objstore.Upload.Assemble): its new head is sent, and every range the
// output shares with the input, which for a re-bake is the whole segment
// area, is copied by the store on its side (UploadPartCopy, pinned to the
// input's ETag), so that what crosses the network is the head plus what
// S3's 5 MiB minimum part size forces, whatever the program's size. The
// object is byte for byte what RebakeFile writes to a file. A store that
// refuses server-side copies gets the bytes streamed instead, with a
// WarnCopyRefused warning. Without src the output is streamed.
//
// A multipart upload to dst left by a writer that was killed is reported
// as a WarnOrphanUpload warning (objstore.Store.AbortOrphans, which
// pteexport --recover runs, removes it).
func RebakeObject(ctx context.Context, f *pte.File, name string, st *objstore.Store, src *objstore.Source, dst objstore.Location, opts *RebakeOptions) (*Result, error) {
	opts, budget, err := checkOpenRebake(f, name, opts)
	if err != nil {
		return nil, err
	}
	res, prog, err := rebakeProgram(f, name, opts, budget)
	if err != nil {
		return nil, err
	}
	segs, wopts, err := rebakeLayout(f, name, opts, prog, res)
	if err != nil {
		return nil, err
	}
	wopts.EarlyWriteback = false
	res.Warnings = append(res.Warnings, orphanWarnings(ctx, st, dst)...)
	// The output's size: exact once the assembly is laid out, else the
	// input's, which a re-bake changes by its head only.
	total := f.Size
	var pieces []objstore.Piece
	if src != nil {
		if pieces, total, err = rebakePieces(ctx, f, prog, segs, wopts); err != nil {
			return nil, fmt.Errorf("export: rebake: writing %s: %w", dst, err)
		}
	}
	var progress func(int64)
	if opts.Progress != nil {
		progress = func(n int64) { opts.Progress(n, max(total, n)) }
	}
	up, err := st.Create(ctx, dst, &objstore.UploadOptions{NoOverwrite: opts.NoOverwrite, SizeHint: total, Progress: progress})
	if err != nil {
		return nil, fmt.Errorf("export: rebake: %w", err)
	}
	defer up.Abort()
	if opts.Progress != nil {
		opts.Progress(0, total)
	}
	size := total
	if src != nil {
		err = up.Assemble(src, pieces, func(refused error) {
			res.Warnings = append(res.Warnings, Warning{Kind: WarnCopyRefused, Msg: fmt.Sprintf("%s: %v", dst, refused)})
		})
	} else {
		size, err = writeProgram(up, prog, segs, wopts)
	}
	return commitObject(ctx, up, err, "export: rebake: ", res, size, opts.Progress)
}

// commitObject ends the write of an object of size bytes into up, whose
// bytes are all sent unless err says otherwise: it commits the upload
// unless err or ctx stop it (the caller's deferred Abort then discards
// it), and fills res. An error is prefixed with prefix; an interrupt is
// returned as context.Cause(ctx), but for a completion the store may have
// done (objstore.CutCommitError), which says what is at the key.
func commitObject(ctx context.Context, up *objstore.Upload, err error, prefix string, res *Result, size int64, progress func(written, total int64)) (*Result, error) {
	if err == nil {
		err = context.Cause(ctx)
	}
	if err == nil {
		err = up.Commit()
	}
	if err != nil {
		if _, cut := errors.AsType[*objstore.CutCommitError](err); ctx.Err() != nil && !cut {
			err = context.Cause(ctx)
		}
		return nil, fmt.Errorf("%swriting %s: %w", prefix, up.Location(), err)
	}
	if progress != nil {
		progress(size, size)
	}
	res.Path, res.Size = up.Location().String(), size
	res.Uploaded, res.Copied = up.Moved()
	res.Object = true
	res.Warnings = append(res.Warnings, replacedWarnings(up)...)
	return res, nil
}

// orphanWarnings is the WarnOrphanUpload warning of the multipart uploads
// to dst that a killed writer left, if any.
func orphanWarnings(ctx context.Context, st *objstore.Store, dst objstore.Location) []Warning {
	orphans, err := st.Orphans(ctx, dst)
	if err != nil || len(orphans) == 0 {
		return nil
	}
	return []Warning{{Kind: WarnOrphanUpload, Msg: fmt.Sprintf(
		"%d unfinished multipart upload(s) to %s remain from a writer that was killed or is still running (their parts are stored and billed): "+
			"pteexport --recover %s aborts those idle for %s", len(orphans), dst, dst, objstore.QuietPeriod)}}
}

// replacedWarnings is the WarnReplacedVersion warning of a committed
// upload that replaced an object of a versioned bucket.
func replacedWarnings(up *objstore.Upload) []Warning {
	v := up.PreviousVersion()
	if v == "" {
		return nil
	}
	return []Warning{{Kind: WarnReplacedVersion, Msg: fmt.Sprintf(
		"%s replaced an object the bucket keeps as version %s; copying that version onto the key restores it "+
			"(aws s3api copy-object --copy-source BUCKET/KEY?versionId=%s)", up.Location(), v, v)}}
}

// WriteObject is WriteFileContext writing to an object store: p becomes
// the object dst of st, streamed as it is built into one multipart upload
// that is completed only when every byte is in place, and aborted on any
// failure or when ctx is done (nothing appears at dst, and no upload is
// left behind; a killed process leaves an upload that
// objstore.Store.AbortOrphans removes, and the next write reports it as a
// WarnOrphanUpload warning). Options.NoOverwrite refuses a key that holds
// an object, before the upload and again when it completes; Progress is
// called after every part; Inputs does not apply (no local file can be
// the output).
func WriteObject(ctx context.Context, st *objstore.Store, dst objstore.Location, p *Program, opts *Options) (*Result, error) {
	var noOverwrite bool
	if opts != nil {
		noOverwrite = opts.NoOverwrite
	}
	b, err := build(p, opts)
	if err != nil {
		return nil, err
	}
	defer b.close()
	warnings := orphanWarnings(ctx, st, dst)
	var progress func(int64)
	if b.progress != nil {
		progress = func(n int64) { b.progress(n, max(b.total, n)) }
	}
	up, err := st.Create(ctx, dst, &objstore.UploadOptions{NoOverwrite: noOverwrite, SizeHint: b.total, Progress: progress})
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	defer up.Abort()
	if b.progress != nil {
		b.progress(0, b.total)
	}
	size, err := b.writeTo(up, false)
	b.result.Warnings = append(b.result.Warnings, warnings...)
	return commitObject(ctx, up, err, "export: ", b.result, size, b.progress)
}

// rebakePieces lays out the re-bake of f as pte.Write writes it, without
// reading a segment byte: the segments are given as sources of the same
// sizes and offsets that read as zeros, the output is recorded as its
// non-zero bytes, and WriteInfo says where each segment went. The output
// is returned as pieces: literal bytes (the head, padding) and ranges of
// f's reader (each segment at its input offset). A literal run between
// two ranges that keep the same distance between input and output, and
// that the input holds at that distance (the padding between segments of
// a layout that is kept), is read (at most maxGap bytes each) and merged
// into one range, so that the segment area is one range.
func rebakePieces(ctx context.Context, f *pte.File, prog *pte.Program, segs []*io.SectionReader, wopts *pte.WriteOptions) ([]objstore.Piece, int64, error) {
	type source struct{ off, n int64 }
	srcs := make([]source, len(segs))
	ghost := make([]*io.SectionReader, len(segs))
	for i, s := range segs {
		ra, off, n := s.Outer()
		if ra != f.ReaderAt() {
			return nil, 0, fmt.Errorf("export: rebake: segment %d is not a range of the input", i)
		}
		srcs[i] = source{off, n}
		ghost[i] = io.NewSectionReader(zeroReader{}, off, n)
	}
	rec := &recorder{}
	info, err := pte.Write(rec, prog, ghost, wopts)
	if err != nil {
		return nil, 0, err
	}
	type run struct{ out, in, n int64 }
	var runs []run
	if info.Header != nil {
		base := int64(info.Header.SegmentBaseOffset)
		for i, k := range info.SegmentIndex {
			if srcs[i].n == 0 {
				continue
			}
			runs = append(runs, run{out: base + int64(info.Segments[k].Offset), in: srcs[i].off, n: srcs[i].n})
		}
	}
	sort.Slice(runs, func(a, b int) bool { return runs[a].out < runs[b].out })
	var pieces []objstore.Piece
	at := int64(0)
	var prev *run
	for i := range runs {
		r := runs[i]
		if r.out < at {
			continue // a payload written once for two references
		}
		if gap := r.out - at; gap > 0 {
			lit := rec.bytes(at, gap)
			if prev != nil && prev.out-prev.in == r.out-r.in && gap <= maxGap {
				held := make([]byte, gap)
				if _, err := f.ReaderAt().ReadAt(held, at-(r.out-r.in)); err == nil && bytes.Equal(held, lit) {
					last := &pieces[len(pieces)-1]
					last.Len += gap + r.n
					at = r.out + r.n
					prev = &runs[i]
					continue
				}
			}
			pieces = append(pieces, objstore.Piece{Data: lit})
		}
		if prev != nil && len(pieces) > 0 && pieces[len(pieces)-1].Data == nil && prev.out-prev.in == r.out-r.in &&
			pieces[len(pieces)-1].Off+pieces[len(pieces)-1].Len == r.in {
			pieces[len(pieces)-1].Len += r.n
		} else {
			pieces = append(pieces, objstore.Piece{Off: r.in, Len: r.n})
		}
		at = r.out + r.n
		prev = &runs[i]
	}
	if at < info.Size {
		pieces = append(pieces, objstore.Piece{Data: rec.bytes(at, info.Size-at)})
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, context.Cause(ctx)
	}
	return pieces, info.Size, nil
}

// maxGap is the longest literal run between two segments that is checked
// against the input to be copied with them.
const maxGap = 1 << 20

// zeroReader reads zeros: the stand-in for segment bytes while a re-bake
// is laid out. It is neither a file nor memory to pte.Write's layout
// (CongruentAnyReader), as the reader of a remote input is not.
type zeroReader struct{}

func (zeroReader) ReadAt(p []byte, off int64) (int, error) {
	clear(p)
	return len(p), nil
}

// recorder keeps the non-zero bytes written to it, by offset.
type recorder struct {
	n      int64
	kept   int64 // the bytes of chunks
	chunks []recChunk
}

type recChunk struct {
	off  int64
	data []byte
}

// maxRecorded bounds what a recorder keeps: the head of a program is
// under 2 GiB (the flatbuffer limit), and anything else non-zero is not
// a stand-in segment.
const maxRecorded = 2 << 30

var errTooMuch = errors.New("export: rebake: the program's head is too large to assemble in the store")

func (r *recorder) Write(p []byte) (int, error) {
	lo, hi := 0, len(p)
	for lo < hi && p[lo] == 0 {
		lo++
	}
	for hi > lo && p[hi-1] == 0 {
		hi--
	}
	if lo < hi {
		if r.kept+int64(hi-lo) > maxRecorded {
			return 0, errTooMuch
		}
		r.kept += int64(hi - lo)
		r.chunks = append(r.chunks, recChunk{off: r.n + int64(lo), data: bytes.Clone(p[lo:hi])})
	}
	r.n += int64(len(p))
	return len(p), nil
}

// bytes returns the n bytes recorded at off (zeros where nothing
// non-zero was written).
func (r *recorder) bytes(off, n int64) []byte {
	out := make([]byte, n)
	for _, c := range r.chunks {
		lo, hi := max(off, c.off), min(off+n, c.off+int64(len(c.data)))
		if lo < hi {
			copy(out[lo-off:hi-off], c.data[lo-c.off:hi-c.off])
		}
	}
	return out
}
