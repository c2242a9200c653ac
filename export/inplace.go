package export

import (
	"context"
	"errors"
	"fmt"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/internal/inplace"
	"github.com/ptekit/ptekit/internal/undorecord"
	"github.com/ptekit/ptekit/pte"
)

// RecoverInPlace undoes an in-place re-bake of path that a crash left
// unfinished, so that path holds the program it held before; it reports
// whether there was one, and fails for a path that does not exist. It
// applies only an undo record it trusts (inplace.Recover). An in-place
// Rebake of path does it first; no other re-bake or view does (they
// report the record: WarnUndoRecord); pteexport --recover runs it alone.
func RecoverInPlace(path string) (bool, error) {
	return inplace.Recover(path)
}

// NoteUndoRecord is what Rebake adds to its outcome about the input file
// path, for a re-bake that read path through an open File (RebakeFile,
// RebakeObject): when an interrupted in-place re-bake left its undo
// record beside path, a result gets a WarnUndoRecord warning and an error
// says it, since the input was read as it is, possibly half re-baked. It
// only looks (an lstat, when there is no record) and applies nothing.
func NoteUndoRecord(path string, res *Result, err error) (*Result, error) {
	return noteUndo(undorecord.Probe(path), path, res, err)
}

// noteUndo adds to the outcome of a re-bake of in that is not in place
// what it did not do: apply the undo record n (nil when there is none).
// A failure says it (the input may be half re-baked); a result gets a
// WarnUndoRecord warning.
func noteUndo(n *undorecord.Notice, in string, res *Result, err error) (*Result, error) {
	switch {
	case n == nil:
		return res, err
	case err != nil:
		return nil, fmt.Errorf("%w (%s)", err, n.Message(in))
	}
	res.Warnings = append(res.Warnings, Warning{Kind: WarnUndoRecord, Msg: n.Message(in)})
	return res, nil
}

// rebakeInPlace is Rebake with opts.InPlace: the re-baked head is written
// over the old one, under a write lease and with an undo record, when it
// fits before the segment base; otherwise the file is re-baked whole
// (atomically, as without InPlace) with a WarnInPlace warning.
func rebakeInPlace(ctx context.Context, in, out string, opts *RebakeOptions, budget *compilespec.Budget) (*Result, error) {
	if out != "" && out != in {
		return nil, newError("", "", fmt.Sprintf("an in-place re-bake rewrites %s itself; the output cannot be another file (%s)", in, out), nil)
	}
	if opts.SegmentAlignment != 0 {
		return nil, newError("", "", "an in-place re-bake keeps the segment layout; a segment alignment cannot be given", nil)
	}
	e, err := inplace.Open(in)
	if err != nil {
		return nil, fmt.Errorf("export: rebake in place: %w", err)
	}
	defer e.Close()
	// The lease allows only this one open file description, so the
	// program is read through it.
	f, err := pte.NewFileWith(e.File(), e.Size(), opts.Open)
	if err != nil {
		return nil, fmt.Errorf("export: rebake: %s: %w", in, err)
	}
	res, prog, err := rebakeProgram(f, in, opts, budget)
	if err != nil {
		return nil, err
	}
	head, err := f.EncodeHead(prog)
	if errors.Is(err, pte.ErrNoHeadRoom) {
		// Release the lease first: the whole re-bake reads in by name.
		e.Close()
		whole := *opts
		whole.InPlace = false
		r, werr := rebake(ctx, in, in, &whole, nil)
		if werr != nil {
			return nil, werr
		}
		r.Warnings = append(r.Warnings, Warning{Kind: WarnInPlace, Msg: fmt.Sprintf(
			"%s was rewritten whole, not in place: %v", in, errors.Unwrap(err))})
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("export: rebake: %s: %w", in, err)
	}
	// The new head, then zeros over what is left of the old tables (the
	// bytes up to the old program size), so that the file is what a whole
	// re-bake with this layout would write.
	end := int64(len(head))
	if ps := int64(f.Header.ProgramSize); ps > end && ps <= int64(f.Header.SegmentBaseOffset) {
		end = ps
	}
	buf := make([]byte, end)
	copy(buf, head)
	old := make([]byte, end)
	if _, err := e.File().ReadAt(old, 0); err != nil {
		return nil, fmt.Errorf("export: rebake: %s: %w", in, err)
	}
	lo, hi := changedSpan(old, buf)
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	if opts.Progress != nil {
		opts.Progress(0, hi-lo)
	}
	// An empty span writes nothing: WriteAt leaves bytes that are as asked.
	if _, err := e.WriteAt(buf[lo:hi], lo); err != nil {
		return nil, fmt.Errorf("export: rebake in place: %w", err)
	}
	if opts.Progress != nil {
		opts.Progress(hi-lo, hi-lo)
	}
	res.Path = in
	res.Size = f.Size
	res.InPlace = true
	res.Rewritten = hi - lo
	return res, nil
}

// changedSpan is the smallest range [lo, hi) outside which a and b (of
// one length) are equal; lo == hi when they are equal.
func changedSpan(a, b []byte) (lo, hi int64) {
	n := len(a)
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	j := n
	for j > i && a[j-1] == b[j-1] {
		j--
	}
	return int64(i), int64(j)
}
