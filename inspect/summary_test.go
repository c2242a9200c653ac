package inspect

import (
	"bytes"
	"github.com/ptekit/ptekit/compilespec"
	"math"
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
	return NewSummary(doc)
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
	doc := &Document{Program: &Program{ExecutionPlan: []*ExecutionPlan{{Name: "forward"}}}}
	for i := range 3 {
		doc.Delegates = append(doc.Delegates, &Delegate{Plan: "forward", DelegateIndex: i, ID: "X", Size: &big})
	}
	s := NewSummary(doc)
	assert.Equal(t, int64(math.MaxInt64), s.Payloads)
	assert.Equal(t, int64(math.MaxInt64), s.Methods[0].Groups[0].Payloads)
}

func ptrTo[T any](v T) *T { return &v }
