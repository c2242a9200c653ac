package inspect

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// inlineSource is a constant buffer held in memory.
func inlineSource(b []byte) constSource {
	return constSource{r: bytes.NewReader(b), n: int64(len(b)), inline: true}
}

// TestElementDecoders: every scalar type upstream decodes reads as its
// value, half and bfloat16 included; the others are not decoded.
func TestElementDecoders(t *testing.T) {
	le := binary.LittleEndian
	for _, tc := range []struct {
		st    pte.ScalarType
		bytes []byte
		want  float64
		float bool
	}{
		{pte.ScalarTypeBYTE, []byte{200}, 200, false},
		{pte.ScalarTypeCHAR, []byte{0xfe}, -2, false},
		{pte.ScalarTypeBOOL, []byte{3}, 1, false},
		{pte.ScalarTypeBOOL, []byte{0}, 0, false},
		{pte.ScalarTypeSHORT, le.AppendUint16(nil, 0xfffd), -3, false},
		{pte.ScalarTypeUINT16, le.AppendUint16(nil, 0xfffd), 65533, false},
		{pte.ScalarTypeINT, le.AppendUint32(nil, 0xfffffffc), -4, false},
		{pte.ScalarTypeUINT32, le.AppendUint32(nil, 0xfffffffc), 4294967292, false},
		{pte.ScalarTypeLONG, le.AppendUint64(nil, math.MaxUint64), -1, false},
		{pte.ScalarTypeUINT64, le.AppendUint64(nil, 1<<40), 1 << 40, false},
		{pte.ScalarTypeHALF, le.AppendUint16(nil, 0x3c00), 1, true},
		{pte.ScalarTypeHALF, le.AppendUint16(nil, 0xc000), -2, true},
		{pte.ScalarTypeHALF, le.AppendUint16(nil, 0x3555), 0.333251953125, true},
		{pte.ScalarTypeHALF, le.AppendUint16(nil, 0x0001), math.Ldexp(1, -24), true}, // smallest subnormal
		{pte.ScalarTypeHALF, le.AppendUint16(nil, 0x7bff), 65504, true},
		{pte.ScalarTypeHALF, le.AppendUint16(nil, 0xfc00), math.Inf(-1), true},
		{pte.ScalarTypeBFLOAT16, le.AppendUint16(nil, 0x3fc0), 1.5, true},
		{pte.ScalarTypeBFLOAT16, le.AppendUint16(nil, 0xc2f7), -123.5, true},
		{pte.ScalarTypeFLOAT, le.AppendUint32(nil, math.Float32bits(0.1)), float64(float32(0.1)), true},
		{pte.ScalarTypeDOUBLE, le.AppendUint64(nil, math.Float64bits(-0.1)), -0.1, true},
	} {
		dec, size, isFloat := elementDecoder(tc.st)
		require.NotNil(t, dec, "%v", tc.st)
		assert.Equal(t, int64(len(tc.bytes)), size, "%v size", tc.st)
		assert.Equal(t, tc.want, dec(tc.bytes), "%v % x", tc.st, tc.bytes)
		assert.Equal(t, tc.float, isFloat, "%v", tc.st)
	}
	dec, _, _ := elementDecoder(pte.ScalarTypeHALF)
	assert.True(t, math.IsNaN(dec([]byte{0x01, 0x7e})), "half NaN")
	for _, st := range []pte.ScalarType{pte.ScalarTypeQINT8, pte.ScalarTypeFLOAT8E4M3FN, pte.ScalarTypeBITS16} {
		dec, _, _ := elementDecoder(st)
		assert.Nil(t, dec, "%v is not decoded", st)
	}
}

