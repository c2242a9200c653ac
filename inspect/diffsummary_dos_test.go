package inspect

import (
	"bytes"
	"fmt"
	"reflect"
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
		ep := p.Plan(0)
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

// TestDiffAliasedInlineBuffersOneComparison is an attack: a flatbuffer may
// point many Buffer tables at one byte vector, and the reader's inline
// buffers then alias the same bytes. Two 1.2 MiB programs with 2,000
// inline buffers aliasing one 1 MiB vector took 19 s to diff (65,536
// would take ten minutes), comparing the same bytes once per buffer. The
// pass now compares the same bytes once. The files are built with distinct
// buffers and made to alias after opening, as the reader gives them.
func TestDiffAliasedInlineBuffersOneComparison(t *testing.T) {
	progs := genPrograms(t)
	const count, elems = 50, 300
	var bufs [][]float32
	for range count {
		bufs = append(bufs, ramp(elems, nil))
	}
	a := withInlineConstants(t, progs["segment"], bufs...)
	var files [2]*pte.File
	for i := range files {
		f, err := pte.NewFileWith(bytes.NewReader(a), int64(len(a)), &pte.OpenOptions{LazyPlans: true})
		require.NoError(t, err)
		defer f.Close()
		files[i] = f
		cb := f.Program.ConstantBuffer
		require.Len(t, cb, count+1)
		shared := cb[1].Storage
		if i == 1 {
			shared = bytes.Clone(shared)
			shared[5] ^= 0x40
		}
		for _, b := range cb[1:] {
			b.Storage = shared
		}
	}
	cmps, tasks, err := planConstants(files[0], files[1])
	require.NoError(t, err)
	assert.Empty(t, tasks)
	distinct := map[*dataCmp]bool{}
	for k, d := range cmps {
		if k.a > 0 { // not the program's own tensors
			distinct[d] = true
		}
	}
	assert.Len(t, distinct, 1, "one comparison of the bytes all the buffers alias")
	cc := constantResults(cmps)
	for k, r := range cc.results {
		if k.a == 0 {
			continue
		}
		require.True(t, r.differ, "%+v", k)
		assert.Equal(t, int64(1), r.data.Differing, "%+v", k)
	}
}

// TestModelHashesAliasedBytesOnce is the same attack on the document: the
// program's JSON form with hashes (which diff builds) took the SHA-256 of
// every inline buffer, hashing the bytes many buffers alias once per
// buffer (2,000 buffers of 1 MiB: 2 GiB hashed from a 1.2 MiB file). Bytes
// hashed now stay within the file's size.
func TestModelHashesAliasedBytesOnce(t *testing.T) {
	progs := genPrograms(t)
	var bufs [][]float32
	for range 64 {
		bufs = append(bufs, ramp(4096, nil))
	}
	a := withInlineConstants(t, progs["segment"], bufs...)
	f, err := pte.NewFileWith(bytes.NewReader(a), int64(len(a)), &pte.OpenOptions{LazyPlans: true})
	require.NoError(t, err)
	defer f.Close()
	cb := f.Program.ConstantBuffer
	for _, b := range cb[2:] {
		b.Storage = cb[1].Storage
	}
	w := &modelWriter{hash: true}
	w.value(reflect.ValueOf(f.Program), false)
	assert.LessOrEqual(t, w.hashed, int64(2*len(cb[1].Storage)), "bytes hashed")
	// Each buffer still shows its digest.
	assert.Equal(t, len(cb)-1, bytes.Count(w.buf, []byte(fmt.Sprintf(`{"size":%d,"sha256":"`, len(cb[1].Storage)))))
}
