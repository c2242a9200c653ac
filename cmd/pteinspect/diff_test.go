package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/export"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// rebake writes trtPrograms' program NAME with a 4 GiB budget on every
// TensorRT delegate, as `pteexport --from` does, and returns the new path.
func rebake(t *testing.T, name string) string {
	t.Helper()
	in := trtPath(t, name)
	out := filepath.Join(t.TempDir(), name+".pte")
	budget := int64(4 << 30)
	_, err := export.Rebake(in, out, &export.RebakeOptions{WeightStreamingBudget: testprog.BudgetPtr(budget)})
	require.NoError(t, err)
	return out
}

// variant writes trtPrograms' program NAME after edit has changed its
// program and segment payloads, and returns the new path.
func variant(t *testing.T, name string, edit func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader) string {
	t.Helper()
	f, err := pte.Open(trtPath(t, name))
	require.NoError(t, err)
	defer f.Close()
	segs, err := f.SegmentReaders()
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), name+".pte")
	_, err = pte.WriteFile(out, f.Program, edit(f.Program, segs), nil)
	require.NoError(t, err)
	return out
}

func trtDelegates(t *testing.T, path string) int {
	t.Helper()
	f, err := pte.Open(path)
	require.NoError(t, err)
	defer f.Close()
	n := 0
	for _, ep := range f.Program.ExecutionPlan {
		for _, d := range ep.Delegates {
			if d.ID == delegate.BackendID {
				n++
			}
		}
	}
	return n
}

// TestDiffRebake: setting the budget of a program with pteexport --from
// changes one thing per TensorRT delegate, and diff says exactly that:
// --paths one line each, the summary that only compile specs differ, the
// change of each delegate (alike ones on one line), and each engine
// unchanged.
func TestDiffRebake(t *testing.T) {
	line := regexp.MustCompile(`^methods\[\w+\]\.delegates\[\d+\]\.compile_specs\[weight_streaming_budget\]: (\(absent\)|"\d+") -> "4294967296"$`)
	specLine := regexp.MustCompile(`^  (\w+ delegate \d+ \(TensorRTBackend\) |(\d+) delegates \(.*\): TensorRTBackend )weight_streaming_budget: (\(absent\)|"\d+") -> "4294967296"$`)
	engineLine := regexp.MustCompile(`^  (\w+ delegate \d+: engine unchanged \(\d+ bytes\)|(\d+) delegates \(.*\): engines unchanged \(.*\)), budget .* -> 4 GiB$`)
	// count returns how many delegates the lines matching re name.
	count := func(re *regexp.Regexp, lines []string) int {
		n := 0
		for _, l := range lines {
			m := re.FindStringSubmatch(l)
			if !assert.NotNil(t, m, l) {
				continue
			}
			if m[2] == "" {
				n++
			} else {
				k, err := strconv.Atoi(m[2])
				require.NoError(t, err)
				n += k
			}
		}
		return n
	}
	for _, name := range []string{"two_methods", "no_budget", "chain", "inline", "aligned_4096", "aliased", "specs"} {
		t.Run(name, func(t *testing.T) {
			a := trtPath(t, name)
			b := rebake(t, name)
			n := trtDelegates(t, a)
			r := runArgs(nil, "diff", "--paths", a, b)
			require.Equal(t, 1, r.code, r.stderr)
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			assert.Len(t, lines, n, r.stdout)
			for _, l := range lines {
				assert.Regexp(t, line, l)
			}
			r = runArgs(nil, "diff", a, b)
			require.Equal(t, 1, r.code, r.stderr)
			lines = strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			assert.Regexp(t, `^\S+ \(\d+ bytes\) and \S+ \(\d+ bytes\) differ$`, lines[0])
			assert.Equal(t, "Only compile specs differ:", lines[1])
			trt := slices.Index(lines, "TensorRT delegates:")
			require.Positive(t, trt, r.stdout)
			assert.Equal(t, n, count(specLine, lines[2:trt]), r.stdout)
			assert.Equal(t, n, count(engineLine, lines[trt+1:]), r.stdout)
		})
	}
}

