package export

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/pte"
)

// headRoomProgram exports n engines (from files, one of 64 KiB so that the
// layout is page-congruent, the others small) with opts and returns the
// output path.
func headRoomProgram(t *testing.T, n int, opts *Options) string {
	t.Helper()
	dir := t.TempDir()
	sizes := []int{64 << 10}
	for i := 1; i < n; i++ {
		sizes = append(sizes, 300+i)
	}
	paths := writeEngineFiles(t, dir, sizes...)
	m := chainMethod("forward", n)
	for i, p := range paths {
		m.Calls[i].Engine = EngineFile(p)
	}
	out := filepath.Join(dir, "out.pte")
	_, err := WriteFile(out, &Program{Methods: []*Method{m}}, opts)
	require.NoError(t, err)
	return out
}

func openHead(t *testing.T, path string) (programSize, base uint64, room uint64) {
	t.Helper()
	f, err := pte.Open(path)
	require.NoError(t, err)
	defer f.Close()
	require.NotNil(t, f.Header)
	return f.Header.ProgramSize, f.Header.SegmentBaseOffset, f.HeadRoom()
}

// TestExportHeadRoomInPlace: a fresh export with the default head room
// takes the largest budget (19 digits) on every delegate in place, writing
// only bytes before the segment base; the same program exported without
// head room cannot (64 delegates need more than the 128-byte alignment
// leaves) and is re-baked whole.
func TestExportHeadRoomInPlace(t *testing.T) {
	skipWithoutLeases(t)
	budget := int64(1<<63 - 1)
	for _, n := range []int{1, 8, 64} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			path := headRoomProgram(t, n, nil)
			ps, base, room := openHead(t, path)
			assert.GreaterOrEqual(t, base-ps, DefaultHeadRoom(n), "padding before the segment base")
			if room != 0 { // 0: the page-congruent base alone leaves that much
				assert.Equal(t, base-ps, room, "File.HeadRoom")
			}
			old := readFile(t, path)

			res, err := Rebake(path, path, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget), InPlace: true})
			require.NoError(t, err)
			assert.True(t, res.InPlace, "%v", res.Warnings)
			assert.LessOrEqual(t, res.Rewritten, int64(base))
			got := readFile(t, path)
			require.Len(t, got, len(old))
			assert.True(t, bytes.Equal(old[base:], got[base:]), "segment data untouched")
			f, err := pte.Open(path)
			require.NoError(t, err)
			for _, d := range f.Program.Plan(0).Delegates {
				v, ok := specValue(d, "weight_streaming_budget")
				assert.True(t, ok)
				assert.Equal(t, fmt.Sprint(budget), string(v))
			}
			f.Close()
		})
	}
	path := headRoomProgram(t, 64, &Options{HeadRoom: NoHeadRoom})
	ps, base, room := openHead(t, path)
	assert.Less(t, base-ps, uint64(4096), "no head room: the padding is the layout's")
	assert.Zero(t, room)
	res, err := Rebake(path, path, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget), InPlace: true})
	require.NoError(t, err)
	assert.False(t, res.InPlace, "64 budgets fit without head room")
}

func specValue(d *pte.BackendDelegate, key string) ([]byte, bool) {
	for _, s := range d.CompileSpecs {
		if s.Key == key {
			return s.Value, true
		}
	}
	return nil, false
}

