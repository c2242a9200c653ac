package inspect

import (
	"bytes"
	"fmt"
	"regexp"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// gettersDoc is the hashed document of the program "segment" with n
// getter methods named prefix0, prefix1, ..., each holding 50 values more
// and then last(i).
func gettersDoc(t *testing.T, prefix string, n int, last func(i int) int64) *Document {
	t.Helper()
	data := testprog.Rewrite(t, genPrograms(t)["segment"], func(p *pte.Program) {
		var eps []*pte.ExecutionPlan
		for i := range n {
			ep := testprog.Getter(fmt.Sprintf("%s%d", prefix, i), 0)
			for k := range 50 {
				ep.Values = append(ep.Values, &pte.EValue{Val: &pte.Int{IntVal: int64(k)}})
			}
			ep.Values = append(ep.Values, &pte.EValue{Val: &pte.Int{IntVal: last(i)}})
			eps = append(eps, ep)
		}
		p.SetPlans(eps)
	})
	f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	doc, err := Build(f, &Options{Hash: true})
	require.NoError(t, err)
	return doc
}

// TestDiffManyRenamedMethods is an attack: to find renamed methods the
// diff compared every method only A has with every method only B has, each
// comparison walking the two up to their first difference. Two programs
// of 100 methods each, named apart and equal but for their last value,
// took 5 s to diff (1,000 methods: 8 minutes; memory allocations growing
// with the square of the methods' number) where the rest of the diff is
// linear. Only methods of the same fingerprint are compared now: the
// diff's allocations grow with the methods' number, and renamed methods
// are still found among many.
func TestDiffManyRenamedMethods(t *testing.T) {
	mallocs := func(n int) uint64 {
		a := gettersDoc(t, "a", n, func(i int) int64 { return int64(i) })
		b := gettersDoc(t, "b", n, func(i int) int64 { return int64(i) + 1<<20 })
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		diffs, err := DiffDocuments(a, b, nil)
		runtime.ReadMemStats(&m1)
		require.NoError(t, err)
		require.Len(t, diffs, 2*n, "each method removed and added")
		return m1.Mallocs - m0.Mallocs
	}
	m40, m80 := mallocs(40), mallocs(80)
	assert.Less(t, float64(m80), 2.5*float64(m40), "allocations of the diff for 40 and 80 methods: %d, %d", m40, m80)

	// 80 methods renamed, one of them changed too.
	a := gettersDoc(t, "a", 80, func(i int) int64 { return int64(i) })
	b := gettersDoc(t, "b", 80, func(i int) int64 {
		if i == 7 {
			return -1
		}
		return int64(i)
	})
	lines := diffLines(t, a, b, nil)
	require.Len(t, lines, 81, "%q", lines)
	renamed := 0
	for _, l := range lines {
		switch {
		case regexp.MustCompile(`^methods\[a(\d+)\]\.name: "a(\d+)" -> "b(\d+)"$`).MatchString(l):
			renamed++
		default:
			assert.Regexp(t, `^methods\[(a7\]: \{"name":"a7".* -> \(absent\)|b7\]: \(absent\) -> \{"name":"b7")`, l)
		}
	}
	assert.Equal(t, 79, renamed)
}