// TestDiffGolden compares diff outputs with testdata/golden/diff_NAME.txt;
// `go test ./cmd/pteinspect -update` rewrites them.
func TestDiffGolden(t *testing.T) {
	vec := func(name string) string { return trtPath(t, name) }
	const twoMethods = "two_methods"
	cases := []struct {
		golden string
		args   func() []string
	}{
		{"rebake", func() []string { return []string{vec(twoMethods), rebake(t, twoMethods)} }},
		{"rebake_engines_64", func() []string { return []string{vec("engines_64"), rebake(t, "engines_64")} }},
		{"rebake_insert", func() []string {
			return []string{vec("no_budget"), rebake(t, "no_budget")}
		}},
		{"rebake_layout", func() []string {
			return []string{"--layout", vec("no_budget"), rebake(t, "no_budget")}
		}},
		{"rebake_json", func() []string { return []string{"--json", vec(twoMethods), rebake(t, twoMethods)} }},
		{"summary_two_programs_json", func() []string { return []string{"--json", "--summary", vec("segment"), vec(twoMethods)} }},
		{"inline_vs_segment", func() []string { return []string{vec("segment"), vec("inline")} }},
		{"inline_vs_segment_json", func() []string {
			return []string{"--json", vec("segment"), vec("inline")}
		}},
		{"rename", func() []string {
			return []string{vec(twoMethods), variant(t, twoMethods, func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
				p.ExecutionPlan[1].Name = "generate"
				return segs
			})}
		}},
		{"added_method", func() []string {
			return []string{vec("segment"), variant(t, "segment", func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
				ep := *p.ExecutionPlan[0]
				ep.Name = "forward_copy"
				p.ExecutionPlan = append(p.ExecutionPlan, &ep)
				return segs
			})}
		}},
		{"segment_payload", func() []string {
			return []string{vec("segment"), variant(t, "segment", func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
				i := p.ExecutionPlan[0].Delegates[0].Processed.Index
				data, err := io.ReadAll(segs[i])
				require.NoError(t, err)
				data[len(data)-1] ^= 0xff // the last engine byte
				segs[i] = io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
				return segs
			})}
		}},
		{"two_programs", func() []string { return []string{vec("segment"), vec(twoMethods)} }},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			args := c.args()
			if strings.HasSuffix(c.golden, "_json") {
				r := runArgs(nil, append([]string{"diff"}, args...)...)
				require.Equal(t, 1, r.code, r.stderr)
				require.Empty(t, r.stderr)
				assertGolden(t, "diff_"+c.golden+".txt", r.stdout)
				return
			}
			// The path lines (--paths), and the change summary, the
			// default view.
			r := runArgs(nil, append([]string{"diff", "--paths"}, args...)...)
			require.Equal(t, 1, r.code, r.stderr)
			require.Empty(t, r.stderr)
			assertGolden(t, "diff_"+c.golden+".txt", r.stdout)
			r = runArgs(nil, append([]string{"diff"}, args...)...)
			require.Equal(t, 1, r.code, r.stderr)
			require.Empty(t, r.stderr)
			assertGolden(t, "diff_summary_"+c.golden+".txt", hideTemp(r.stdout, args))
		})
	}
}

// hideTemp writes the paths of args (temporary files) as their base
// names, so that goldens do not depend on where the test ran.
func hideTemp(out string, args []string) string {
	for _, a := range args {
		if filepath.IsAbs(a) {
			out = strings.ReplaceAll(out, a, filepath.Base(a))
		}
	}
	return out
}

// assertGolden compares got with testdata/golden/NAME, which -update
// rewrites.
func assertGolden(t *testing.T, name, got string) {
	t.Helper()
	testkit.Golden(t, filepath.Join("testdata", "golden", name), []byte(got))
}

