package inspect

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// TreemapBlock is one rectangle of a treemap: a group (Leaf false), whose
// area is proportional to the group's size, or a block inside it (Leaf
// true), whose area is proportional to its size among the group's blocks.
type TreemapBlock struct {
	// Group is the SizeGroup name the block belongs to (or is).
	Group string `json:"group"`
	// Label names the block: an item's label, "N more items" for the
	// small items of a group summed, or the group name.
	Label string `json:"label"`
	// Items is how many report items the block sums (1 for an item).
	Items int `json:"items"`
	// Size is the bytes the block stands for.
	Size int64 `json:"size"`
	// Leaf says the block is inside a group.
	Leaf bool `json:"leaf"`
	// X, Y, W, H place the block, from the top left corner.
	X float64 `json:"x"`
	Y float64 `json:"y"`
	W float64 `json:"w"`
	H float64 `json:"h"`
}

// TreemapOptions sets a treemap's size and how much it shows. Nil gives
// the defaults.
type TreemapOptions struct {
	// Width and Height of the whole map (1200 x 800 when 0).
	Width, Height float64
	// MaxGroups is the most groups shown; smaller groups are one "other"
	// group (24 when 0).
	MaxGroups int
	// MaxBlocks is the most blocks in a group (48 when 0): past it, a
	// group shows its largest items alone and the others summed by part
	// and backend.
	MaxBlocks int
	// Band is the height of a group's label band above its blocks (16
	// when 0); a group too small for it has none.
	Band float64
}

// Treemap lays r out as a squarified treemap (Bruls, Huizing and van
// Wijk): groups by size in the whole area, then each group's items in its
// rectangle below a label band. Small groups and items are summed, so the
// number of blocks is bounded by the options, whatever the file holds
// (a program of 65,536 delegates gives a map as small as one of 64).
// Blocks of zero size are left out.
func Treemap(r *SizeReport, opts *TreemapOptions) []TreemapBlock {
	o := TreemapOptions{Width: 1200, Height: 800, MaxGroups: 24, MaxBlocks: 48, Band: 16}
	if opts != nil {
		o.Width = cmp.Or(opts.Width, o.Width)
		o.Height = cmp.Or(opts.Height, o.Height)
		o.MaxGroups = cmp.Or(opts.MaxGroups, o.MaxGroups)
		o.MaxBlocks = cmp.Or(opts.MaxBlocks, o.MaxBlocks)
		o.Band = cmp.Or(opts.Band, o.Band)
	}
	o.MaxGroups, o.MaxBlocks = max(o.MaxGroups, 1), max(o.MaxBlocks, 1)
	groups := r.Groups()
	if len(groups) > o.MaxGroups {
		other := SizeGroup{Name: fmt.Sprintf("%d more groups", len(groups)-o.MaxGroups+1)}
		for _, g := range groups[o.MaxGroups-1:] {
			other.Size += g.Size
			other.Items = append(other.Items, g.Items...)
		}
		slices.SortStableFunc(other.Items, func(a, b SizeItem) int { return cmp.Compare(b.Size, a.Size) })
		groups = append(groups[:o.MaxGroups-1:o.MaxGroups-1], other)
	}
	var blocks []TreemapBlock
	for i, gr := range squarify(len(groups), func(i int) int64 { return groups[i].Size }, rect{0, 0, o.Width, o.Height}) {
		g := groups[i]
		blocks = append(blocks, TreemapBlock{Group: g.Name, Label: g.Name, Items: len(g.Items), Size: g.Size,
			X: gr.x, Y: gr.y, W: gr.w, H: gr.h})
		inner := gr
		if gr.h > 3*o.Band && gr.w > 2*o.Band {
			inner = rect{gr.x + 1, gr.y + o.Band, gr.w - 2, gr.h - o.Band - 1}
		}
		type leaf struct {
			label string
			items int
			size  int64
		}
		// The largest items alone; past MaxBlocks, the others summed by
		// part and backend, and the smallest of those sums summed again.
		var leaves []leaf
		keep := len(g.Items)
		if keep > o.MaxBlocks {
			keep = o.MaxBlocks - max(o.MaxBlocks/4, 1)
		}
		for _, it := range g.Items[:keep] {
			leaves = append(leaves, leaf{it.Label(), 1, it.Size})
		}
		if keep < len(g.Items) {
			rest := SizeGroup{Items: g.Items[keep:]}.Lines()
			room := o.MaxBlocks - keep
			for k, l := range rest {
				if k == room-1 && len(rest) > room {
					var last leaf
					for _, l := range rest[k:] {
						last.items += l.Count
						last.size += l.Size
					}
					last.label = fmt.Sprintf("%d more items", last.items)
					leaves = append(leaves, last)
					break
				}
				leaves = append(leaves, leaf{fmt.Sprintf("%d more: %s", l.Count, SizeLine{Part: l.Part, Backend: l.Backend}.Label()), l.Count, l.Size})
			}
		}
		// The summed block may outgrow the items before it: keep the
		// order by size, which squarify needs.
		slices.SortStableFunc(leaves, func(a, b leaf) int { return cmp.Compare(b.size, a.size) })
		for k, lr := range squarify(len(leaves), func(k int) int64 { return leaves[k].size }, inner) {
			blocks = append(blocks, TreemapBlock{Group: g.Name, Label: leaves[k].label, Items: leaves[k].items,
				Size: leaves[k].size, Leaf: true, X: lr.x, Y: lr.y, W: lr.w, H: lr.h})
		}
	}
	return slices.DeleteFunc(blocks, func(b TreemapBlock) bool { return b.Size <= 0 })
}

