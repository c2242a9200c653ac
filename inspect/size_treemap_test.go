package inspect

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// manyDelegates is the report of a program of n delegates in one method,
// each with its own payload of a different size, and the usual rest.
func manyDelegates(n int) *SizeReport {
	r := &SizeReport{Kind: "pte"}
	add := func(it SizeItem) {
		r.Items = append(r.Items, it)
		r.Size += it.Size
	}
	add(SizeItem{Part: PartPrefix, Plan: -1, Delegate: -1, Segment: -1, Size: 8})
	add(SizeItem{Part: PartHeader, Plan: -1, Delegate: -1, Segment: -1, Size: 32})
	add(SizeItem{Part: PartValues, Plan: 0, Method: "forward", Delegate: -1, Segment: -1, Size: int64(n) * 40})
	add(SizeItem{Part: PartDelegateTables, Plan: 0, Method: "forward", Delegate: -1, Segment: -1, Size: int64(n) * 90})
	for i := range n {
		add(SizeItem{Part: PartDelegatePayload, Plan: 0, Method: "forward", Backend: "TensorRTBackend", Delegate: i, Segment: i, Size: int64(1000 + i%97)})
		add(SizeItem{Part: PartPadding, Plan: -1, Delegate: -1, Segment: -1, Size: int64(1 + i%15)})
	}
	return r
}

// requireTreemap checks the layout of r: blocks inside the map, groups
// proportional to their sizes and covering the map, each group's blocks
// proportional to their sizes, not overlapping, and at most the blocks
// the options allow.
func requireTreemap(t *testing.T, r *SizeReport, blocks []TreemapBlock) {
	t.Helper()
	const w, h = 1200.0, 800.0
	var groups []TreemapBlock
	byGroup := map[string][]TreemapBlock{}
	for _, b := range blocks {
		require.GreaterOrEqual(t, b.X, -1e-9)
		require.GreaterOrEqual(t, b.Y, -1e-9)
		require.LessOrEqual(t, b.X+b.W, w+1e-6)
		require.LessOrEqual(t, b.Y+b.H, h+1e-6)
		if b.Leaf {
			byGroup[b.Group] = append(byGroup[b.Group], b)
		} else {
			groups = append(groups, b)
		}
	}
	require.LessOrEqual(t, len(groups), 24)
	var area float64
	for _, g := range groups {
		require.InDelta(t, w*h*float64(g.Size)/float64(r.Size), g.W*g.H, 1e-6*w*h, g.Label)
		area += g.W * g.H
		leaves := byGroup[g.Label]
		require.NotEmpty(t, leaves)
		require.LessOrEqual(t, len(leaves), 48, g.Label)
		var inner float64
		var sum int64
		for _, l := range leaves {
			inner += l.W * l.H
			sum += l.Size
		}
		require.Equal(t, g.Size, sum, "%s: the blocks hold the group's bytes", g.Label)
		for i, l := range leaves {
			require.InDelta(t, inner*float64(l.Size)/float64(sum), l.W*l.H, 1e-6*inner+1e-9, "%s: %s", g.Label, l.Label)
			for _, m := range leaves[i+1:] {
				ox := math.Min(l.X+l.W, m.X+m.W) - math.Max(l.X, m.X)
				oy := math.Min(l.Y+l.H, m.Y+m.H) - math.Max(l.Y, m.Y)
				require.False(t, ox > 1e-6 && oy > 1e-6, "%s and %s overlap", l.Label, m.Label)
			}
		}
	}
	require.InDelta(t, w*h, area, 1e-6*w*h, "the groups cover the map")
}

// TestTreemapBounded: 65,536 delegates give a map, and a page, no larger
// than 64 do, the small payloads summed into one block.
func TestTreemapBounded(t *testing.T) {
	var pages []int
	for _, n := range []int{64, 65536} {
		r := manyDelegates(n)
		blocks := Treemap(r, nil)
		requireTreemap(t, r, blocks)
		require.LessOrEqual(t, len(blocks), 24*49)
		var b bytes.Buffer
		require.NoError(t, WriteSizeHTML(&b, "many.pte", r, blocks))
		pages = append(pages, b.Len())
		if n == 65536 {
			require.Contains(t, b.String(), fmt.Sprintf(`data-label="%d more: TensorRTBackend delegate payload"`, n-36+2))
		}
	}
	require.Less(t, pages[1], 2*pages[0]+4096, "page sizes %v", pages)
	require.Less(t, pages[1], 256<<10)
}

// TestTreemapBuilt lays out built programs and the many-group case.
func TestTreemapBuilt(t *testing.T) {
	for name, data := range viewPrograms(t) {
		f := openView(data, true)
		if f == nil {
			continue
		}
		r, err := Size(f, nil)
		require.NoError(t, err, name)
		requireTreemap(t, r, Treemap(r, nil))
	}
	// More groups than shown: the smallest are one group.
	r := &SizeReport{Kind: "pte"}
	for i := range 100 {
		r.Items = append(r.Items, SizeItem{Part: PartValues, Plan: i, Method: fmt.Sprintf("m%02d", i), Delegate: -1, Segment: -1, Size: int64(100 + i)})
		r.Size += int64(100 + i)
	}
	blocks := Treemap(r, nil)
	requireTreemap(t, r, blocks)
	require.Equal(t, "77 more groups", blocks[len(blocks)-2].Group)
}

// TestWriteSizeHTMLEscapes: names from the file are escaped in the page.
func TestWriteSizeHTMLEscapes(t *testing.T) {
	r := &SizeReport{Kind: "pte", Size: 10, Items: []SizeItem{
		{Part: PartNamedData, Plan: -1, Key: `<script>alert("x")</script>`, Delegate: -1, Segment: 0, Size: 10}}}
	var b bytes.Buffer
	require.NoError(t, WriteSizeHTML(&b, `a<b>.pte`, r, Treemap(r, nil)))
	require.Equal(t, 1, strings.Count(b.String(), "<script>"), "only the page's own script")
	require.NotContains(t, b.String(), "<b>")
}
