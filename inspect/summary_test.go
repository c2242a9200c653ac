package inspect

import (
	"bytes"
	"encoding/json"
	"github.com/ptekit/ptekit/compilespec"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

func summaryOf(t *testing.T, name string, opts *Options) *Summary {
	t.Helper()
	data := testprog.Programs(t)[name]
	require.NotEmpty(t, data, name)
	f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	doc, err := Build(f, opts)
	require.NoError(t, err)
	s := newSummary(doc)
	requireSameSummary(t, f, opts, s, doc)
	return s
}

// requireSameSummary requires Summarize(f, opts) to be want, newSummary of
// doc = Build(f, opts), with the same problems and external data: the
// method-by-method view and the document agree.
func requireSameSummary(t testing.TB, f *pte.File, opts *Options, want *Summary, doc *Document) {
	t.Helper()
	got, gdoc, err := Summarize(f, opts)
	require.NoError(t, err)
	norm := func(s *Summary) string {
		c := *s
		c.Methods = nil
		for _, m := range s.Methods {
			mc := *m
			if opts != nil && opts.Method != "" {
				mc.Index = 0 // a narrowed document counts from 0
			}
			c.Methods = append(c.Methods, &mc)
		}
		b, err := json.Marshal(&c)
		require.NoError(t, err)
		return string(b)
	}
	require.Equal(t, norm(want), norm(got))
	require.Equal(t, doc.Problems, gdoc.Problems)
	require.Equal(t, doc.ExternalData, gdoc.ExternalData)
	require.Equal(t, doc.File, gdoc.File)
	require.Equal(t, len(doc.Delegates), got.Delegates())
}

// TestSummarizeEveryProgram: Summarize agrees with newSummary of Build on
// every built test program, whole and narrowed to each method and backend.
func TestSummarizeEveryProgram(t *testing.T) {
	for name, data := range testprog.Programs(t) {
		f, err := pte.NewFileWith(bytes.NewReader(data), int64(len(data)), &pte.OpenOptions{Truncated: true})
		if err != nil {
			continue
		}
		optss := []*Options{nil, {Hash: true}}
		for _, ep := range f.Program.Plans() {
			if ep != nil {
				optss = append(optss, &Options{Method: ep.Name})
			}
		}
		for _, id := range BackendIDs(f.Program, "") {
			optss = append(optss, &Options{Backend: id})
		}
		for _, opts := range optss {
			doc, err := Build(f, opts)
			require.NoError(t, err, name)
			requireSameSummary(t, f, opts, newSummary(doc), doc)
		}
	}
}

// TestSummaryGroups: 64 alike engines are one group, with the budget each
// and what the budgets add up to for the method.
func TestSummaryGroups(t *testing.T) {
	s := summaryOf(t, "engines_64", nil)
	require.Len(t, s.Methods, 1)
	m := s.Methods[0]
	assert.Equal(t, []BackendCount{{"TensorRTBackend", 64}}, s.Backends)
	require.Len(t, m.Groups, 1)
	g := m.Groups[0]
	assert.Equal(t, 64, g.Count)
	assert.Equal(t, "512 MiB", g.Budget)
	assert.Equal(t, int64(512<<20), g.BudgetBytes)
	assert.Equal(t, "cuda:0", g.Device)
	assert.Equal(t, int64(32<<30), m.Budget)
	assert.Equal(t, 64, m.Budgeted)
	assert.Equal(t, 0, m.Automatic)
	assert.Equal(t, 64, m.Instructions)
	require.NotNil(t, s.Largest)
	assert.Equal(t, s.Payloads, g.Payloads)
	assert.Equal(t, 0, s.Errors+s.Warnings)
}

// TestSummaryMethods: a getter's constant, distinct budgets as distinct
// groups, and a narrowed document keeps each delegate with its method.
func TestSummaryMethods(t *testing.T) {
	s := summaryOf(t, "getter", nil)
	require.Len(t, s.Methods, 2)
	assert.Equal(t, []Constant{{"Int", "128"}}, s.Methods[1].Returns)
	assert.Empty(t, s.Methods[1].Groups)

	s = summaryOf(t, "two_methods", nil)
	require.Len(t, s.Methods, 2)
	assert.Equal(t, "1 MiB", s.Methods[0].Groups[0].Budget)
	assert.Equal(t, "256 KiB", s.Methods[1].Groups[0].Budget)

	s = summaryOf(t, "two_methods", &Options{Method: "decode"})
	require.Len(t, s.Methods, 1)
	assert.Equal(t, 1, s.Methods[0].Index, "plan_index, not the narrowed position")
	require.Len(t, s.Methods[0].Groups, 1)

	s = summaryOf(t, "no_budget", nil)
	assert.Equal(t, 1, s.Methods[0].Automatic)
	assert.Equal(t, "", s.Methods[0].Groups[0].Budget)
}

// TestSummaryHostileValues: an unparsable budget is quoted short, and sums
// saturate instead of wrapping.
func TestSummaryHostileValues(t *testing.T) {
	long := bytes.Repeat([]byte("9"), 1<<16)
	d := &Delegate{ID: "TensorRTBackend", CompileSpecs: []*CompileSpecRaw{{Key: "weight_streaming_budget", ValueHex: "", ValueUTF8: ptrTo(string(long))}}}
	text, n := delegateBudget(d)
	assert.Equal(t, int64(-1), n)
	assert.Less(t, len(text), 100)
	assert.Equal(t, int64(math.MaxInt64), compilespec.AddSizes(math.MaxInt64-1, 5))

	big := int64(math.MaxInt64 / 2)
	doc := &Document{Program: &Program{Program: programOf([]*pte.ExecutionPlan{{Name: "forward"}}), Hash: false}}
	for i := range 3 {
		doc.Delegates = append(doc.Delegates, &Delegate{Plan: "forward", DelegateIndex: i, ID: "X", Size: &big})
	}
	s := newSummary(doc)
	assert.Equal(t, int64(math.MaxInt64), s.Payloads)
	assert.Equal(t, int64(math.MaxInt64), s.Methods[0].Groups[0].Payloads)
}

func ptrTo[T any](v T) *T { return &v }

// TestStorageSet: a storageSet answers as a map of the storages added,
// for dense indices, indices past maxDenseStorage, negative ones and
// locations of no known kind.
func TestStorageSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	locations := []int64{0, 1, 2, -1, 1 << 40}
	indices := []int64{0, 63, 64, 1000, maxDenseStorage - 1, maxDenseStorage, maxDenseStorage + 1000, -1, 1 << 40}
	for range 20 {
		var s storageSet
		want := map[storageKey]bool{}
		for range 2000 {
			k := storageKey{locations[rng.IntN(len(locations))], 500 + int64(rng.IntN(300))}
			if rng.IntN(4) == 0 {
				k.index = indices[rng.IntN(len(indices))]
			}
			require.Equal(t, !want[k], s.add(k), "%+v", k)
			want[k] = true
		}
		for _, b := range s.bits {
			require.LessOrEqual(t, len(b)*64, maxDenseStorage)
		}
	}
	// One storage, one word, wherever it is.
	var one storageSet
	require.True(t, one.add(storageKey{1, 65535}))
	require.Len(t, one.bits[1], 1)
}