type rect struct{ x, y, w, h float64 }

// squarify places n sizes (size(i), largest first) in r, each
// rectangle's area proportional to its size, rows chosen to keep aspect
// ratios near 1. Zero sizes get empty rectangles.
func squarify(n int, size func(i int) int64, r rect) []rect {
	out := make([]rect, n)
	areas := make([]float64, n)
	var total float64
	for i := range areas {
		areas[i] = max(float64(size(i)), 0)
		total += areas[i]
	}
	if total <= 0 || r.w <= 0 || r.h <= 0 {
		return out
	}
	scale := r.w * r.h / total
	for i := range areas {
		areas[i] *= scale
	}
	start := 0
	for start < len(areas) {
		side := min(r.w, r.h)
		end := start + 1
		for end < len(areas) && worst(areas[start:end+1], side) <= worst(areas[start:end], side) {
			end++
		}
		row := areas[start:end]
		sum := rowSum(row)
		if end == len(areas) {
			sum = r.w * r.h // the last row takes what is left, absorbing rounding
		}
		// The row runs along the shorter side: a column at the left when
		// the area is wide, a row at the top when it is tall. In the
		// rotated frame (long, short) the row is a band of depth
		// sum/short across the short side.
		long, short := r.w, r.h
		if r.w < r.h {
			long, short = r.h, r.w
		}
		depth := min(sum/short, long)
		at := 0.0
		for i, a := range row {
			span := short * a / rowSum(row)
			if r.w >= r.h {
				out[start+i] = rect{r.x, r.y + at, depth, span}
			} else {
				out[start+i] = rect{r.x + at, r.y, span, depth}
			}
			at += span
		}
		if r.w >= r.h {
			r = rect{r.x + depth, r.y, r.w - depth, r.h}
		} else {
			r = rect{r.x, r.y + depth, r.w, r.h - depth}
		}
		start = end
	}
	return out
}

func rowSum(row []float64) float64 {
	var s float64
	for _, a := range row {
		s += a
	}
	if s == 0 {
		return 1
	}
	return s
}

// worst is the largest aspect ratio of row laid along a side of length
// side.
func worst(row []float64, side float64) float64 {
	var sum, lo, hi float64
	lo = math.Inf(1)
	for _, a := range row {
		sum += a
		lo, hi = min(lo, a), max(hi, a)
	}
	if sum == 0 || lo == 0 {
		return math.Inf(1)
	}
	s2, sum2 := side*side, sum*sum
	return max(s2*hi/sum2, sum2/(s2*lo))
}
