package pte

import (
	"bytes"
	"encoding/binary"
	"errors"
	"github.com/ptekit/ptekit/internal/fbverify"
	"io"
	"slices"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/ptekit/ptekit/internal/fbs/program"
)

// vrBase is the program the verifier rule tests patch: one method with a
// tensor and an Int, two segments (constant, engine) and therefore an
// extended header.
func vrBase(t *testing.T) ([]byte, *File) {
	t.Helper()
	p := wrProgram(1)
	p.Plan(0).Values = append(p.Plan(0).Values, &EValue{Val: &Int{IntVal: 1 << 40}})
	var buf bytes.Buffer
	if _, err := Write(&buf, p, []*io.SectionReader{wrSection(nil), wrSection([]byte("engine"))}, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), shOpen(t, buf.Bytes())
}

// vrTab returns the verified table model object x was decoded from.
func vrTab(t *testing.T, f *File, x any) fbTab {
	t.Helper()
	pos := f.dec.posOf(x)
	if s, ok := x.(*DataSegment); ok {
		pos = f.segmentPos(slices.Index(f.Program.Segments, s)) // segments are found by index
	}
	if pos < 0 {
		t.Fatalf("no table position for %T", x)
	}
	return fbTabAt(f.region, uint32(pos))
}

// vrWantError checks that err is a *FormatError with path and a message
// containing msg, of class InvalidProgram.
func vrWantError(t *testing.T, err error, path, msg string) {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want a *FormatError", err)
	}
	if fe.Path != path || !strings.Contains(fe.Msg, msg) || fe.Code != CodeInvalidProgram {
		t.Errorf("got %v [%v]\nwant path %q, message containing %q [InvalidProgram]", fe, fe.Code, path, msg)
	}
}

// TestVerifierRules patches one byte range of a valid file per rule of the
// FlatBuffers verifier and checks the error that names it.
func TestVerifierRules(t *testing.T) {
	u16 := func(b []byte, at uint32, v uint16) { binary.LittleEndian.PutUint16(b[at:], v) }
	cases := []struct {
		name, path, msg string
		patch           func(t *testing.T, b []byte, f *File)
	}{
		{"table not 4-byte aligned", "execution_plan[0].values[0]", "EValue table at byte",
			func(t *testing.T, b []byte, f *File) {
				start, _, _ := vrTab(t, f, f.Program.Plan(0)).vec(2)
				shPointAt(b, start, shTarget(b, start)+2)
			}},
		{"vtable not 2-byte aligned", "execution_plan[0].values[0]", "outside the flatbuffer or misaligned",
			func(t *testing.T, b []byte, f *File) {
				pos := vrTab(t, f, f.Program.Plan(0).Values[0]).pos
				binary.LittleEndian.PutUint32(b[pos:], binary.LittleEndian.Uint32(b[pos:])+1)
			}},
		// A 2-byte vtable passes the verifier (as in C++: every field reads
		// as absent) and the program then fails Program::load.
		{"vtable smaller than 4 bytes", "execution_plan", "program has no execution_plan",
			func(t *testing.T, b []byte, f *File) { u16(b, vrTab(t, f, f.Program).vt, 2) }},
		{"vtable of odd size", "", "Program vtable size 7 is odd",
			func(t *testing.T, b []byte, f *File) { u16(b, vrTab(t, f, f.Program).vt, 7) }},
		{"field offset below 4", "execution_plan", "field at byte",
			func(t *testing.T, b []byte, f *File) { u16(b, vrTab(t, f, f.Program).vt+4+2*1, 2) }},
		{"offset field not 4-byte aligned", "execution_plan", "is not 4-byte aligned",
			func(t *testing.T, b []byte, f *File) {
				vt := vrTab(t, f, f.Program).vt + 4 + 2*1
				u16(b, vt, binary.LittleEndian.Uint16(b[vt:])+2)
			}},
		{"8-byte scalar not 8-byte aligned", "execution_plan[0].values[1].val.int_val", "is not 8-byte aligned",
			func(t *testing.T, b []byte, f *File) {
				// The Int table's vtable is its own (no other table has
				// that shape), so moving its field breaks only the Int.
				ev := vrTab(t, f, f.Program.Plan(0).Values[1])
				intTab, _ := ev.sub(1)
				vt := intTab.vt + 4
				u16(b, vt, binary.LittleEndian.Uint16(b[vt:])+4)
			}},
		{"zero string offset", "execution_plan[0].name", "string offset is zero",
			func(t *testing.T, b []byte, f *File) {
				binary.LittleEndian.PutUint32(b[shFieldPos(t, f, f.Program.Plan(0), 0):], 0)
			}},
		{"zero table offset", "constant_segment", "table offset is zero",
			func(t *testing.T, b []byte, f *File) {
				binary.LittleEndian.PutUint32(b[shFieldPos(t, f, f.Program, 5):], 0)
			}},
		{"zero element offset", "execution_plan[0].delegates[0]", "element offset is zero",
			func(t *testing.T, b []byte, f *File) {
				start, _, _ := vrTab(t, f, f.Program.Plan(0)).vec(7)
				binary.LittleEndian.PutUint32(b[start:], 0)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, f := vrBase(t)
			c.patch(t, b, f)
			_, err := NewFile(bytes.NewReader(b), int64(len(b)))
			vrWantError(t, err, c.path, c.msg)
		})
	}
}

