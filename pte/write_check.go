package pte

import (
	"errors"
	"fmt"
	"io"
	"slices"
)

// This file makes "what Write writes, NewFile reads" a guarantee: payload
// references are checked before encoding, and the encoded region is read
// back, in memory, before the first byte is written.

// checkReferences checks the references of p that Write resolves against
// the payload list: delegate SEGMENT indices, the constant segment (when it
// holds constants), mutable data segments and named data must name one of
// the nPayloads payloads, and INLINE delegate indices an entry of
// BackendDelegateData. A dangling reference is a mistake in assembling the
// program and its payloads; writing it would give a file whose data cannot
// be found (and Dedup could not remap it).
func checkReferences(p *Program, nPayloads int) error {
	segIndex := func(path string, idx uint32) error {
		if uint64(idx) < uint64(nPayloads) {
			return nil
		}
		return &FormatError{Off: -1, Path: path,
			Msg:  fmt.Sprintf("segment index %d out of range (%d segment payloads given)", idx, nPayloads),
			Code: CodeNotFound}
	}
	for i, ep := range p.executionPlan {
		if ep == nil {
			continue // the encoder reports it
		}
		for k, d := range ep.Delegates {
			if d == nil || d.Processed == nil {
				continue
			}
			// The path is built only for an error: this runs per delegate.
			path := func() string { return fmt.Sprintf("execution_plan[%d].delegates[%d].processed.index", i, k) }
			switch ref := d.Processed; ref.Location {
			case DataLocationSEGMENT:
				if uint64(ref.Index) >= uint64(nPayloads) {
					return segIndex(path(), ref.Index)
				}
			case DataLocationINLINE:
				if uint64(ref.Index) >= uint64(len(p.BackendDelegateData)) {
					return &FormatError{Off: -1, Path: path(),
						Msg:  fmt.Sprintf("INLINE index %d out of range (%d backend_delegate_data entries)", ref.Index, len(p.BackendDelegateData)),
						Code: CodeNotFound}
				}
			}
		}
	}
	// Only a constant segment that lists constants beyond the placeholder
	// is ever loaded; upstream files without constants keep index 0 and no
	// segments at all.
	if cs := p.ConstantSegment; cs != nil && len(cs.Offsets) > 1 {
		if err := segIndex("constant_segment.segment_index", cs.SegmentIndex); err != nil {
			return err
		}
	}
	for i, m := range p.MutableDataSegments {
		if m != nil {
			if err := segIndex(fmt.Sprintf("mutable_data_segments[%d].segment_index", i), m.SegmentIndex); err != nil {
				return err
			}
		}
	}
	for i, nd := range p.NamedData {
		if nd != nil {
			if err := segIndex(fmt.Sprintf("named_data[%d].segment_index", i), nd.SegmentIndex); err != nil {
				return err
			}
		}
	}
	return nil
}

// VerifyError reports a program that Write encoded but did not write,
// because reading the result back fails: NewFile would refuse the file, or,
// with WriteOptions.Strict, Verify finds errors in it. Offsets in the
// findings are byte offsets of the file that would have been written; paths
// name fields of the Program given to Write.
type VerifyError struct {
	// Findings lists the problems, all of SeverityError. Without Strict
	// it holds the one error NewFile returned.
	Findings []Finding
}

// Error formats the error as "pte: write: program would not load: <first
// finding>", saying how many more there are.
func (e *VerifyError) Error() string {
	s := "pte: write: program would not load"
	if len(e.Findings) == 0 {
		return s
	}
	s += ": "
	if m := e.Findings[0].Method; m != "" {
		s += fmt.Sprintf("method %q: ", m)
	}
	s += e.Findings[0].Err.Error()
	if n := len(e.Findings) - 1; n > 0 {
		s += fmt.Sprintf(" (and %d more)", n)
	}
	return s
}

// Unwrap returns the *FormatError of every finding, so that errors.As finds
// the first.
func (e *VerifyError) Unwrap() []error {
	errs := make([]error, len(e.Findings))
	for i, fd := range e.Findings {
		errs[i] = fd.Err
	}
	return errs
}

// planImage is the file a writePlan would produce, as an io.ReaderAt: the
// flatbuffer region, then zeros where padding and segment payloads go.
// NewFile reads only the region, so the payloads themselves are never
// needed.
type planImage struct {
	region []byte
	size   int64
}

func (im *planImage) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("pte: negative offset %d", off)
	}
	if off >= im.size {
		return 0, io.EOF
	}
	n := len(b)
	var err error
	if rest := im.size - off; int64(n) > rest {
		n, err = int(rest), io.EOF
	}
	clear(b[:n])
	if off < int64(len(im.region)) {
		copy(b[:n], im.region[off:])
	}
	return n, err
}

// check reads the planned file back with NewFile and, when strict, runs
// Verify on it; any refusal becomes a *VerifyError. It first reads the
// region with model (when not nil) standing for its decoding: the bytes
// are verified as NewFile verifies them, and the program's checks run on
// the model they were encoded from, which the lossless codec decodes back
// to itself (TestWriteModelCheck), sparing a third of the check's time.
// Then, or when model is nil or refuses it, it reads the region without
// recording table positions, and a refused one again with them, so that
// its findings give the offsets NewFile and Verify give for the written
// file. lazy reads the region with OpenOptions.LazyPlans.
func (pl *writePlan) check(strict, lazy bool, model *Program) error {
	if model != nil && pl.checkWith(strict, OpenOptions{noPositions: true, model: model}) == nil {
		return nil
	}
	if pl.checkWith(strict, OpenOptions{noPositions: true, LazyPlans: lazy}) == nil {
		return nil
	}
	return pl.checkWith(strict, OpenOptions{})
}

// model returns p as the planned region encodes it, for check, or nil
// when the region holds what the model cannot stand for: inline constant
// or delegate data, whose place in the region the checks look at, or
// segment indices remapped by dedup. It is p with the segment table Write
// computed.
func (pl *writePlan) model(p *Program, dedup bool) *Program {
	if dedup || len(p.ConstantBuffer) > 0 || len(p.BackendDelegateData) > 0 {
		return nil
	}
	m := *p
	m.file = nil
	m.Segments = pl.info.Segments
	return &m
}

// checkWith is check, reading the image with opts.
func (pl *writePlan) checkWith(strict bool, opts OpenOptions) error {
	f, err := readBack(pl.region, pl.info.Size, opts, "write")
	if err != nil || !strict {
		return err
	}
	if errs := slices.DeleteFunc(f.Verify(), func(fd Finding) bool { return fd.Severity != SeverityError }); len(errs) > 0 {
		return &VerifyError{Findings: errs}
	}
	return nil
}

// readBack reads the file of size bytes whose flatbuffer region is region
// (a planImage) as NewFileWith with opts does; a refusal is a
// *VerifyError. what names the caller in any other failure.
func readBack(region []byte, size int64, opts OpenOptions, what string) (*File, error) {
	opts.region = region
	f, err := NewFileWith(&planImage{region: region, size: size}, size, &opts)
	if err != nil {
		fe, ok := errors.AsType[*FormatError](err)
		if !ok {
			// NewFile reports a bad program only as a *FormatError; anything
			// else means the image itself is broken.
			return nil, fmt.Errorf("pte: %s: reading the encoded program back: %w", what, err)
		}
		return nil, &VerifyError{Findings: []Finding{{Severity: SeverityError, Err: fe}}}
	}
	return f, nil
}
