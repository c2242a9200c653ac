package inspect

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// manyShapes returns data with count more float tensors in method 0, all
// naming constant buffer 1 with other shapes (k rows of elems/k, and
// elems/k elements, for k = 1..count).
func manyShapes(t testing.TB, data []byte, elems, count int) []byte {
	return testprog.Rewrite(t, data, func(p *pte.Program) {
		ep := p.ExecutionPlan[0]
		for k := 1; k <= count; k++ {
			for _, sizes := range [][]int32{{int32(k), int32(elems / k)}, {int32(elems / k)}} {
				ep.Values = append(ep.Values, &pte.EValue{Val: &pte.Tensor{
					ScalarType: pte.ScalarTypeFLOAT, Sizes: sizes, DimOrder: []uint8{0, 1}[:len(sizes)], DataBufferIdx: 1,
				}})
			}
		}
	})
}

// TestDiffManyShapesOneComparison is an attack: a small program whose
// tensors all name one constant buffer, each with another shape or
// element count, made the diff compare the whole buffer once per tensor
// (two 1 MiB files with 2,000 such tensors took 10 s; 65,536 would take
// minutes). The pass now compares each pair of buffers once per scalar
// type, taking each tensor's statistics from that one comparison, and the
// summary is still the one reading every comparison again gives.
func TestDiffManyShapesOneComparison(t *testing.T) {
	progs := genPrograms(t)
	const elems = 1200
	edit := func(i int) float32 {
		if i%7 == 3 {
			return 0.25 * float32(i%5)
		}
		return 0
	}
	a := manyShapes(t, withConstantSegment(t, progs["segment"], ramp(elems, nil)), elems, 40)
	for name, b := range map[string][]byte{
		"segment": manyShapes(t, withConstantSegment(t, progs["segment"], ramp(elems, edit)), elems, 40),
		"longer":  manyShapes(t, withConstantSegment(t, progs["segment"], ramp(elems+30, edit)), elems, 40),
		"inline":  manyShapes(t, withInlineConstants(t, progs["segment"], ramp(elems, edit)), elems, 40),
	} {
		t.Run(name, func(t *testing.T) {
			fa, err := pte.NewFileWith(bytes.NewReader(a), int64(len(a)), &pte.OpenOptions{LazyPlans: true})
			require.NoError(t, err)
			defer fa.Close()
			fb, err := pte.NewFileWith(bytes.NewReader(b), int64(len(b)), &pte.OpenOptions{LazyPlans: true})
			require.NoError(t, err)
			defer fb.Close()
			_, tasks, err := planConstants(fa, fb)
			require.NoError(t, err)
			require.Len(t, tasks, 1, "one pair of buffers")
			assert.Len(t, tasks[0].cmps, 1, "one comparison of the pair, for all the tensors' shapes")

			got := summarizeCounting(t, [2][]byte{a, b}, func(files [2]*pte.File, reads [2]*testkit.RangeReaderAt, _ [2]*Document) {
				for i, f := range files {
					assertReadOnce(t, "file "+"AB"[i:i+1], reads[i], f.Size)
				}
			})
			// Each tensor's samples are indexed in its own shape.
			n := 0
			for _, td := range got.Methods[0].Tensors {
				if td.Data == nil || len(td.Data.Samples) == 0 {
					continue
				}
				n++
				for _, s := range td.Data.Samples {
					assert.Equal(t, unravel(s.Flat, td.A.Sizes), s.Index)
				}
			}
			assert.Greater(t, n, 40)
		})
	}
}
