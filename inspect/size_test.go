package inspect

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/ptd"
)

// sharedFiles returns every file under the shared corpus and vectors
// whose name ends in ext, found at run time.
func sharedFiles(t *testing.T, ext string) []string {
	var out []string
	for _, dir := range []string{"corpus", "vectors"} {
		root := testkit.SharedDir(t, dir)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && strings.HasSuffix(p, ext) {
				out = append(out, p)
			}
			return err
		})
		require.NoError(t, err)
	}
	require.NotEmpty(t, out, "no %s file in the shared tree", ext)
	return out
}

// requireSizeSums checks the invariant of every size report: items of
// positive size whose sum is the file size, and savings that add up.
func requireSizeSums(t *testing.T, r *SizeReport, size int64) {
	t.Helper()
	require.Equal(t, size, r.Size)
	require.Equal(t, size, r.Total(), "items: %+v", r.Items)
	var saved int64
	for _, s := range r.Shared {
		require.GreaterOrEqual(t, s.Users, 2)
		require.Equal(t, s.Size*int64(s.Users-1), s.Saved)
		saved += s.Saved
	}
	require.Equal(t, saved, r.DedupSaved)
	for _, it := range r.Items {
		require.Positive(t, it.Size, "%+v", it)
		require.NotEmpty(t, it.Part)
	}
}

// TestSizeSumsShared: on every program and data file of the shared tree
// that opens, the breakdown sums to the file size, read whole or lazily
// (the same report either way).
func TestSizeSumsShared(t *testing.T) {
	sized := 0
	for _, p := range sharedFiles(t, ".pte") {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		eager, lazy := openView(data, false), openView(data, true)
		if eager == nil {
			continue // refused: there is nothing to break down
		}
		re, err := Size(eager, nil)
		require.NoError(t, err, p)
		requireSizeSums(t, re, int64(len(data)))
		rl, err := Size(lazy, nil)
		require.NoError(t, err, p)
		require.Equal(t, re, rl, p)
		sized++
	}
	require.NotZero(t, sized, "no shared program opened")
	sized = 0
	for _, p := range sharedFiles(t, ".ptd") {
		f, err := ptd.Open(p)
		if err != nil {
			continue
		}
		r, err := SizePTD(f)
		f.Close()
		require.NoError(t, err, p)
		fi, err := os.Stat(p)
		require.NoError(t, err)
		requireSizeSums(t, r, fi.Size())
		sized++
	}
	require.NotZero(t, sized, "no shared data file opened")
}

// TestSizeBuilt checks the breakdown of built programs part by part.
func TestSizeBuilt(t *testing.T) {
	progs := testprog.Programs(t)
	for name, data := range progs {
		f := openView(data, true)
		require.NotNil(t, f, name)
		r, err := Size(f, nil)
		require.NoError(t, err, name)
		requireSizeSums(t, r, int64(len(data)))
	}
	// The inline program's blob is inline delegate data of forward;
	// the segment program's blob is a delegate payload in segment 0.
	find := func(r *SizeReport, part string) *SizeItem {
		for i := range r.Items {
			if r.Items[i].Part == part {
				return &r.Items[i]
			}
		}
		return nil
	}
	for name, part := range map[string]string{"inline": PartInlineDelegateData, "segment": PartDelegatePayload} {
		r, err := Size(openView(progs[name], true), nil)
		require.NoError(t, err)
		it := find(r, part)
		require.NotNil(t, it, "%s: no %s in %+v", name, part, r.Items)
		require.Equal(t, "forward", it.Method)
		require.Equal(t, "TensorRTBackend", it.Backend)
		require.Equal(t, 0, it.Delegate)
		require.Greater(t, it.Size, int64(32))
		for _, p := range []string{PartPrefix, PartInstructions, PartValues, PartDelegateTables} {
			require.NotNil(t, find(r, p), "%s: no %s", name, p)
		}
	}
}

// TestSizeGroupNames: items group by method index, an unnamed method
// under its index, the program's by part.
func TestSizeGroupNames(t *testing.T) {
	for want, it := range map[string]SizeItem{
		"method forward":        {Part: PartValues, Plan: 0, Method: "forward"},
		"method #2":             {Part: PartValues, Plan: 2},
		"header":                {Part: PartPrefix, Plan: -1},
		"padding":               {Part: PartTrailing, Plan: -1},
		"named data":            {Part: PartNamedData, Plan: -1, Key: "k"},
		"program tables":        {Part: PartVtables, Plan: -1},
		"unreferenced segments": {Part: PartUnreferenced, Plan: -1},
	} {
		require.Equal(t, want, it.GroupName())
	}
}

// TestSizeBackends sums delegate data by backend, largest first.
func TestSizeBackends(t *testing.T) {
	r := &SizeReport{Items: []SizeItem{
		{Part: PartDelegatePayload, Plan: 0, Backend: "A", Size: 10},
		{Part: PartInlineDelegateData, Plan: 1, Backend: "B", Size: 30},
		{Part: PartDelegatePayload, Plan: 1, Backend: "A", Size: 15},
		{Part: PartDelegateTables, Plan: 1, Size: 99},
	}}
	require.Equal(t, []SizeLine{{Backend: "B", Count: 1, Size: 30}, {Backend: "A", Count: 2, Size: 25}}, r.Backends())
}

// TestSplitAt: an area's bytes go to the entries at their offsets, each
// running to the next offset, the first owner at an offset taking them;
// bytes already counted (before from) go to nobody.
func TestSplitAt(t *testing.T) {
	owners := []int{-1, 5, 7, -1}
	offs := []uint64{0, 0, 40, 10}
	order, got := splitAt(100, 100, 200, offs, func(k int) int { return owners[k] })
	require.Equal(t, []int{5, -1, 7}, order)
	require.Equal(t, map[int]int64{5: 10, -1: 30, 7: 60}, got)
	order, got = splitAt(100, 120, 200, offs, func(k int) int { return owners[k] })
	require.Equal(t, []int{-1, 7}, order)
	require.Equal(t, map[int]int64{-1: 20, 7: 60}, got)
	// Offsets past the end, and bytes before the first offset.
	order, got = splitAt(0, 0, 50, []uint64{20, 90}, func(k int) int { return k })
	require.Equal(t, []int{-1, 0}, order)
	require.Equal(t, map[int]int64{-1: 20, 0: 30}, got)
	// Several entries at or past the end, after a gap: the gap is
	// credited once, whatever follows it (a fuzzed file counted it once
	// per entry and the breakdown outgrew the file).
	_, got = splitAt(100, 100, 132, []uint64{32, 1 << 60, 1 << 60, 1 << 61}, func(k int) int { return -1 })
	require.Equal(t, map[int]int64{-1: 32}, got)
	for _, offs := range [][]uint64{{0, 1 << 62}, {31, 32, 33}, {5, 5, 100, 7}, {1 << 63, 0}} {
		_, got = splitAt(100, 110, 132, offs, func(k int) int { return k % 2 })
		var sum int64
		for _, n := range got {
			sum += n
		}
		require.Equal(t, int64(22), sum, "offsets %v", offs)
	}
}
