package pte

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// wrProgram is a small loadable program: one method with nDelegates
// TensorRT delegates stored in segments 1..nDelegates, an empty constant
// segment 0, and named data "a", "b", ... in the given segments.
func wrProgram(nDelegates int, named ...uint32) *Program {
	ep := &ExecutionPlan{
		Name:              "forward",
		ContainerMetaType: &ContainerMetadata{},
		Values: []*EValue{{Val: &Tensor{ScalarType: ScalarTypeFLOAT, Sizes: []int32{4}, DimOrder: []uint8{0},
			AllocationInfo: &AllocationDetails{MemoryID: 1}}}},
		Inputs:              []int32{0},
		Outputs:             []int32{0},
		Chains:              []*Chain{{Inputs: []int32{}, Outputs: []int32{}, Instructions: []*Instruction{}}},
		Operators:           []*Operator{},
		Delegates:           []*BackendDelegate{},
		NonConstBufferSizes: []int64{0, 16},
	}
	for i := 0; i < nDelegates; i++ {
		ep.Delegates = append(ep.Delegates, &BackendDelegate{ID: "TensorRTBackend",
			Processed:    &BackendDelegateDataReference{Location: DataLocationSEGMENT, Index: uint32(i + 1)},
			CompileSpecs: []*CompileSpec{}})
		ep.Chains[0].Instructions = append(ep.Chains[0].Instructions,
			&Instruction{Args: &DelegateCall{DelegateIndex: int32(i), Args: []int32{0, 0}}})
	}
	p := &Program{
		executionPlan:       []*ExecutionPlan{ep},
		ConstantBuffer:      []*Buffer{},
		BackendDelegateData: []*BackendDelegateInlineData{},
		ConstantSegment:     &SubsegmentOffsets{SegmentIndex: 0, Offsets: []uint64{0}},
	}
	for i, s := range named {
		p.NamedData = append(p.NamedData, &NamedData{Key: string(rune('a' + i)), SegmentIndex: s})
	}
	return p
}

func TestWriteDedup(t *testing.T) {
	x := bytes.Repeat([]byte("X"), 300)
	payloads := [][]byte{
		{},                                // 0 constant segment (empty)
		x,                                 // 1 delegate 0
		bytes.Repeat([]byte("Y"), 200),    // 2 delegate 1
		bytes.Clone(x),                    // 3 delegate 2: same bytes as 1
		bytes.Repeat([]byte("Y"), 200),    // 4 named "a": same bytes as 2
		bytes.Repeat([]byte("Z"), 300),    // 5 named "b": size of 1, other bytes
		bytes.Repeat([]byte("U"), 77),     // 6 named "c": unique size
		{},                                // 7 named "d": empty, like 0
		append(bytes.Clone(x[:299]), 'Q'), // 8 named "e": differs from 1 in the last byte
	}
	counters := make([]*testkit.CountingReaderAt, len(payloads))
	srcs := make([]*io.SectionReader, len(payloads)+1)
	for i, b := range payloads {
		counters[i] = testkit.NewCountingReaderAt(bytes.NewReader(b))
		srcs[i] = io.NewSectionReader(counters[i], 0, int64(len(b)))
	}
	// 9 named "f": the very same section as payload 1, recognised unread.
	srcs[9] = io.NewSectionReader(counters[1], 0, int64(len(x)))
	p := wrProgram(3, 4, 5, 6, 7, 8, 9)
	p.Plan(0).Delegates[2].Processed.Index = 3
	before := wrProgram(3, 4, 5, 6, 7, 8, 9)
	before.Plan(0).Delegates[2].Processed.Index = 3

	var buf bytes.Buffer
	info, err := Write(&buf, p, srcs, &WriteOptions{Dedup: true})
	if err != nil {
		t.Fatal(err)
	}
	wantIndex := []int{0, 1, 2, 1, 2, 3, 4, 0, 5, 1}
	if d := wrDiff(info.SegmentIndex, wantIndex); d != "" {
		t.Fatalf("SegmentIndex = %v, want %v", info.SegmentIndex, wantIndex)
	}
	if len(info.Segments) != 6 {
		t.Fatalf("%d segments written, want 6", len(info.Segments))
	}
	if d := wrDiff(before, p); d != "" {
		t.Errorf("Write modified the program: %s", d)
	}
	// A payload whose size no other payload has is read once (to write it).
	if n := counters[6].Bytes(); n != 77 {
		t.Errorf("unique-size payload read %d bytes, want 77", n)
	}

	f := wrOpenBytes(t, buf.Bytes())
	wrCheckLayout(t, f, info, DefaultSegmentAlignment)
	ep := f.Program.Plan(0)
	for di, want := range []uint32{1, 2, 1} {
		if got := ep.Delegates[di].Processed.Index; got != want {
			t.Errorf("delegate %d index %d, want %d", di, got, want)
		}
	}
	for di, want := range [][]byte{payloads[1], payloads[2], payloads[3]} {
		if got, err := wrData(f.DelegateData(0, di)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("delegate %d payload differs (%v)", di, err)
		}
	}
	for i, key := range []string{"a", "b", "c", "e", "f"} {
		want := payloads[[]int{4, 5, 6, 8, 1}[i]]
		if got, err := wrData(f.NamedData(key)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("named data %q differs (%v)", key, err)
		}
	}

	// Without Dedup: one segment per payload, references untouched.
	buf.Reset()
	info, err = Write(&buf, p, srcs, nil)
	if err != nil {
		t.Fatal(err)
	}
	f = wrOpenBytes(t, buf.Bytes())
	if len(f.Program.Segments) != len(srcs) || f.Program.Plan(0).Delegates[2].Processed.Index != 3 {
		t.Errorf("without Dedup: %d segments, delegate 2 -> %d", len(f.Program.Segments), f.Program.Plan(0).Delegates[2].Processed.Index)
	}
	wrCheckLayout(t, f, info, DefaultSegmentAlignment)
}