// TestVerifierWarnings: rules ptekit checks but ExecuTorch's verifier and
// loader do not open the file and give a warning finding at the spot.
func TestVerifierWarnings(t *testing.T) {
	b, f := vrBase(t)
	// non_const_buffer_sizes holds [0, 16]: 4 bytes further on, the low
	// half of element 0 reads as an empty vector whose data is 4-aligned.
	at := shFieldPos(t, f, f.Program.Plan(0), 8)
	shPointAt(b, at, shTarget(b, at)+4)
	g, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("empty 8-byte-element vector at a 4-aligned offset: %v, want it opened", err)
	}
	found := false
	for _, fd := range g.Verify() {
		if fd.Err.Path == "execution_plan[0].non_const_buffer_sizes" && strings.Contains(fd.Err.Msg, "empty vector of 8-byte values") {
			found = fd.Severity == SeverityWarning
		}
	}
	if !found {
		t.Fatalf("no warning finding for the misaligned empty vector: %v", g.Verify())
	}
}

// TestVerifierTableVisitLimit: methods whose values field points at another
// method's values vector make decoding expand the shared tables once per
// method; past one visit per 4 bytes of buffer the file is refused.
func TestVerifierTableVisitLimit(t *testing.T) {
	build := func(t *testing.T, plans int) error {
		p := wrProgram(0)
		first := p.Plan(0)
		for range 300 {
			first.Values = append(first.Values, &EValue{Val: &Null{}})
		}
		for i := 1; i < plans; i++ {
			q := *wrProgram(0).executionPlan[0]
			q.Name = "m" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			p.executionPlan = append(p.executionPlan, &q)
		}
		b := shWrite(t, p)
		f := shOpen(t, b)
		// Plans are written in order, back to front: plan 0's values lie
		// after the later plans, so their forward offsets can reach them.
		shared := shTarget(b, shFieldPos(t, f, f.Program.Plan(0), 2))
		for _, ep := range f.Program.executionPlan[1:] {
			shPointAt(b, shFieldPos(t, f, ep, 2), shared)
		}
		_, err := NewFile(bytes.NewReader(b), int64(len(b)))
		return err
	}
	if err := build(t, 2); err != nil {
		t.Fatalf("two methods sharing a values vector: %v", err)
	}
	err := build(t, 40)
	var fe *FormatError
	if !errors.As(err, &fe) || !strings.Contains(fe.Msg, "more table visits") || !strings.HasPrefix(fe.Path, "execution_plan[") {
		t.Fatalf("40 methods sharing 600 value tables: err %v, want the table-visit limit", err)
	}
}

// TestVerifierTableCountLimit: a program of one shared, empty execution
// plan listed n times visits n+1 tables; the C++ limit is 1,000,000.
func TestVerifierTableCountLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two 4 MB flatbuffers")
	}
	build := func(n int) []byte {
		b := flatbuffers.NewBuilder(4*n + 1024)
		program.ExecutionPlanStart(b)
		ep := program.ExecutionPlanEnd(b)
		b.StartVector(4, n, 4)
		for range n {
			b.PrependUOffsetT(ep)
		}
		plans := b.EndVector(n)
		program.ProgramStart(b)
		program.ProgramAddExecutionPlan(b, plans)
		b.FinishWithFileIdentifier(program.ProgramEnd(b), []byte("ET12"))
		return b.FinishedBytes()
	}
	if _, err := verifyProgramBuffer(build(fbverify.MaxTables - 1)); err != nil {
		t.Fatalf("%d tables: %v", fbverify.MaxTables, err)
	}
	_, err := verifyProgramBuffer(build(fbverify.MaxTables))
	vrWantError(t, err, "execution_plan[999999]", "more than 1000000 tables")
}
