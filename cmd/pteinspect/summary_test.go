package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/export"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// TestSummaryGolden compares the default view (the summary) with
// testdata/golden/summary_NAME.txt; the --long view of the same programs
// is in the trt_*.txt goldens.
func TestSummaryGolden(t *testing.T) {
	for _, name := range []string{"engines_64", "getter", "two_methods", "chain", "no_budget", "budget_twice"} {
		t.Run(name, func(t *testing.T) {
			data := trtPrograms(t)[name]
			require.NotEmpty(t, data)
			r := runArgs(data, "-")
			require.Empty(t, r.stderr)
			testkit.Golden(t, filepath.Join("testdata", "golden", "summary_"+name+".txt"), []byte(r.stdout))
		})
	}
}

// TestSummaryOneScreen: the default view of a 64-engine program fits in 40
// lines and says what the 64 engines have in common in one line; --long
// still shows every delegate (issue 11 item 7: 729 lines before).
func TestSummaryOneScreen(t *testing.T) {
	data := trtPrograms(t)["engines_64"]
	r := runArgs(data, "-")
	require.Equal(t, exitOK, r.code, r.stderr)
	lines := strings.Count(r.stdout, "\n")
	assert.LessOrEqual(t, lines, 40, r.stdout)
	assert.Contains(t, r.stdout, "64 TensorRTBackend delegates, budget 512 MiB each, cuda:0")
	assert.Contains(t, r.stdout, "engine budgets add up to 32 GiB")

	long := runArgs(data, "--long", "-")
	require.Equal(t, exitOK, long.code, long.stderr)
	assert.Equal(t, 64, strings.Count(long.stdout, "tensorrt blob  TR01"), "every delegate in --long")
	assert.Greater(t, strings.Count(long.stdout, "\n"), 10*lines)
}

// TestSummaryConstantReturn: a getter method's returned int is shown, not
// only its type.
func TestSummaryConstantReturn(t *testing.T) {
	r := runArgs(trtPrograms(t)["getter"], "-")
	assert.Contains(t, r.stdout, "get_max_seq_len (#1): 0 inputs, 1 output, 0 instructions, returns Int 128")
}

// TestSummaryLinear: the views of a program with 8192 methods cost memory
// (and so time) linear in the methods: joinOr built its lists with +=,
// which allocates quadratically. Bytes allocated are measured rather than
// time, which a shared machine makes noisy.
func TestSummaryLinear(t *testing.T) {
	small, large := manyMethods(t, 1024), manyMethods(t, 8192)
	measure := func(data []byte, args ...string) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r := runArgs(data, args...)
		runtime.ReadMemStats(&after)
		require.Equal(t, exitOK, r.code, r.stderr)
		return after.TotalAlloc - before.TotalAlloc
	}
	for _, args := range [][]string{{"-"}, {"--long", "-"}} {
		as, al := measure(small, args...), measure(large, args...)
		// 8 times the methods: linear is about 8 times the bytes; allow
		// 12 (quadratic would be 64 for the quadratic part).
		assert.Less(t, al, 12*as, "%v: %d bytes for 1024 methods, %d for 8192", args, as, al)
	}
	r := runArgs(large, "-")
	assert.LessOrEqual(t, strings.Count(r.stdout, "\n"), 40)
	assert.Contains(t, r.stdout, "8192: m0, m1, m2, m3, m4, m5, m6, m7 and 8184 more")
}

// manyMethods writes a program of n one-engine methods named m0, m1, ...
func manyMethods(t *testing.T, n int) []byte {
	t.Helper()
	methods := make([]*export.Method, n)
	for i := range methods {
		methods[i] = testprog.Engines(1, 16)
		methods[i].Name = fmt.Sprintf("m%d", i)
	}
	var b bytes.Buffer
	_, err := export.Write(&b, &export.Program{Methods: methods}, &export.Options{SegmentAlignment: 16, HeadRoom: export.NoHeadRoom})
	require.NoError(t, err)
	f, err := pte.NewFile(bytes.NewReader(b.Bytes()), int64(b.Len()))
	require.NoError(t, err)
	f.Close()
	return b.Bytes()
}
