package export

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seg and file make the layout of a file for the alignment inference:
// a segment, and a header with a program size, a base and segments.
func seg(off, size uint64) *pte.DataSegment { return &pte.DataSegment{Offset: off, Size: size} }

func file(progSize, base uint64, segs ...*pte.DataSegment) *pte.File {
	return &pte.File{Header: &pte.ExtendedHeader{Magic: "eh00", Length: 32, ProgramSize: progSize, SegmentBaseOffset: base},
		Program: &pte.Program{Segments: segs}}
}

func TestInferAlignment(t *testing.T) {
	for _, c := range []struct {
		name string
		f    *pte.File
		want uint64
		ok   bool
	}{
		{"no header", &pte.File{Program: &pte.Program{}}, 128, true},
		{"128, base and offsets also multiples of 256", file(944, 1024, seg(0, 0), seg(0, 200), seg(256, 64)), 128, true},
		{"128, base a multiple of 4096", file(4000, 4096, seg(0, 100), seg(128, 50)), 128, true},
		{"4096 shown by the base alone", file(760, 4096, seg(0, 0), seg(0, 384)), 4096, true},
		{"4096 shown by the offsets alone", file(5000, 8192, seg(0, 100), seg(4096, 10)), 4096, true},
		{"8192", file(760, 8192, seg(0, 100), seg(8192, 5)), 8192, true},
		{"64 KiB", file(760, 64<<10, seg(0, 100), seg(64<<10, 5)), 64 << 10, true},
		{"1024", file(760, 1024, seg(0, 328), seg(1024, 344)), 1024, true},
		{"256", file(760, 768, seg(0, 328), seg(512, 344)), 256, true},
		{"12, not a power of two", file(760, 768, seg(0, 100), seg(108, 5), seg(120, 1)), 12, true},
		{"the largest that reproduces (192 would too)", file(600, 768, seg(0, 200), seg(384, 5)), 384, true},
		{"tightly packed by another writer", file(760, 760, seg(0, 100), seg(100, 5)), 20, true},
		{"the largest up to the 1 MiB cap", file(2<<20-300, 2<<20, seg(0, 100)), 1 << 20, true},
		{"another writer's layout", file(760, 768, seg(0, 100), seg(100, 5)), 128, false},
		{"offsets of 4096, base of 128", file(760, 768, seg(0, 100), seg(4096, 5)), 128, false},
		{"absent segment entry", file(760, 4096, nil), 128, false},
		{"overflowing segment", file(760, 4096, seg(0, 1<<63), seg(1<<63, 1<<63), seg(0, 1)), 128, false},
	} {
		got, ok := c.f.SegmentAlignment()
		assert.Equal(t, c.want, got, c.name)
		assert.Equal(t, c.ok, ok, c.name)
	}
}

// rebakeFile re-bakes inPath with opts and returns the input and output
// files, open, and the re-bake's result.
func rebakeFile(t *testing.T, inPath string, opts *RebakeOptions) (in, out *pte.File, res *Result) {
	t.Helper()
	outPath := filepath.Join(t.TempDir(), "out.pte")
	res, err := Rebake(inPath, outPath, opts)
	require.NoError(t, err)
	in, err = pte.Open(inPath)
	require.NoError(t, err)
	t.Cleanup(func() { in.Close() })
	out, err = pte.Open(outPath)
	require.NoError(t, err)
	t.Cleanup(func() { out.Close() })
	return in, out, res
}

// assertLayoutKept checks that out has in's segments at the same offsets
// relative to the segment base, and a base rounded up as a writer with
// alignment written (the input's alignment) would round it: to a multiple
// of written, unless 128 reproduces the input, which is then kept.
func assertLayoutKept(t *testing.T, in, out *pte.File, written uint64) {
	t.Helper()
	if in.Header == nil {
		assert.Nil(t, out.Header, "a file without segment data gains none")
		return
	}
	require.NotNil(t, out.Header)
	a, ok := in.SegmentAlignment()
	require.True(t, ok, "written with alignment %d, the input's layout is reproducible", written)
	if a != pte.DefaultSegmentAlignment {
		assert.Zero(t, a%written, "alignment %d keeps the input's base alignment %d", a, written)
		assert.Zero(t, out.Header.SegmentBaseOffset%written, "segment base %d", out.Header.SegmentBaseOffset)
	}
	require.Len(t, out.Program.Segments, len(in.Program.Segments))
	for i, s := range in.Program.Segments {
		assert.Equal(t, *s, *out.Program.Segments[i], "segment %d (offset, size) relative to the base", i)
	}
	assert.Equal(t, roundUp(out.Header.ProgramSize, a), out.Header.SegmentBaseOffset,
		"segment base %d of a %d-byte program", out.Header.SegmentBaseOffset, out.Header.ProgramSize)
}

// TestRebakeKeepsSegmentLayout re-bakes every upstream-written program and
// checks that its layout rules survive (see assertLayoutKept); the
// alignment each was written with is its serialize_options.
func TestRebakeKeepsSegmentLayout(t *testing.T) {
	dir, names := vectorCases(t)
	budget := int64(3 << 30)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			var vin vecInput
			readJSON(t, filepath.Join(dir, name+".input.json"), &vin)
			written := vin.SerializeOptions.SegmentAlignment
			if written == 0 {
				written = pte.DefaultSegmentAlignment
			}
			inPath := filepath.Join(dir, name+".pte")
			outPath := filepath.Join(t.TempDir(), "o.pte")
			if _, err := Rebake(inPath, outPath, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)}); refusedByRecord(t, dir, name, outPath, err) {
				return
			}
			if _, bad := verdict(t, inPath); bad {
				return // --verify fails it: not re-baked (TestRebakeIffVerifyPasses)
			}
			in, out, res := rebakeFile(t, inPath, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)})
			assertLayoutKept(t, in, out, written)
			for _, w := range res.Warnings {
				assert.NotEqual(t, WarnLayout, w.Kind, w.Msg)
			}
		})
	}
}