func TestWriteHeaderOnlyWithSegmentBytes(t *testing.T) {
	p := wrProgram(0)
	empty := []*io.SectionReader{wrSection(nil), wrSection([]byte{})}
	var buf bytes.Buffer
	info, err := Write(&buf, p, empty, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := wrOpenBytes(t, buf.Bytes())
	if f.Header != nil || info.Header != nil || int64(buf.Len()) != info.ProgramSize {
		t.Errorf("header written for 0-byte segments: %+v", f.Header)
	}
	if d := wrDiff(f.Program.Segments, []*DataSegment{{0, 0}, {0, 0}}); d != "" {
		t.Errorf("segments %s", d)
	}

	// Absent vs empty segments table when there are no payloads.
	for _, segs := range [][]*DataSegment{nil, {}} {
		p.Segments = segs
		buf.Reset()
		if _, err := Write(&buf, p, nil, nil); err != nil {
			t.Fatal(err)
		}
		if got := wrOpenBytes(t, buf.Bytes()).Program.Segments; (got == nil) != (segs == nil) {
			t.Errorf("segments %v written as %v", segs, got)
		}
	}

	// A delegate that refers to an empty segment still needs the header:
	// ExecuTorch cannot resolve any SEGMENT reference without it.
	buf.Reset()
	info, err = Write(&buf, wrProgram(1), []*io.SectionReader{wrSection(nil), wrSection(nil)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f = wrOpenBytes(t, buf.Bytes())
	if f.Header == nil || f.Header.SegmentBaseOffset == 0 || f.Size != int64(f.Header.SegmentBaseOffset) {
		t.Errorf("empty SEGMENT delegate data: header %+v, size %d", f.Header, f.Size)
	}
	wrCheckLayout(t, f, info, DefaultSegmentAlignment)
	if got, err := wrData(f.DelegateData(0, 0)); err != nil || len(got) != 0 {
		t.Errorf("empty delegate payload: %q (%v)", got, err)
	}

	// So do an all-empty constant segment, named data and mutable data
	// in empty segments: each is loaded through the segment base.
	for name, edit := range map[string]func(p *Program){
		"constant segment": func(p *Program) { p.ConstantSegment.Offsets = []uint64{0, 0} },
		"named data":       func(p *Program) { p.NamedData = []*NamedData{{Key: "k", SegmentIndex: 1}} },
		"mutable data": func(p *Program) {
			p.MutableDataSegments = []*SubsegmentOffsets{{SegmentIndex: 1, Offsets: []uint64{0}}}
		},
	} {
		p := wrProgram(0)
		edit(p)
		buf.Reset()
		info, err := Write(&buf, p, []*io.SectionReader{wrSection(nil), wrSection(nil)}, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f := wrOpenBytes(t, buf.Bytes())
		if f.Header == nil || f.Header.SegmentBaseOffset == 0 {
			t.Errorf("%s in an empty segment: no header", name)
		}
		wrCheckLayout(t, f, info, DefaultSegmentAlignment)
		if errs := wrErrorFindings(f); len(errs) != 0 {
			t.Errorf("%s: Verify errors %v", name, errs)
		}
	}

	// A trailing empty segment is aligned like any other: the segment
	// data runs to its offset, as upstream's concatenation does.
	p = wrProgram(1)
	buf.Reset()
	info, err = Write(&buf, p, []*io.SectionReader{wrSection(nil), wrSection([]byte("0123456789")), wrSection(nil)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f = wrOpenBytes(t, buf.Bytes())
	if d := wrDiff(f.Program.Segments, []*DataSegment{{0, 0}, {0, 10}, {128, 0}}); d != "" {
		t.Errorf("segments: %s", d)
	}
	wrCheckLayout(t, f, info, DefaultSegmentAlignment)
	if got, err := wrData(f.DelegateData(0, 0)); err != nil || string(got) != "0123456789" {
		t.Errorf("delegate payload %q (%v)", got, err)
	}
}

func TestWriteSegmentAlignment(t *testing.T) {
	payloads := []*io.SectionReader{wrSection([]byte{}), wrSection(bytes.Repeat([]byte{7}, 50)), wrSection(bytes.Repeat([]byte{9}, 13))}
	for _, c := range []struct {
		opt, want uint64
	}{{0, 128}, {12, 12}, {4096, 4096}, {1, 1}} {
		var buf bytes.Buffer
		info, err := Write(&buf, wrProgram(2), payloads, &WriteOptions{SegmentAlignment: c.opt})
		if err != nil {
			t.Fatalf("alignment %d: %v", c.opt, err)
		}
		f := wrOpenBytes(t, buf.Bytes())
		wrCheckLayout(t, f, info, c.want)
		for i := range 2 {
			if got, err := wrData(f.DelegateData(0, i)); err != nil || int64(len(got)) != payloads[i+1].Size() {
				t.Errorf("alignment %d: delegate %d payload %d bytes (%v)", c.opt, i, len(got), err)
			}
		}
	}
	if _, err := Write(io.Discard, wrProgram(2), payloads, &WriteOptions{SegmentAlignment: math.MaxUint64}); err == nil {
		t.Error("absurd segment alignment accepted")
	}
}

// failingReaderAt returns err once more than limit bytes are asked for.
type failingReaderAt struct {
	data  []byte
	limit int64
	err   error
}

func (f *failingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.limit {
		n := max(0, f.limit-off)
		copy(p, f.data[off:off+n])
		return int(n), f.err
	}
	return copy(p, f.data[off:]), nil
}

func TestWriteSourceErrors(t *testing.T) {
	p := wrProgram(2)
	good := wrSection(bytes.Repeat([]byte{1}, 3000))
	broken := errors.New("disk on fire")
	bad := io.NewSectionReader(&failingReaderAt{data: make([]byte, 5<<20), limit: 2 << 20, err: broken}, 0, 5<<20)
	_, err := Write(io.Discard, p, []*io.SectionReader{wrSection(nil), good, bad}, nil)
	var se *SegmentError
	if !errors.As(err, &se) || se.Index != 2 || !errors.Is(err, broken) {
		t.Errorf("failing source: %v", err)
	}
	// A source shorter than its section says.
	short := io.NewSectionReader(bytes.NewReader(make([]byte, 10)), 0, 100)
	_, err = Write(io.Discard, p, []*io.SectionReader{wrSection(nil), short, good}, nil)
	if !errors.As(err, &se) || se.Index != 1 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short source: %v", err)
	}
	// The same under Dedup, where the short source is read while comparing.
	short2 := io.NewSectionReader(bytes.NewReader(make([]byte, 10)), 0, 3000)
	_, err = Write(io.Discard, p, []*io.SectionReader{wrSection(nil), good, short2}, &WriteOptions{Dedup: true})
	if !errors.As(err, &se) || se.Index != 2 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short source under Dedup: %v", err)
	}
	if _, err = Write(io.Discard, p, []*io.SectionReader{nil}, nil); !errors.As(err, &se) || se.Index != 0 {
		t.Errorf("nil source: %v", err)
	}
	if _, err = Write(io.Discard, nil, nil, nil); err == nil {
		t.Error("nil program accepted")
	}
}

func TestWriteRefusesUnwritablePrograms(t *testing.T) {
	p := wrProgram(1)
	// A model value no file can hold: a Tensor member without its table.
	p.Plan(0).Values = append(p.Plan(0).Values, &EValue{Val: (*Tensor)(nil)})
	_, err := Write(io.Discard, p, []*io.SectionReader{wrSection(nil), wrSection([]byte("x"))}, nil)
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Path != "execution_plan[0].values[1].val" {
		t.Errorf("typed nil value: %v", err)
	}
	// Dedup cannot remap a reference to a payload that was not given.
	p = wrProgram(1, 5)
	_, err = Write(io.Discard, p, []*io.SectionReader{wrSection(nil), wrSection([]byte("x"))}, &WriteOptions{Dedup: true})
	if !errors.As(err, &fe) || fe.Path != "named_data[0].segment_index" {
		t.Errorf("dangling reference under Dedup: %v", err)
	}
}
