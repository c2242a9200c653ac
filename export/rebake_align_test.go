package export

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInferAlignment(t *testing.T) {
	seg := func(off, size uint64) *pte.DataSegment { return &pte.DataSegment{Offset: off, Size: size} }
	file := func(progSize, base uint64, segs ...*pte.DataSegment) *pte.File {
		return &pte.File{Header: &pte.ExtendedHeader{Magic: "eh00", Length: 32, ProgramSize: progSize, SegmentBaseOffset: base},
			Program: &pte.Program{Segments: segs}}
	}
	for _, c := range []struct {
		name string
		f    *pte.File
		want uint64
	}{
		{"no header", &pte.File{Program: &pte.Program{}}, 128},
		{"128, base and offsets also multiples of 256", file(944, 1024, seg(0, 0), seg(0, 200), seg(256, 64)), 128},
		{"128, base a multiple of 4096", file(4000, 4096, seg(0, 100), seg(128, 50)), 128},
		{"4096 shown by the base alone", file(760, 4096, seg(0, 0), seg(0, 384)), 4096},
		{"4096 shown by the offsets alone", file(5000, 8192, seg(0, 100), seg(4096, 10)), 4096},
		{"8192", file(760, 8192, seg(0, 100), seg(8192, 5)), 8192},
		{"64 KiB", file(760, 64<<10, seg(0, 100), seg(64<<10, 5)), 64 << 10},
		{"another writer's layout", file(760, 768, seg(0, 100), seg(100, 5)), 128},
		{"offsets of 4096, base of 128", file(760, 768, seg(0, 100), seg(4096, 5)), 128},
		{"absent segment entry", file(760, 4096, nil), 128},
		{"overflowing segment", file(760, 4096, seg(0, 1<<63), seg(1<<63, 1<<63), seg(0, 1)), 128},
	} {
		assert.Equal(t, c.want, inferAlignment(c.f), c.name)
	}
}

// rebakeLayout re-bakes name from vectors/pte with opts and returns the
// input and output files, open.
func rebakeLayout(t *testing.T, name string, opts *RebakeOptions) (in, out *pte.File) {
	t.Helper()
	dir := testkit.SharedDir(t, "vectors", "pte")
	outPath := filepath.Join(t.TempDir(), "out.pte")
	_, err := Rebake(filepath.Join(dir, name+".pte"), outPath, opts)
	require.NoError(t, err)
	in, err = pte.Open(filepath.Join(dir, name+".pte"))
	require.NoError(t, err)
	t.Cleanup(func() { in.Close() })
	out, err = pte.Open(outPath)
	require.NoError(t, err)
	t.Cleanup(func() { out.Close() })
	return in, out
}

// TestRebakeKeepsSegmentLayout re-bakes every upstream-written program and
// checks that its layout rules survive: the same segments at the same
// offsets relative to the segment base, and the base rounded as the input
// rounded it (4096 for trt_segment_alignment_4096, 128 for the others, even
// where their base happens to be a multiple of a larger power of two).
func TestRebakeKeepsSegmentLayout(t *testing.T) {
	_, names := vectorCases(t)
	budget := int64(3 << 30)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			in, out := rebakeLayout(t, name, &RebakeOptions{WeightStreamingBudget: &budget})
			if in.Header == nil {
				assert.Nil(t, out.Header, "a file without segment data gains none")
				return
			}
			require.NotNil(t, out.Header)
			want := uint64(128)
			if strings.Contains(name, "alignment_4096") {
				want = 4096
			}
			assert.Equal(t, want, inferAlignment(in))
			require.Len(t, out.Program.Segments, len(in.Program.Segments))
			for i, s := range in.Program.Segments {
				assert.Equal(t, *s, *out.Program.Segments[i], "segment %d (offset, size) relative to the base", i)
			}
			assert.Equal(t, roundUp(out.Header.ProgramSize, want), out.Header.SegmentBaseOffset,
				"segment base %d of a %d-byte program", out.Header.SegmentBaseOffset, out.Header.ProgramSize)
		})
	}
}

// TestRebakeSegmentAlignmentOverrides checks that an explicit alignment
// wins over the input's.
func TestRebakeSegmentAlignmentOverrides(t *testing.T) {
	budget := int64(1)
	for _, c := range []struct {
		name  string
		align uint64
	}{{"trt_segment_alignment_4096", 256}, {"trt_two_engines_chain", 4096}} {
		_, out := rebakeLayout(t, c.name, &RebakeOptions{WeightStreamingBudget: &budget, SegmentAlignment: c.align})
		require.NotNil(t, out.Header)
		assert.Equal(t, roundUp(out.Header.ProgramSize, c.align), out.Header.SegmentBaseOffset, c.name)
		for i, s := range out.Program.Segments {
			assert.Zero(t, s.Offset%c.align, "%s: segment %d", c.name, i)
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
			a := inferAlignment(f)
			assert.True(t, reproducesLayout(f.Header, f.Program.Segments, a),
				"%s: alignment %d does not reproduce base %d (program %d) and segments %s",
				filepath.Base(p), a, f.Header.SegmentBaseOffset, f.Header.ProgramSize, fmtSegments(f.Program.Segments))
			checked++
		}
		f.Close()
	}
	assert.Greater(t, checked, 10, "corpus files with segments")
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