// TestExportHeadRoomLayout: the room is at least what was asked, the
// engine of 64 KiB still lands on a page, a whole re-bake keeps the room
// and every segment offset without a layout warning, and a program
// without segments gets no room.
func TestExportHeadRoomLayout(t *testing.T) {
	path := headRoomProgram(t, 3, &Options{HeadRoom: 10000})
	ps, base, room := openHead(t, path)
	assert.GreaterOrEqual(t, base-ps, uint64(10000))
	assert.Less(t, base-ps, uint64(10000+4096), "the base moves to the first page-congruent offset")
	assert.Equal(t, base-ps, room)
	data := readFile(t, path)
	f := verifyClean(t, data)
	assert.Equal(t, int64(0), enginePageOffsets(t, f)[0], "64 KiB engine on a page")

	budget := int64(1 << 30)
	in, out, res := rebakeFile(t, path, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)})
	for _, w := range res.Warnings {
		assert.NotEqual(t, WarnLayout, w.Kind, w.Msg)
	}
	for i, s := range in.Program.Segments {
		assert.Equal(t, s.Offset, out.Program.Segments[i].Offset, "segment %d", i)
	}
	assert.GreaterOrEqual(t, out.Header.SegmentBaseOffset-out.Header.ProgramSize, room, "the re-bake keeps the room")
	assert.Zero(t, (out.Header.SegmentBaseOffset-in.Header.SegmentBaseOffset)%4096, "the base moves by whole pages")

	// All data inline: no segment base, so no room: the same bytes as
	// without it.
	var with, without bytes.Buffer
	_, err := Write(&with, &Program{Methods: []*Method{chainMethod("forward", 2)}}, &Options{InlineDelegateData: true})
	require.NoError(t, err)
	_, err = Write(&without, &Program{Methods: []*Method{chainMethod("forward", 2)}}, &Options{InlineDelegateData: true, HeadRoom: NoHeadRoom})
	require.NoError(t, err)
	assert.Equal(t, without.Bytes(), with.Bytes())
}

func TestExportHeadRoomRange(t *testing.T) {
	for _, r := range []int64{-2, 1, pte.MinHeadRoom - 1, pte.MaxHeadRoom + 1} {
		_, err := Write(&bytes.Buffer{}, &Program{Methods: []*Method{chainMethod("forward", 1)}}, &Options{HeadRoom: r})
		assert.ErrorContains(t, err, "head room", "%d", r)
	}
	_, err := Write(&bytes.Buffer{}, &Program{Methods: []*Method{chainMethod("forward", 1)}}, &Options{HeadRoom: pte.MinHeadRoom})
	assert.NoError(t, err)
}

// TestInferHeadRoom: SegmentAlignment and HeadRoom read room (at least
// pte.MinHeadRoom of padding the alignment does not explain) from the
// layout alone, prefer it to an alignment that is neither a divisor nor a
// multiple of the page, and leave the alignments of files without room
// as they were.
func TestInferHeadRoom(t *testing.T) {
	for _, c := range []struct {
		name        string
		f           *pte.File
		align, room uint64
		ok          bool
	}{
		{"128 with 5000 bytes of room", file(760, 5760, seg(0, 100), seg(128, 50)), 128, 5000, true},
		{"one segment: room, not an alignment of 2176", file(1000, 2176, seg(0, 0), seg(0, 100)), 128, 1176, true},
		{"4096 shown by the base alone", file(760, 4096, seg(0, 0), seg(0, 384)), 4096, 0, true},
		{"64 KiB shown by the base alone", file(760, 64<<10, seg(0, 100), seg(64<<10, 5)), 64 << 10, 0, true},
		{"not a power of two, little padding", file(760, 768, seg(0, 100), seg(108, 5), seg(120, 1)), 12, 0, true},
		{"padding under 1 KiB is not room", file(760, 1536, seg(0, 100), seg(128, 50)), 128, 0, false},
		{"tightly packed by another writer, with room", file(760, 5760, seg(0, 100), seg(100, 5)), 20, 5000, true},
		{"room, but segments no alignment reproduces", file(760, 5760, seg(0, 100), seg(101, 5)), 128, 0, false},
	} {
		a, ok := c.f.SegmentAlignment()
		assert.Equal(t, c.align, a, c.name)
		assert.Equal(t, c.ok, ok, c.name)
		assert.Equal(t, c.room, c.f.HeadRoom(), c.name)
	}
}
