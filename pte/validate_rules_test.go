package pte

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
)

// vlWrite writes p with the given segment payloads.
func vlWrite(t *testing.T, p *Program, segs ...[]byte) []byte {
	t.Helper()
	srcs := make([]*io.SectionReader, len(segs))
	for i, s := range segs {
		srcs[i] = wrSection(s)
	}
	var buf bytes.Buffer
	if _, err := Write(&buf, p, srcs, nil); err != nil {
		t.Fatalf("write: %v", err)
	}
	return buf.Bytes()
}

// vlWantLoadError checks that NewFile refuses b with a *FormatError of the
// given path, code and message.
func vlWantLoadError(t *testing.T, b []byte, path string, code Code, msg string) {
	t.Helper()
	_, err := NewFile(bytes.NewReader(b), int64(len(b)))
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("NewFile err = %v, want a *FormatError", err)
	}
	if fe.Path != path || fe.Code != code || !strings.Contains(fe.Msg, msg) {
		t.Errorf("got %v [%v]\nwant path %q [%v], message containing %q", fe, fe.Code, path, code, msg)
	}
}

// vlConstProgram has a constant segment (segment 0, 32 bytes) with one
// 16-byte constant at offset 16, used by tensor values[1].
func vlConstProgram() (*Program, []byte) {
	p := wrProgram(0)
	p.ConstantSegment = &SubsegmentOffsets{SegmentIndex: 0, Offsets: []uint64{0, 16}}
	p.Plan(0).Values = append(p.Plan(0).Values,
		&EValue{Val: &Tensor{ScalarType: ScalarTypeFLOAT, Sizes: []int32{4}, DimOrder: []uint8{0}, DataBufferIdx: 1}})
	return p, bytes.Repeat([]byte{7}, 32)
}

// TestLoadRules checks the Program::load rules NewFile applies after the
// flatbuffer verified, one crafted file per rule.
func TestLoadRules(t *testing.T) {
	t.Run("named_data without segments", func(t *testing.T) {
		b := vlWrite(t, wrProgram(0, 0), nil)
		f := shOpen(t, b)
		// Clear Program.segments (slot 4) in the vtable: absent.
		binary.LittleEndian.PutUint16(b[vrTab(t, f, f.Program).vt+4+2*4:], 0)
		vlWantLoadError(t, b, "segments", CodeInvalidArgument, "named_data but no segments")
	})
	t.Run("constant_buffer and constant_segment both used", func(t *testing.T) {
		// Write refuses such a program, so point the (empty) constant_buffer
		// (slot 2) at the one-entry segments vector: read as Buffer tables,
		// the DataSegment tables have no storage, which verifies.
		p, seg := vlConstProgram()
		b := vlWrite(t, p, seg)
		f := shOpen(t, b)
		shPointAt(b, shFieldPos(t, f, f.Program, 2), shTarget(b, shFieldPos(t, f, f.Program, 4)))
		vlWantLoadError(t, b, "constant_buffer", CodeInvalidProgram, "both constant_buffer (1 entries) and constant_segment (2 offsets)")
	})
	t.Run("constant segment index out of range", func(t *testing.T) {
		p, seg := vlConstProgram()
		p.ConstantSegment.SegmentIndex = 1 // stored: index 0 would be a default
		b := vlWrite(t, p, nil, seg)
		f := shOpen(t, b)
		binary.LittleEndian.PutUint32(b[shFieldPos(t, f, f.Program.ConstantSegment, 0):], 9)
		vlWantLoadError(t, b, "constant_segment.segment_index", CodeInvalidProgram, "constant segment index 9 out of range (2 segments)")
	})
	t.Run("constant segment past end of file", func(t *testing.T) {
		p, seg := vlConstProgram()
		b := vlWrite(t, p, seg)
		f := shOpen(t, b)
		binary.LittleEndian.PutUint64(b[shFieldPos(t, f, f.Program.Segments[0], 1):], 1<<40)
		vlWantLoadError(t, b, "segments[0]", CodeInvalidArgument, "run past the end")
	})
	t.Run("constant segment fits", func(t *testing.T) {
		p, seg := vlConstProgram()
		f := shOpen(t, vlWrite(t, p, seg))
		if errs := wrErrorFindings(f); len(errs) != 0 {
			t.Errorf("Verify errors %v", errs)
		}
	})
	for _, c := range []struct {
		name  string
		items []int32
		path  string
		msg   string
	}{
		{"TensorList item past the values", []int32{0, 99}, "execution_plan[0].values[2].val.items[1]", "TensorList item 99 out of range (3 values)"},
		{"TensorList item negative", []int32{-1}, "execution_plan[0].values[2].val.items[0]", "TensorList item -1 out of range"},
		{"TensorList item not a tensor", []int32{1}, "execution_plan[0].values[2].val.items[0]", "refers to value 1, which is not a Tensor"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Write refuses bad items: write tensor items, then patch them.
			p := wrProgram(0)
			ep := p.Plan(0)
			ep.Values = append(ep.Values, &EValue{Val: &Int{IntVal: 3}}, &EValue{Val: &TensorList{Items: make([]int32, len(c.items))}})
			b := vlWrite(t, p, nil)
			f := shOpen(t, b)
			list, _ := vrTab(t, f, f.Program.Plan(0).Values[2]).sub(1)
			start, _, _ := list.vec(0)
			for i, it := range c.items {
				binary.LittleEndian.PutUint32(b[start+4*uint32(i):], uint32(it))
			}
			vlWantLoadError(t, b, c.path, CodeInvalidProgram, c.msg)
		})
	}
	t.Run("TensorList of tensors", func(t *testing.T) {
		p := wrProgram(0)
		p.Plan(0).Values = append(p.Plan(0).Values, &EValue{Val: &TensorList{Items: []int32{0, 0}}})
		shOpen(t, vlWrite(t, p, nil))
	})
}

