package pte_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// layoutSum is the sum of l's parts.
func layoutSum(l *pte.RegionLayout) int64 {
	n := l.Prefix + l.Header + l.ConstantBuffer + l.Tables + l.Vtables + l.Padding
	for _, p := range l.Plans {
		n += p.Total()
	}
	for _, d := range l.InlineDelegateData {
		n += d
	}
	return n
}

// TestRegionLayout: the parts of the region sum to its size, read whole
// or a plan at a time, and land where the program puts its bytes.
func TestRegionLayout(t *testing.T) {
	for name, data := range testprog.Programs(t) {
		var layouts []*pte.RegionLayout
		for _, lazy := range []bool{false, true} {
			f, err := pte.NewFileWith(bytes.NewReader(data), int64(len(data)), &pte.OpenOptions{LazyPlans: lazy})
			require.NoError(t, err, name)
			l := f.RegionLayout()
			region := int64(len(data))
			if f.Header != nil {
				region = int64(f.Header.ProgramSize)
				require.EqualValues(t, f.Header.Length, l.Header, name)
			}
			require.Equal(t, region, l.Size, name)
			require.Equal(t, l.Size, layoutSum(l), "%s: %+v", name, l)
			require.EqualValues(t, 8, l.Prefix)
			require.Len(t, l.Plans, f.Program.NumPlans())
			for i, p := range l.Plans {
				require.Positive(t, p.Instructions, "%s plan %d", name, i)
				require.Positive(t, p.Values, "%s plan %d", name, i)
				require.Positive(t, p.Delegates, "%s plan %d", name, i)
				require.Positive(t, p.Other, "%s plan %d", name, i)
			}
			require.Positive(t, l.Vtables)
			require.Positive(t, l.Tables)
			require.Less(t, l.Padding, l.Size/4, "%s: most of the region is tables", name)
			layouts = append(layouts, l)
		}
		require.Equal(t, layouts[0], layouts[1], name)
	}
	// An inline blob is the inline data entry, with its table and length.
	data := testprog.Programs(t)["inline"]
	f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	l := f.RegionLayout()
	require.Len(t, l.InlineDelegateData, 1)
	blob := len(f.Program.BackendDelegateData[0].Data)
	require.GreaterOrEqual(t, l.InlineDelegateData[0], int64(blob+4))
	require.Less(t, l.InlineDelegateData[0], int64(blob+32))
}