// TestCompareConstants: the statistics of two constant buffers, as
// upstream computes them: the first min(elements, lengths) elements, both
// as A's type; mean and max over the differing elements; the first ten
// samples with their index in A's shape.
func TestCompareConstants(t *testing.T) {
	le := binary.LittleEndian
	half := func(vs ...uint16) []byte {
		var b []byte
		for _, v := range vs {
			b = le.AppendUint16(b, v)
		}
		return b
	}
	c := &constComparer{done: map[dataKey]*dataResult{}}

	// Half [2,2]: element 1 (index [0,1]) 1 -> 2, element 3 (index [1,1])
	// -2 -> 0.5; -0 and +0 (element 2) differ in bytes only.
	a := half(0x3c00, 0x3c00, 0x0000, 0xc000)
	b := half(0x3c00, 0x4000, 0x8000, 0x3800)
	res, err := c.compare(inlineSource(a), inlineSource(b), pte.ScalarTypeHALF, 4)
	require.NoError(t, err)
	require.True(t, res.differ)
	// The samples' indices are each tensor's (unravel).
	assert.Equal(t, &DataDiff{Decoded: true, Elements: 4, Differing: 2, MaxAbs: 2.5, MeanAbs: 1.75, Samples: []ElementDiff{
		{Flat: 1, A: 1, B: 2},
		{Flat: 3, A: -2, B: 0.5},
	}}, res.data)
	assert.Equal(t, []int64{0, 1}, unravel(1, []int32{2, 2}))
	assert.Equal(t, []int64{1, 1}, unravel(3, []int32{2, 2}))

	// Equal bytes: no statistics.
	res, err = c.compare(inlineSource(a), inlineSource(bytes.Clone(a)), pte.ScalarTypeHALF, 4)
	require.NoError(t, err)
	assert.False(t, res.differ)
	assert.Nil(t, res.data)

	// Lengths differ: the bytes differ, the common elements are compared,
	// bounded by A's element count.
	res, err = c.compare(inlineSource([]byte{1, 0, 1, 1, 1}), inlineSource([]byte{1, 1, 1}), pte.ScalarTypeBOOL, 2)
	require.NoError(t, err)
	require.True(t, res.differ)
	assert.Equal(t, int64(2), res.data.Elements)
	assert.Equal(t, int64(1), res.data.Differing)
	assert.Equal(t, []ElementDiff{{Flat: 1, A: 0, B: 1}}, res.data.Samples)

	// Int64 values past 2^53 that float64 cannot tell apart still differ.
	x := le.AppendUint64(nil, 1<<60)
	y := le.AppendUint64(nil, 1<<60+1)
	res, err = c.compare(inlineSource(x), inlineSource(y), pte.ScalarTypeLONG, 1)
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.data.Differing)

	// More than ten differing elements: ten samples, every one counted.
	var fa, fb []byte
	for i := range 40 {
		fa = le.AppendUint32(fa, math.Float32bits(float32(i)))
		fb = le.AppendUint32(fb, math.Float32bits(float32(i)+float32(i%4)))
	}
	res, err = c.compare(inlineSource(fa), inlineSource(fb), pte.ScalarTypeFLOAT, 40)
	require.NoError(t, err)
	assert.Equal(t, int64(30), res.data.Differing)
	assert.Equal(t, Float(3), res.data.MaxAbs)
	assert.Equal(t, Float(2), res.data.MeanAbs)
	require.Len(t, res.data.Samples, MaxDiffSamples)
	assert.Equal(t, ElementDiff{Flat: 13, A: 13, B: 14}, res.data.Samples[9])

	// A buffer that cannot be read whole is an error naming the bytes.
	short := constSource{r: bytes.NewReader([]byte{1, 2}), n: 4}
	_, err = c.compare(short, inlineSource([]byte{1, 2, 3, 4}), pte.ScalarTypeBYTE, 4)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reading A's bytes 0..4")

	// A type upstream does not decode: the bytes differ, nothing counted.
	res, err = c.compare(inlineSource([]byte{1}), inlineSource([]byte{2}), pte.ScalarTypeQINT8, 0)
	require.NoError(t, err)
	assert.True(t, res.differ)
	assert.Equal(t, &DataDiff{Samples: []ElementDiff{}}, res.data)
}

