package pte

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// wrFailWriter fails the test on any write: Write must refuse a program
// before its first byte.
type wrFailWriter struct{ t *testing.T }

func (w wrFailWriter) Write(b []byte) (int, error) {
	w.t.Errorf("Write wrote %d bytes of a program it refuses", len(b))
	return len(b), nil
}

// wrWantRefused checks that p with the payloads segs is refused before
// anything is written, by Write and by WriteFile, with an error whose
// *FormatError has the given path, and returns the error.
func wrWantRefused(t *testing.T, p *Program, segs []*io.SectionReader, opts *WriteOptions, path string) error {
	t.Helper()
	_, err := Write(wrFailWriter{t}, p, segs, opts)
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("Write err = %v, want a *FormatError", err)
	}
	if fe.Path != path {
		t.Errorf("error path %q, want %q (%v)", fe.Path, path, err)
	}
	dir := t.TempDir()
	if _, err := WriteFile(filepath.Join(dir, "out.pte"), p, segs, opts); err == nil {
		t.Errorf("WriteFile accepted what Write refused")
	}
	if names := wrDirNames(t, dir); len(names) != 0 {
		t.Errorf("WriteFile left %v", names)
	}
	return err
}

// TestWriteRefusesDanglingReferences: a reference to a payload that was not
// given is refused at plan time, naming the field.
func TestWriteRefusesDanglingReferences(t *testing.T) {
	two := func() []*io.SectionReader {
		return []*io.SectionReader{wrSection(make([]byte, 32)), wrSection([]byte("engine"))}
	}
	for _, c := range []struct {
		name string
		edit func(p *Program)
		path string
	}{
		{"constant segment", func(p *Program) {
			p.ConstantSegment = &SubsegmentOffsets{SegmentIndex: 7, Offsets: []uint64{0, 16}}
		}, "constant_segment.segment_index"},
		{"delegate SEGMENT", func(p *Program) {
			p.Plan(0).Delegates[0].Processed.Index = 9
		}, "execution_plan[0].delegates[0].processed.index"},
		{"delegate INLINE", func(p *Program) {
			p.Plan(0).Delegates[0].Processed = &BackendDelegateDataReference{Location: DataLocationINLINE, Index: 0}
		}, "execution_plan[0].delegates[0].processed.index"},
		{"named data", func(p *Program) {
			p.NamedData = []*NamedData{{Key: "a", SegmentIndex: 1}, {Key: "b", SegmentIndex: 2}}
		}, "named_data[1].segment_index"},
		{"mutable data", func(p *Program) {
			p.MutableDataSegments = []*SubsegmentOffsets{{SegmentIndex: 5, Offsets: []uint64{0}}}
		}, "mutable_data_segments[0].segment_index"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := wrProgram(1)
			c.edit(p)
			for _, opts := range []*WriteOptions{nil, {Dedup: true}} {
				err := wrWantRefused(t, p, two(), opts, c.path)
				var fe *FormatError
				if errors.As(err, &fe) && fe.Code != CodeNotFound {
					t.Errorf("code %v, want NotFound", fe.Code)
				}
			}
		})
	}
	// An unused constant segment index (only the placeholder offset) is
	// what upstream writes for programs without constants: accepted.
	p := wrProgram(0)
	p.ConstantSegment = &SubsegmentOffsets{SegmentIndex: 0, Offsets: []uint64{}}
	var buf bytes.Buffer
	if _, err := Write(&buf, p, nil, nil); err != nil {
		t.Fatalf("program without constants: %v", err)
	}
	wrOpenBytes(t, buf.Bytes())
}

// TestWriteRefusesWhatNewFileRefuses: a program that encodes but that
// Program::load would refuse is not written; the *VerifyError carries the
// reader's *FormatError.
func TestWriteRefusesWhatNewFileRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(p *Program)
		path string
	}{
		{"TensorList item out of range", func(p *Program) {
			ep := p.Plan(0)
			ep.Values = append(ep.Values, &EValue{Val: &TensorList{Items: []int32{0, 99}}})
		}, "execution_plan[0].values[1].val.items[1]"},
		{"tensor without sizes", func(p *Program) {
			p.Plan(0).Values[0].Val.(*Tensor).Sizes = nil
		}, "execution_plan[0].values[0].val.sizes"},
		{"no execution plan", func(p *Program) { p.executionPlan = nil }, "execution_plan"},
		{"constant_buffer and constant_segment", func(p *Program) {
			p.ConstantSegment = &SubsegmentOffsets{SegmentIndex: 0, Offsets: []uint64{0, 16}}
			p.ConstantBuffer = []*Buffer{{Storage: []byte{}}, {Storage: make([]byte, 16)}}
		}, "constant_buffer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := wrProgram(1)
			c.edit(p)
			segs := []*io.SectionReader{wrSection(make([]byte, 32)), wrSection([]byte("engine"))}
			err := wrWantRefused(t, p, segs, nil, c.path)
			var ve *VerifyError
			if !errors.As(err, &ve) || len(ve.Findings) != 1 || !strings.Contains(err.Error(), "would not load") {
				t.Errorf("err = %v, want a *VerifyError with one finding", err)
			}
			// The same program, written without the check, is indeed
			// refused by the reader for the same reason.
			b := wrWriteUnchecked(t, p, segs, nil)
			_, rerr := NewFile(bytes.NewReader(b), int64(len(b)))
			var fe *FormatError
			if !errors.As(rerr, &fe) || fe.Path != c.path {
				t.Errorf("reader: %v, want path %q", rerr, c.path)
			}
		})
	}
}