func TestDiff(t *testing.T) {
	a := trtPath(t, "segment")
	b := trtPath(t, "no_budget")

	r := runArgs(nil, "diff", a, a)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, a+" and "+a+" are bitwise equal (1392 bytes)\n", r.stdout)
	r = runArgs(nil, "diff", "--paths", a, a)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stdout)

	// The same program written again, every offset moved: equal unless
	// --layout is given.
	moved := trtPath(t, "aligned_4096")
	again := variant(t, "aligned_4096", func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader { return segs })
	r = runArgs(nil, "diff", moved, again)
	assert.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "differ only in layout")
	r = runArgs(nil, "diff", "--layout", moved, again)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stdout, "differ only in layout")
	assert.Contains(t, r.stdout, "\nLayout:\n")
	assert.Contains(t, r.stdout, "\n  extended_header.segment_base_offset: 4096 -> ")
	r = runArgs(nil, "diff", "--paths", "--layout", moved, again)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stdout, "extended_header.segment_base_offset: 4096 -> ")

	r = runArgs(nil, "diff", a, b)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Only compile specs differ:\n  forward delegate 0 (TensorRTBackend) weight_streaming_budget: \"1048576\" -> (absent)\n")

	r = runArgs(nil, "diff", "--paths", a, b)
	assert.Equal(t, 1, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	assert.Contains(t, lines, `methods[forward].delegates[0].compile_specs[weight_streaming_budget]: "1048576" -> (absent)`)
	for _, l := range lines {
		assert.Regexp(t, `^[a-z_]+(\[[^\]]+\])?[a-z_\[\]0-9.]*: .* -> .*$`, l)
	}

	// Standard input is one side, and --json lists the same differences.
	data, err := os.ReadFile(a)
	require.NoError(t, err)
	r = runArgs(data, "diff", "--json", "-", b)
	assert.Equal(t, 1, r.code, r.stderr)
	var v struct {
		Equal       bool                 `json:"equal"`
		Differences []inspect.Difference `json:"differences"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v))
	assert.False(t, v.Equal)
	require.Len(t, v.Differences, len(lines))
	for i, d := range v.Differences {
		assert.Equal(t, lines[i], d.String())
		assert.Contains(t, []inspect.Kind{inspect.Added, inspect.Removed, inspect.Changed}, d.Kind)
	}

	r = runArgs(nil, "diff", "--json", a, a)
	assert.Equal(t, 0, r.code)
	assert.JSONEq(t, `{"equal":true,"differences":[]}`, r.stdout)

	// --summary adds the summary and leaves the other members as they are.
	plain := runArgs(nil, "diff", "--json", a, b)
	r = runArgs(nil, "diff", "--json", "--summary", a, b)
	assert.Equal(t, 1, r.code, r.stderr)
	var withSummary map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &withSummary))
	var s inspect.DiffSummary
	require.NoError(t, json.Unmarshal(withSummary["summary"], &s))
	assert.True(t, s.SpecsOnly)
	delete(withSummary, "summary")
	rest, err := json.Marshal(withSummary)
	require.NoError(t, err)
	assert.JSONEq(t, plain.stdout, string(rest))

	r = runArgs(nil, "diff", "--paths", "--json", a, b)
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--paths and --json")

	r = runArgs(nil, "diff", "--help")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "--layout")

	// Errors exit 2: a missing file, a damaged file, a usage error.
	damaged := filepath.Join(t.TempDir(), "trunc.pte")
	require.NoError(t, os.WriteFile(damaged, trtPrograms(t)["segment"][:64], 0o644))
	for _, args := range [][]string{
		{"diff", a, filepath.Join(t.TempDir(), "missing.pte")},
		{"diff", damaged, a},
		{"diff", a},
		{"diff", "--bogus", a, b},
		{"diff", "-", "-"},
		{"diff", "--summary", a, b},
	} {
		r = runArgs(nil, args...)
		assert.Equal(t, 2, r.code, "%v", args)
		assert.NotEmpty(t, r.stderr)
		assert.Empty(t, r.stdout)
	}
}

// TestDiffSummaryOtherSpecs: a compile spec change of a delegate the
// TensorRT part does not show (another backend) is the verdict when it is
// all that changed, and is listed after the methods when other things
// changed too.
func TestDiffSummaryOtherSpecs(t *testing.T) {
	other := func(precision, buffer bool) string {
		return variant(t, "segment", func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
			d := p.ExecutionPlan[0].Delegates[0]
			d.ID = "OtherBackend"
			if precision {
				d.CompileSpecs = append(d.CompileSpecs, &pte.CompileSpec{Key: "precision", Value: []byte("fp16")})
			}
			if buffer {
				p.ExecutionPlan[0].NonConstBufferSizes = append(p.ExecutionPlan[0].NonConstBufferSizes, 64)
			}
			return segs
		})
	}
	base := other(false, false)
	const line = "  forward delegate 0 (OtherBackend) precision: (absent) -> \"fp16\"\n"
	r := runArgs(nil, "diff", base, other(true, false))
	require.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stdout, "\nOnly compile specs differ:\n"+line, r.stdout)
	r = runArgs(nil, "diff", base, other(true, true))
	require.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stdout, "\nMethod 0 forward:\n  non_const_buffer_sizes: [0, 32] -> [0, 32, 64]\nCompile specs:\n"+line, r.stdout)
}

// TestDiffTensorNotCompared: constant data whose elements the diff did
// not compare (a crossing pairing beyond what it holds) says so and why,
// with no element counts.
func TestDiffTensorNotCompared(t *testing.T) {
	var out []string
	p := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	ref := &inspect.TensorRef{Index: 3, ScalarType: "FLOAT", Sizes: []int32{10}, DataBufferIdx: 1, UsedBy: []inspect.Usage{}}
	writeTensorDiff(p, &inspect.TensorDiff{A: ref, B: ref, BytesDiffer: true, ByteSizeA: 40, ByteSizeB: 40,
		Data: &inspect.DataDiff{Decoded: true, Elements: 10, Samples: []inspect.ElementDiff{}, NotCompared: "the reason"}})
	require.Len(t, out, 2)
	assert.Equal(t, "        constant data differs (elements not compared: the reason)", out[1])
}