// TestVerifyDeprecatedConstantBuffer: the runtime needs a constant's bytes
// to fit its inline storage (nbytes <= storage size); longer storage
// (padding) is fine.
func TestVerifyDeprecatedConstantBuffer(t *testing.T) {
	findings := func(t *testing.T, storage int) map[string]int {
		p := wrProgram(0)
		p.ConstantSegment = &SubsegmentOffsets{SegmentIndex: 0, Offsets: []uint64{}}
		p.ConstantBuffer = []*Buffer{{Storage: []byte{}}, {Storage: make([]byte, storage)}}
		// FLOAT [4]: 16 bytes.
		p.Plan(0).Values = append(p.Plan(0).Values,
			&EValue{Val: &Tensor{ScalarType: ScalarTypeFLOAT, Sizes: []int32{4}, DimOrder: []uint8{0}, DataBufferIdx: 1}})
		var buf bytes.Buffer
		if _, err := Write(&buf, p, nil, nil); err != nil {
			t.Fatal(err)
		}
		return wrErrorFindings(shOpen(t, buf.Bytes()))
	}
	const key = "execution_plan[0].values[1].val.data_buffer_idx InvalidArgument"
	for _, c := range []struct {
		storage int
		want    int
	}{{4, 1}, {15, 1}, {16, 0}, {32, 0}} {
		got := findings(t, c.storage)
		if got[key] != c.want || len(got) != c.want {
			t.Errorf("%d-byte storage for a 16-byte tensor: errors %v, want %d at %s", c.storage, got, c.want, key)
		}
	}
}

// TestConstantDataRanges: a constant-segment entry runs to the next larger
// offset (offsets need not be sorted) or to the segment end.
func TestConstantDataRanges(t *testing.T) {
	p := wrProgram(0)
	p.ConstantSegment = &SubsegmentOffsets{SegmentIndex: 0, Offsets: []uint64{0, 32, 16, 48}}
	seg := make([]byte, 60)
	for i := range seg {
		seg[i] = byte(i)
	}
	f := shOpen(t, vlWrite(t, p, seg))
	for i, want := range [][2]int{{0, 16}, {32, 48}, {16, 32}, {48, 60}} {
		got, err := wrData(f.ConstantData(i))
		if err != nil {
			t.Fatalf("ConstantData(%d): %v", i, err)
		}
		if !bytes.Equal(got, seg[want[0]:want[1]]) {
			t.Errorf("ConstantData(%d) = bytes %v, want [%d, %d)", i, got, want[0], want[1])
		}
	}
	_, err := f.ConstantData(4)
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Code != CodeInvalidArgument || fe.Path != "constant_segment.offsets" {
		t.Errorf("ConstantData(4) err = %v, want an out-of-range *FormatError", err)
	}
}

// TestVerifyWarnsInvalidUTF8 checks that names and keys that are not valid
// UTF-8 get a Warning each (and nothing worse: ExecuTorch compares bytes),
// and that valid ones get none.
func TestVerifyWarnsInvalidUTF8(t *testing.T) {
	p := wrProgram(1, 0)
	ep := p.Plan(0)
	ep.Name = "fwd\xff"
	ep.Delegates[0].ID = "TensorRT\xc3"
	ep.Delegates[0].CompileSpecs = []*CompileSpec{{Key: "bud\x80get", Value: []byte("1")}, {Key: "größe", Value: []byte("1")}}
	p.NamedData[0].Key = "\xfe"
	b := vlWrite(t, p, nil, []byte("engine"))
	f, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"execution_plan[0].name":                              true,
		"execution_plan[0].delegates[0].id":                   true,
		"execution_plan[0].delegates[0].compile_specs[0].key": true,
		"named_data[0].key":                                   true,
	}
	for _, fd := range f.Verify() {
		if !strings.Contains(fd.Err.Msg, "UTF-8") {
			if fd.Severity == SeverityError {
				t.Errorf("unexpected %v", fd)
			}
			continue
		}
		if !want[fd.Err.Path] || fd.Severity != SeverityWarning || fd.Err.Code != CodeOk {
			t.Errorf("unexpected %v", fd)
		}
		delete(want, fd.Err.Path)
	}
	for path := range want {
		t.Errorf("no UTF-8 warning for %s", path)
	}
}