// twoEngineProgram returns a TensorRT program with two engines of sizes
// that leave gaps between their segments, written by pte.Write with
// segment alignment align, at a path in a temporary directory.
func twoEngineProgram(t *testing.T, align uint64) string {
	t.Helper()
	return twoEngineProgramEdited(t, align, nil)
}

// twoEngineProgramEdited is twoEngineProgram with edit applied to the
// program before it is written.
func twoEngineProgramEdited(t *testing.T, align uint64, edit func(p *pte.Program)) string {
	t.Helper()
	m := chainMethod("forward", 2)
	for i, n := range []int{300, 333} {
		e := strings.Repeat(string(rune('a'+i)), n)
		m.Calls[i].Engine = EngineReader(strings.NewReader(e), int64(n))
	}
	var buf bytes.Buffer
	_, err := Write(&buf, &Program{Methods: []*Method{m}}, nil)
	require.NoError(t, err)
	f, err := pte.NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	segs, err := f.SegmentReaders()
	require.NoError(t, err)
	if edit != nil {
		edit(f.Program)
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("align%d.pte", align))
	w, err := os.Create(path)
	require.NoError(t, err)
	_, err = pte.Write(w, f.Program, segs, &pte.WriteOptions{SegmentAlignment: align})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return path
}

// TestRebakeKeepsAnyAlignment: programs written with alignments that are
// not 128 (including one that is not a power of two) keep their segment
// offsets and base alignment through a re-bake that changes the program's
// size.
func TestRebakeKeepsAnyAlignment(t *testing.T) {
	budget := int64(123456789)
	for _, align := range []uint64{12, 256, 1024, 4096, 65536} {
		t.Run(fmt.Sprint(align), func(t *testing.T) {
			path := twoEngineProgram(t, align)
			in, out, res := rebakeFile(t, path, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget), TargetDevice: "cuda:0"})
			require.NotEqual(t, in.Header.ProgramSize, out.Header.ProgramSize, "the re-bake changes the program's size")
			a, _ := in.SegmentAlignment()
			assert.NotEqual(t, uint64(pte.DefaultSegmentAlignment), a, "the test input is not 128-reproducible")
			assertLayoutKept(t, in, out, align)
			for _, w := range res.Warnings {
				assert.NotEqual(t, WarnLayout, w.Kind, w.Msg)
			}
		})
	}
}

// TestRebakeSegmentAlignmentOverrides checks that an explicit alignment
// wins over the input's.
func TestRebakeSegmentAlignmentOverrides(t *testing.T) {
	budget := int64(1)
	for _, c := range []struct{ written, align uint64 }{{4096, 256}, {128, 4096}, {1024, 12}} {
		_, out, _ := rebakeFile(t, twoEngineProgram(t, c.written), &RebakeOptions{WeightStreamingBudget: budgetPtr(budget), SegmentAlignment: c.align})
		require.NotNil(t, out.Header)
		assert.Equal(t, roundUp(out.Header.ProgramSize, c.align), out.Header.SegmentBaseOffset, "%d over %d", c.align, c.written)
		for i, s := range out.Program.Segments {
			assert.Zero(t, s.Offset%c.align, "%d over %d: segment %d", c.align, c.written, i)
		}
	}
}

// TestInferAlignmentReproducesCorpus checks the rule on real files from
// several writers: for every corpus program with segment data, the
// inferred alignment reproduces its layout exactly.
func TestInferAlignmentReproducesCorpus(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(testkit.SharedDir(t, "corpus"), "*.pte"))
	require.NoError(t, err)
	checked := 0
	for _, p := range paths {
		f, err := pte.Open(p)
		if err != nil {
			continue // refused files have no layout to keep
		}
		if f.Header != nil && f.Header.SegmentBaseOffset != 0 {
			a, ok := f.SegmentAlignment()
			assert.True(t, ok, "%s: a reproducing alignment", filepath.Base(p))
			assert.True(t, upstreamRule(f.Header, f.Program.Segments, a),
				"%s: alignment %d does not reproduce base %d (program %d) and segments %s",
				filepath.Base(p), a, f.Header.SegmentBaseOffset, f.Header.ProgramSize, fmtSegments(f.Program.Segments))
			checked++
		}
		f.Close()
	}
	assert.NotZero(t, checked, "corpus files with segments")
}

func fmtSegments(segs []*pte.DataSegment) string {
	var b strings.Builder
	for _, s := range segs {
		if s == nil {
			b.WriteString("<nil> ")
			continue
		}
		fmt.Fprintf(&b, "%d+%d ", s.Offset, s.Size)
	}
	return b.String()
}

// upstreamRule reports whether h and segs follow ExecuTorch's serializer
// at alignment a: the base is the program size rounded up to a, and each
// segment starts at the end of the previous one rounded up to a.
func upstreamRule(h *pte.ExtendedHeader, segs []*pte.DataSegment, a uint64) bool {
	if roundUp(h.ProgramSize, a) != h.SegmentBaseOffset {
		return false
	}
	var end uint64
	for _, s := range segs {
		if s == nil || roundUp(end, a) != s.Offset {
			return false
		}
		end = s.Offset + s.Size
	}
	return true
}

func roundUp(x, a uint64) uint64 {
	if r := x % a; r != 0 {
		return x + (a - r)
	}
	return x
}