// openBytes opens a program held in memory, with lazy plans as pteinspect
// opens it.
func openBytes(t *testing.T, data []byte) *pte.File {
	t.Helper()
	f, err := pte.NewFileWith(bytes.NewReader(data), int64(len(data)), &pte.OpenOptions{LazyPlans: true})
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// TestSummarizeDiffBuilt: the verdict, compile spec changes, TensorRT
// delegates, methods on one side and named data of built programs.
func TestSummarizeDiffBuilt(t *testing.T) {
	progs := genPrograms(t)
	sum := func(a, b []byte) *DiffSummary {
		s, err := SummarizeDiff(openBytes(t, a), openBytes(t, b), nil)
		require.NoError(t, err)
		return s
	}

	s := sum(progs["segment"], progs["segment"])
	assert.True(t, s.BitwiseEqual)
	assert.False(t, s.SpecsOnly)
	assert.Empty(t, s.Methods)
	assert.Empty(t, s.SpecChanges)
	assert.Empty(t, s.TensorRT)

	// A budget removed: only compile specs differ, one line for it, and
	// the TensorRT delegate says its engine is unchanged.
	s = sum(progs["segment"], progs["no_budget"])
	assert.False(t, s.BitwiseEqual)
	assert.True(t, s.SpecsOnly)
	mib := "1048576"
	want := SpecChange{MethodIndex: 0, Method: "forward", DelegateIndex: 0, Backend: "TensorRTBackend", Key: "weight_streaming_budget", A: &mib}
	assert.Equal(t, []SpecChange{want}, s.SpecChanges)
	require.Len(t, s.TensorRT, 1)
	trt := s.TensorRT[0]
	assert.False(t, trt.PayloadChanged)
	assert.False(t, trt.MetadataChanged)
	assert.Equal(t, []SpecChange{want}, trt.Specs)
	require.NotNil(t, trt.Budget[0])
	assert.Equal(t, "1 MiB", *trt.Budget[0])
	assert.Nil(t, trt.Budget[1])
	require.NotNil(t, trt.EngineSize[0])
	assert.Equal(t, trt.EngineSize[0], trt.EngineSize[1])

	// Two specs added (target_device was already "cuda:0"), one of them not
	// UTF-8.
	s = sum(progs["segment"], progs["specs"])
	assert.True(t, s.SpecsOnly)
	var keys []string
	for _, c := range s.SpecChanges {
		keys = append(keys, c.Key)
		assert.Nil(t, c.A)
	}
	assert.Equal(t, []string{"precision", "opaque"}, keys)
	assert.Equal(t, "hex:ff0010", *s.SpecChanges[1].B)

	// A method more in B.
	s = sum(progs["segment"], progs["getter"])
	assert.False(t, s.SpecsOnly)
	assert.Equal(t, []string{"get_max_seq_len"}, s.ExtraMethodsInB)
	assert.Empty(t, s.ExtraMethodsInA)

	// Named data by key: one key on each side only, one with other bytes.
	withNamed := func(data []byte, named ...*pte.NamedData) []byte {
		return testprog.Rewrite(t, data, func(p *pte.Program) { p.NamedData = named })
	}
	a := withNamed(progs["chain"], &pte.NamedData{Key: "k", SegmentIndex: 0}, &pte.NamedData{Key: "same", SegmentIndex: 0}, &pte.NamedData{Key: "x", SegmentIndex: 0})
	b := withNamed(progs["chain"], &pte.NamedData{Key: "y", SegmentIndex: 0}, &pte.NamedData{Key: "same", SegmentIndex: 0}, &pte.NamedData{Key: "k", SegmentIndex: 1})
	s = sum(a, b)
	assert.Equal(t, NamedDataDiff{OnlyInA: []string{"x"}, OnlyInB: []string{"y"}, Changed: []string{"k"}}, s.NamedData)
}

// TestSummarizeDiffReadsOnce: BuildDiffPair's pass and the summary
// together read no byte of two large programs twice, heads of delegate
// payloads included, whether they differ in an engine byte or not
// (TestDiffPassReadsEachByteOnce: or in constant data).
func TestSummarizeDiffReadsOnce(t *testing.T) {
	progs := genPrograms(t)
	big := progs["large_engine"]
	edited := bytes.Clone(big)
	edited[len(edited)-100] ^= 0xff // a byte of the engine
	for _, pair := range [][2][]byte{{big, big}, {big, edited}} {
		fa, ra := openRecording(t, pair[0])
		fb, rb := openRecording(t, pair[1])
		da, db, cc, err := BuildDiffPair(fa, fb, nil)
		require.NoError(t, err)
		s, err := SummarizeDiff(fa, fb, &DiffSummaryOptions{Docs: [2]*Document{da, db}, Constants: cc})
		require.NoError(t, err)
		assertReadOnce(t, "first file", ra, fa.Size)
		assertReadOnce(t, "second file", rb, fb.Size)
		assert.Equal(t, bytes.Equal(pair[0], pair[1]), s.BitwiseEqual)
		if !s.BitwiseEqual {
			require.Len(t, s.TensorRT, 1)
			assert.True(t, s.TensorRT[0].PayloadChanged)
			assert.False(t, s.SpecsOnly)
		}
	}
}

// TestDiffMethodDamaged: values and instructions whose table is absent (a
// typed nil, as the reader leaves a tag without its table) or unknown are
// compared without a panic, and a difference among them is reported.
func TestDiffMethodDamaged(t *testing.T) {
	plan := func(vals ...pte.Value) *pte.ExecutionPlan {
		p := &pte.ExecutionPlan{Name: "forward"}
		for _, v := range vals {
			p.Values = append(p.Values, &pte.EValue{Val: v})
		}
		p.Chains = []*pte.Chain{{Instructions: []*pte.Instruction{
			{Args: (*pte.KernelCall)(nil)}, {Args: (*pte.DelegateCall)(nil)}, nil,
			{Args: &pte.KernelCall{OpIndex: 7, Args: []int32{0}}},
		}}}
		return p
	}
	pa := plan((*pte.Tensor)(nil), (*pte.Int)(nil), (*pte.UnknownValue)(nil), &pte.Int{IntVal: 1}, &pte.UnknownValue{Tag: 42}, nil)
	pb := plan(&pte.Tensor{Sizes: []int32{2}}, (*pte.Int)(nil), (*pte.UnknownValue)(nil), &pte.UnknownValue{Tag: pte.KernelTypesInt}, &pte.UnknownValue{Tag: 42}, nil)
	m, err := diffMethod(0, pa, pb, &constComparer{})
	require.NoError(t, err)
	require.NotNil(t, m)
	var idx []int
	for _, v := range m.Values {
		idx = append(idx, v.Index)
		require.Len(t, v.Fields, 1)
		assert.Equal(t, "val", v.Fields[0].Field)
	}
	assert.Equal(t, []int{0, 3}, idx, "a missing tensor table, and an Int against an Int of unknown form")
	assert.Equal(t, []Usage{{Name: "operator#7", Arg: 0}}, m.Values[0].UsedByA)
	assert.Empty(t, m.Tensors)
}

// TestSummarizeDiffSharedBuffer: two tensors of different shapes over the
// same inline constant buffer each get their samples' indices in their own
// shape, though the buffers are compared once.
func TestSummarizeDiffSharedBuffer(t *testing.T) {
	progs := genPrograms(t)
	le := binary.LittleEndian
	withConstants := func(vals []float32) []byte {
		return testprog.Rewrite(t, progs["segment"], func(p *pte.Program) {
			var storage []byte
			for _, v := range vals {
				storage = le.AppendUint32(storage, math.Float32bits(v))
			}
			p.ConstantSegment = nil
			p.ConstantBuffer = []*pte.Buffer{{}, {Storage: storage}}
			ep := p.Plan(0)
			for _, sizes := range [][]int32{{2, 3}, {3, 2}} {
				ep.Values = append(ep.Values, &pte.EValue{Val: &pte.Tensor{
					ScalarType: pte.ScalarTypeFLOAT, Sizes: sizes, DimOrder: []uint8{0, 1}, DataBufferIdx: 1,
				}})
			}
		})
	}
	a := withConstants([]float32{0, 1, 2, 3, 4, 5})
	b := withConstants([]float32{0, 1, 2, 3, 14, 5})
	s, err := SummarizeDiff(openBytes(t, a), openBytes(t, b), nil)
	require.NoError(t, err)
	require.Len(t, s.Methods, 1)
	m := s.Methods[0]
	require.Len(t, m.Tensors, 2)
	for i, want := range [][]int64{{1, 1}, {2, 0}} {
		d := m.Tensors[i].Data
		require.NotNil(t, d)
		assert.Equal(t, int64(6), d.Elements)
		assert.Equal(t, []ElementDiff{{Flat: 4, Index: want, A: 4, B: 14}}, d.Samples, "tensor %d", i)
		assert.Equal(t, Float(10), d.MaxAbs)
		assert.Equal(t, int64(24), m.Tensors[i].ByteSizeA)
	}
}

// TestDataCmpPieces: a comparison fed in pieces that cut elements (as a
// pass reading up to span bounds may) gives what one piece gives, equal
// pieces included.
func TestDataCmpPieces(t *testing.T) {
	le := binary.LittleEndian
	var fa, fb []byte
	for i := range 64 {
		fa = le.AppendUint32(fa, math.Float32bits(float32(i)))
		v := float32(i)
		if i%9 == 4 {
			v += 0.25 * float32(i)
		}
		fb = le.AppendUint32(fb, math.Float32bits(v))
	}
	whole := newDataCmp(int64(len(fa)), int64(len(fb)), pte.ScalarTypeFLOAT)
	whole.want(64)
	whole.feed(fa, fb)
	want := whole.result(64)
	require.True(t, want.differ)
	require.Equal(t, int64(7), want.data.Differing)
	for _, piece := range []int{1, 3, 5, 7, 13} {
		d := newDataCmp(int64(len(fa)), int64(len(fb)), pte.ScalarTypeFLOAT)
		d.want(64)
		for p := 0; p < len(fa); p += piece {
			e := min(p+piece, len(fa))
			d.feed(fa[p:e], fb[p:e])
		}
		assert.Equal(t, want, d.result(64), "pieces of %d bytes", piece)
	}
	// One reading asked for several counts of first elements gives, for
	// each, what a reading asked for that count alone gives.
	cuts := []int64{0, 1, 4, 5, 13, 14, 40, 64}
	all := newDataCmp(int64(len(fa)), int64(len(fb)), pte.ScalarTypeFLOAT)
	for _, n := range slices.Backward(cuts) {
		all.want(n)
	}
	for p := 0; p < len(fa); p += 7 {
		e := min(p+7, len(fa))
		all.feed(fa[p:e], fb[p:e])
	}
	for _, n := range cuts {
		one := newDataCmp(int64(len(fa)), int64(len(fb)), pte.ScalarTypeFLOAT)
		one.want(n)
		one.feed(fa, fb)
		assert.Equal(t, one.result(n), all.result(n), "the first %d elements", n)
	}
}