// TestWriteStrict: method-level problems are written as they are (so that
// a damaged file can be re-written), unless Strict asks for a program that
// Verify accepts.
func TestWriteStrict(t *testing.T) {
	p := wrProgram(1)
	ep := p.Plan(0)
	ep.Values = append(ep.Values, &EValue{}) // union type NONE
	ep.Chains = []*Chain{}
	segs := func() []*io.SectionReader {
		return []*io.SectionReader{wrSection(nil), wrSection([]byte("engine"))}
	}
	var buf bytes.Buffer
	if _, err := Write(&buf, p, segs(), nil); err != nil {
		t.Fatalf("without Strict: %v", err)
	}
	f := wrOpenBytes(t, buf.Bytes())
	want := map[string]bool{"execution_plan[0].values[1].val": true, "execution_plan[0].chains": true}
	for k := range wrErrorFindings(f) {
		delete(want, strings.Fields(k)[0])
	}
	if len(want) != 0 {
		t.Fatalf("Verify of the written file misses %v", want)
	}

	err := wrWantRefused(t, p, segs(), &WriteOptions{Strict: true}, "execution_plan[0].values[1].val")
	var ve *VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want *VerifyError", err)
	}
	paths := map[string]bool{}
	for _, fd := range ve.Findings {
		if fd.Severity != SeverityError || fd.Method != "forward" {
			t.Errorf("finding %v", fd)
		}
		paths[fd.Err.Path] = true
	}
	if !paths["execution_plan[0].values[1].val"] || !paths["execution_plan[0].chains"] {
		t.Errorf("findings %v", ve.Findings)
	}
	if !strings.Contains(err.Error(), "more)") || !strings.Contains(err.Error(), `method "forward"`) {
		t.Errorf("message %q", err)
	}

	// A clean program passes Strict, byte for byte as without it.
	var strict bytes.Buffer
	buf.Reset()
	if _, err := Write(&strict, wrProgram(1), segs(), &WriteOptions{Strict: true}); err != nil {
		t.Fatalf("clean program refused under Strict: %v", err)
	}
	if _, err := Write(&buf, wrProgram(1), segs(), nil); err != nil || !bytes.Equal(buf.Bytes(), strict.Bytes()) {
		t.Errorf("Strict changed the bytes (%v)", err)
	}
}

// TestPlanImage: the image the read-back check sees is the written file
// with zeros for padding and payloads.
func TestPlanImage(t *testing.T) {
	payload := bytes.Repeat([]byte{0xAB}, 300)
	p := wrProgram(1)
	segs := []*io.SectionReader{wrSection(nil), wrSection(payload)}
	pl, err := planWrite(p, segs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := pl.writeTo(&buf); err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(buf.Bytes())
	clear(want[pl.segmentBase:])
	im := &planImage{region: pl.region, size: pl.info.Size}
	got, err := io.ReadAll(io.NewSectionReader(im, 0, im.size+10))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("image differs from the written file (%v)", err)
	}
	// Reads straddling the header's room and the end.
	for _, off := range []int64{0, 3, 8 + wrHeaderPad - 1, 8 + wrHeaderPad, im.size - 5} {
		b := make([]byte, 7)
		n, err := im.ReadAt(b, off)
		wantN := int(min(7, im.size-off))
		if n != wantN || !bytes.Equal(b[:n], want[off:off+int64(n)]) || (n < 7) != (err == io.EOF) {
			t.Errorf("ReadAt(7, %d) = %d, %v", off, n, err)
		}
	}
	if n, err := im.ReadAt(make([]byte, 1), im.size); n != 0 || err != io.EOF {
		t.Errorf("ReadAt at the end = %d, %v", n, err)
	}
	if _, err := im.ReadAt(make([]byte, 1), -1); err == nil {
		t.Errorf("negative offset accepted")
	}
}

// TestWithHeaderRoom: the room for the extended header is made the same
// way in the builder's unused bytes as in a copy, and the check reads the
// region the writer writes without copying it.
func TestWithHeaderRoom(t *testing.T) {
	fb := []byte{16, 0, 0, 0, 'E', 'T', '1', '2', 1, 2, 3, 4, 5, 6, 7, 8}
	want := append([]byte{16 + wrHeaderPad, 0, 0, 0, 'E', 'T', '1', '2'}, make([]byte, wrHeaderPad)...)
	want = append(want, fb[8:]...)
	for _, room := range []int{0, wrHeaderPad - 1, wrHeaderPad, wrHeaderPad + 8} {
		buf := append(bytes.Repeat([]byte{0xEE}, room), fb...)
		got := withHeaderRoom(buf, room, wrHeaderPad)
		if !bytes.Equal(got, want) {
			t.Errorf("room %d: got %v, want %v", room, got, want)
		}
		if inPlace := &got[len(got)-1] == &buf[len(buf)-1]; inPlace != (room >= wrHeaderPad) {
			t.Errorf("room %d: made in the builder's bytes: %v", room, inPlace)
		}
	}
	if got := withHeaderRoom(fb, 0, 0); !bytes.Equal(got, fb) {
		t.Errorf("no room asked: got %v", got)
	}

	pl, err := planWrite(wrProgram(1), []*io.SectionReader{wrSection(nil), wrSection([]byte("engine"))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFileWith(&planImage{region: pl.region, size: pl.info.Size}, pl.info.Size, &OpenOptions{region: pl.region})
	if err != nil {
		t.Fatal(err)
	}
	if &f.region[0] != &pl.region[0] {
		t.Error("the check copied the region")
	}
}
