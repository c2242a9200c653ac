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

// TestViewsLinear: every view costs memory (and so time) linear in the
// engines, in both shapes a program of many engines takes: many one-engine
// methods, and one method calling every engine. --plan of one method
// decoded the method's delegates again for each delegate it printed (24 s
// for 8192 engines) and nothing measured it. Bytes allocated are measured
// rather than time, which a shared machine makes noisy.
func TestViewsLinear(t *testing.T) {
	const n = 256 // and 8 times as many
	shapes := map[string]func(t *testing.T, n int) []byte{
		"methods": manyMethods,
		"chain":   oneMethodEngines,
	}
	views := [][]string{{"-"}, {"--long", "-"}, {"--json", "-"}, {"--json", "--hash", "-"}, {"--verify", "-"},
		{"--plan", "-"}, {"--plan", "--json", "-"}, {"--compile-specs", "-"}, {"--compile-specs", "--json", "-"}}
	for shape, build := range shapes {
		small, large := build(t, n), build(t, 8*n)
		for _, args := range views {
			measure := func(data []byte) uint64 {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				r := runArgs(data, args...)
				runtime.ReadMemStats(&after)
				require.Equal(t, exitOK, r.code, "%s %v: %s", shape, args, r.stderr)
				return after.TotalAlloc - before.TotalAlloc
			}
			as, al := measure(small), measure(large)
			// Linear is about 8 times the bytes; allow 12 (quadratic
			// would be 64 for its quadratic part).
			assert.Less(t, al, 12*as, "%s %v: %d bytes for %d engines, %d for %d", shape, args, as, n, al, 8*n)
		}
	}
}

// oneMethodEngines writes a program of one method calling n engines.
func oneMethodEngines(t *testing.T, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	_, err := export.Write(&b, &export.Program{Methods: []*export.Method{testprog.Engines(n, 16)}}, &export.Options{SegmentAlignment: 16, HeadRoom: export.NoHeadRoom})
	require.NoError(t, err)
	return b.Bytes()
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
