package export

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/pte"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chainMethod returns a method x -> e0 -> t1 -> e1 -> t2 ... -> y with n
// engine calls over float32 [2,2] tensors.
func chainMethod(name string, n int) *Method {
	m := &Method{Name: name, Inputs: []*Tensor{{Name: "x", DType: Float32, Shape: []int64{2, 2}}}}
	prev := "x"
	for i := 0; i < n; i++ {
		out := "t" + string(rune('1'+i))
		if i == n-1 {
			out = "y"
		}
		m.Calls = append(m.Calls, &EngineCall{
			Engine:  EngineReader(strings.NewReader("engine"), 6),
			Inputs:  []*Binding{{Name: "in", Tensor: prev}},
			Outputs: []*Binding{{Name: "out", Tensor: out, DType: Float32, Shape: []int64{2, 2}}},
		})
		prev = out
	}
	m.Outputs = []*Tensor{{Name: "y"}}
	return m
}

func resolveOne(t *testing.T, m *Method) *methodDef {
	t.Helper()
	mds, err := resolve(&Program{Methods: []*Method{m}}, nil)
	require.NoError(t, err)
	require.Len(t, mds, 1)
	require.NoError(t, planMemory(mds[0]))
	return mds[0]
}

func TestPlanMatchesUpstreamChain(t *testing.T) {
	// vectors/pte/trt_two_engines_chain: values x, h, y planned at 0, 16, 32
	// in one arena of 48 bytes; args are inputs then outputs.
	md := resolveOne(t, chainMethod("forward", 2))
	ep := executionPlan(md, []*pte.BackendDelegate{{}, {}}, &planTables{})
	assert.Equal(t, []int64{0, 48}, ep.NonConstBufferSizes)
	assert.Equal(t, []int32{0}, ep.Inputs)
	assert.Equal(t, []int32{2}, ep.Outputs)
	require.Len(t, ep.Chains, 1)
	assert.Equal(t, []int32{0}, ep.Chains[0].Inputs)
	assert.Equal(t, []int32{2}, ep.Chains[0].Outputs)
	var offs []uint64
	for _, v := range ep.Values {
		tt := v.Val.(*pte.Tensor)
		assert.Equal(t, pte.ScalarTypeFLOAT, tt.ScalarType)
		assert.Equal(t, []int32{2, 2}, tt.Sizes)
		assert.Equal(t, []uint8{0, 1}, tt.DimOrder)
		assert.Equal(t, uint32(1), tt.AllocationInfo.MemoryID)
		offs = append(offs, tt.AllocationInfo.Offset())
	}
	assert.Equal(t, []uint64{0, 16, 32}, offs)
	require.Len(t, ep.Chains[0].Instructions, 2)
	assert.Equal(t, &pte.DelegateCall{DelegateIndex: 0, Args: []int32{0, 1}}, ep.Chains[0].Instructions[0].Args)
	assert.Equal(t, &pte.DelegateCall{DelegateIndex: 1, Args: []int32{1, 2}}, ep.Chains[0].Instructions[1].Args)
	assert.NotNil(t, ep.Operators)
	assert.Equal(t, `[1, {"type": null, "context": null, "children_spec": []}]`, ep.ContainerMetaType.EncodedOutStr)
	assert.Equal(t, `[1, {"type": "builtins.tuple", "context": "null", "children_spec": [{"type": "builtins.tuple", "context": "null", "children_spec": [{"type": null, "context": null, "children_spec": []}]}, {"type": "builtins.dict", "context": "[]", "children_spec": []}]}]`,
		ep.ContainerMetaType.EncodedInpStr)
}

func TestPlanSharesDisjointIntermediates(t *testing.T) {
	// x -> t1 -> t2 -> t3 -> y: t1 lives over calls 0..1, t3 over 2..3, so
	// t3 reuses t1's space and y (from call 3 on) reuses t2's; the method
	// input is alive throughout and shares with nothing.
	md := resolveOne(t, chainMethod("forward", 4))
	by := map[string]*tensorDef{}
	for _, tt := range md.tensors {
		by[tt.name] = tt
	}
	assert.Equal(t, by["t1"].offset, by["t3"].offset)
	assert.Equal(t, by["t2"].offset, by["y"].offset)
	assert.NotEqual(t, by["t1"].offset, by["t2"].offset)
	for _, name := range []string{"t1", "t2", "t3", "y"} {
		assert.NotEqual(t, by["x"].offset, by[name].offset, name)
	}
	assert.NotEqual(t, by["t3"].offset, by["y"].offset)
	assert.Equal(t, int64(48), md.arena)
	for _, tt := range md.tensors {
		assert.Zero(t, tt.offset%16, tt.name)
	}
}

func TestPlanAlignsAndDynamicBound(t *testing.T) {
	m := &Method{Name: "m",
		Inputs: []*Tensor{
			{Name: "ids", DType: Int64, Shape: []int64{1, -1}, MaxShape: []int64{1, 3}}, // 24 bytes
			{Name: "h", DType: Float16, Shape: []int64{3}},                              // 6 bytes
		},
		Calls: []*EngineCall{{
			Engine:  EngineReader(strings.NewReader("e"), 1),
			Inputs:  []*Binding{{Name: "ids", Shape: []int64{1, -1}, MaxShape: []int64{1, 8}}, {Name: "h"}},
			Outputs: []*Binding{{Name: "y", DType: Bool, Shape: []int64{}}},
		}},
		Outputs: []*Tensor{{Name: "y", DType: Bool}},
	}
	md := resolveOne(t, m)
	assert.Equal(t, []int64{0, 32, 48}, []int64{md.tensors[0].offset, md.tensors[1].offset, md.tensors[2].offset})
	assert.Equal(t, int64(64), md.arena)
	ep := executionPlan(md, []*pte.BackendDelegate{{}}, &planTables{})
	ids := ep.Values[0].Val.(*pte.Tensor)
	assert.Equal(t, pte.TensorShapeDynamismDYNAMIC_BOUND, ids.ShapeDynamism)
	assert.Equal(t, []int32{1, 3}, ids.Sizes)
	y := ep.Values[2].Val.(*pte.Tensor)
	assert.Equal(t, []int32{}, y.Sizes)
	assert.Equal(t, pte.ScalarTypeBOOL, y.ScalarType)
	assert.Equal(t, "[1, "+pytreeLeaf+"]", ep.ContainerMetaType.EncodedOutStr)
}

func TestValidationErrors(t *testing.T) {
	cases := []struct {
		name   string
		edit   func(m *Method)
		tensor string
		call   int
		msg    string
	}{
		{"unknown tensor", func(m *Method) { m.Calls[1].Inputs[0].Tensor = "nope" }, "nope", 1, "unknown tensor"},
		{"consumed before produced", func(m *Method) { m.Calls[0].Inputs[0].Tensor = "y" }, "y", 0, "before it is produced"},
		{"consumes own output", func(m *Method) { m.Calls[0].Inputs[0].Tensor = "t1" }, "t1", 0, "before it is produced"},
		{"duplicate tensor", func(m *Method) { m.Calls[1].Outputs[0].Tensor = "t1" }, "t1", 1, "declared twice"},
		{"output shadows input", func(m *Method) { m.Calls[0].Outputs[0].Tensor = "x" }, "x", 0, "already a method input"},
		{"duplicate binding", func(m *Method) { m.Calls[0].Outputs[0].Name = "in" }, "", 0, `binding name "in" is used twice`},
		{"empty binding", func(m *Method) { m.Calls[0].Outputs[0].Name = ""; m.Calls[0].Outputs[0].Tensor = "t1" }, "t1", 0, "binding name is empty"},
		{"output not produced", func(m *Method) { m.Outputs[0].Name = "z" }, "z", -1, "not produced"},
		{"output twice", func(m *Method) { m.Outputs = append(m.Outputs, &Tensor{Name: "y"}) }, "y", -1, "listed twice"},
		{"dtype mismatch", func(m *Method) { m.Calls[1].Inputs[0].DType = Float16 }, "t1", 1, "dtype float16, but the tensor is float32"},
		{"shape mismatch", func(m *Method) { m.Calls[1].Inputs[0].Shape = []int64{2, 3} }, "t1", 1, "dimension 1"},
		{"rank mismatch", func(m *Method) { m.Outputs[0].Shape = []int64{4} }, "y", -1, "rank"},
		{"bad dtype", func(m *Method) { m.Calls[0].Outputs[0].DType = "float" }, "t1", 0, "unknown dtype"},
		{"missing dtype", func(m *Method) { m.Calls[0].Outputs[0].DType = "" }, "t1", 0, "dtype is missing"},
		{"missing shape", func(m *Method) { m.Calls[0].Outputs[0].Shape = nil }, "t1", 0, "shape is missing"},
		{"dynamic without bound", func(m *Method) { m.Inputs[0].Shape = []int64{-1, 2} }, "x", -1, "no max_shape"},
		{"bound below shape", func(m *Method) { m.Inputs[0].MaxShape = []int64{1, 2} }, "x", -1, "differs from the static dimension 2"},
		{"bound on a static dimension", func(m *Method) { m.Inputs[0].MaxShape = []int64{8, 2} }, "x", -1, "write -1 in shape"},
		{"consumer bound on a static dimension", func(m *Method) {
			m.Calls[1].Inputs[0].Shape = []int64{2, -1}
			m.Calls[1].Inputs[0].MaxShape = []int64{4, 8}
		}, "t1", 1, "differs from the static dimension"},
		{"negative device", func(m *Method) { m.Calls[1].DeviceID = -1 }, "", 1, "outside [0, 127]"},
		{"device beyond int8", func(m *Method) { m.Calls[1].DeviceID = 128 }, "", 1, "outside [0, 127]"},
		{"no bindings", func(m *Method) { m.Calls[0].Inputs = nil; m.Calls[0].Outputs = nil; m.Calls[1].Inputs[0].Tensor = "x" }, "", 0, "no bindings"},
		{"alias unknown output", func(m *Method) { m.Calls[0].AliasedIO = []AliasedIO{{Output: "q", Input: "in", Kind: "user"}} }, "", 0, `output "q"`},
		{"alias bad kind", func(m *Method) { m.Calls[0].AliasedIO = []AliasedIO{{Output: "out", Input: "in", Kind: "x"}} }, "", 0, "kind"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := chainMethod("forward", 2)
			c.edit(m)
			_, err := resolve(&Program{Methods: []*Method{m}}, nil)
			require.Error(t, err)
			var e *Error
			require.True(t, errors.As(err, &e), "%T %v", err, err)
			assert.Equal(t, "forward", e.Method)
			assert.Equal(t, c.tensor, e.Tensor)
			assert.Equal(t, c.call, e.CallIndex)
			if c.call >= 0 {
				assert.Contains(t, err.Error(), fmt.Sprintf("engine calls[%d]", c.call))
			}
			assert.Contains(t, err.Error(), c.msg)
			assert.Contains(t, err.Error(), `method "forward"`)
		})
	}
}

func TestValidationProgramErrors(t *testing.T) {
	_, err := resolve(&Program{}, nil)
	assert.ErrorContains(t, err, "no methods")
	_, err = resolve(&Program{Methods: []*Method{chainMethod("a", 1), chainMethod("a", 1)}}, nil)
	assert.ErrorContains(t, err, "used twice")
	_, err = resolve(&Program{Methods: []*Method{chainMethod("a\x00b", 1)}}, nil)
	assert.ErrorContains(t, err, "NUL")
}

func TestConsumerShapeRules(t *testing.T) {
	dyn := &tensorDef{dtype: Float32, shape: []int64{-1, 4}, sizes: []int32{8, 4}}
	stat := &tensorDef{dtype: Float32, shape: []int64{6, 4}, sizes: []int32{6, 4}}
	assert.NoError(t, checkConsumer(stat, "", []int64{-1, 4}, []int64{8, 4}))
	assert.Error(t, checkConsumer(stat, "", []int64{-1, 4}, []int64{5, 4}))
	assert.NoError(t, checkConsumer(dyn, "", []int64{-1, 4}, []int64{8, 4}))
	assert.Error(t, checkConsumer(dyn, "", []int64{8, 4}, nil), "fixed consumer of a dynamic producer")
	assert.NoError(t, checkConsumer(dyn, Float32, nil, nil))
}

// TestBlobSourcePassThrough stores an existing TensorRT blob unchanged and
// takes its binding names from it.
func TestBlobSourcePassThrough(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "first.pte")
	_, err := WriteFile(first, &Program{Methods: []*Method{chainMethod("forward", 1)}}, nil)
	require.NoError(t, err)
	f, err := pte.Open(first)
	require.NoError(t, err)
	pl, err := f.DelegateData(0, 0)
	require.NoError(t, err)
	blob, err := pl.Data()
	require.NoError(t, err)
	f.Close()
	blobPath := filepath.Join(dir, "x.blob")
	require.NoError(t, os.WriteFile(blobPath, blob, 0o644))

	m := chainMethod("forward", 1)
	m.Calls[0].Engine = BlobFile(blobPath)
	m.Calls[0].Inputs[0].Name = "" // taken from the blob
	out := filepath.Join(dir, "second.pte")
	res, err := WriteFile(out, &Program{Methods: []*Method{m}}, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Blobs)
	g, err := pte.Open(out)
	require.NoError(t, err)
	defer g.Close()
	pl, err = g.DelegateData(0, 0)
	require.NoError(t, err)
	got, err := pl.Data()
	require.NoError(t, err)
	assert.Equal(t, blob, got)

	m.Calls[0].Outputs[0].Name = "other"
	_, err = WriteFile(out, &Program{Methods: []*Method{m}}, nil)
	assert.ErrorContains(t, err, `does not match the blob's binding "out"`)
	m.Calls[0].Outputs[0].Name = "out"
	m.Calls[0].DeviceID = 1
	_, err = WriteFile(out, &Program{Methods: []*Method{m}}, nil)
	assert.ErrorContains(t, err, "come from the blob")
	m.Calls[0].DeviceID = 0
	m.Calls[0].Engine = Source{Kind: SourceBlob, ReaderAt: bytes.NewReader([]byte("TR99 not a blob at all, really not")), Size: 34}
	_, err = WriteFile(out, &Program{Methods: []*Method{m}}, nil)
	assert.ErrorContains(t, err, "not a valid TensorRT blob")
}

func TestEngineSourceErrors(t *testing.T) {
	m := chainMethod("forward", 1)
	m.Calls[0].Engine = EngineReader(bytes.NewReader(nil), 0)
	_, err := Write(io.Discard, &Program{Methods: []*Method{m}}, nil)
	assert.ErrorContains(t, err, "empty")
	m.Calls[0].Engine = EngineFile(filepath.Join(t.TempDir(), "missing.engine"))
	_, err = Write(io.Discard, &Program{Methods: []*Method{m}}, nil)
	assert.ErrorContains(t, err, "missing.engine")
	m.Calls[0].Engine = Source{}
	_, err = Write(io.Discard, &Program{Methods: []*Method{m}}, nil)
	assert.ErrorContains(t, err, "neither a path nor a reader")
	m.Calls[0].Engine = EngineReader(strings.NewReader("e"), 1)
	m.Calls[0].Outputs[0].Name = "bad\nname"
	_, err = Write(io.Discard, &Program{Methods: []*Method{m}}, nil)
	assert.ErrorContains(t, err, `io_bindings[1].name "bad\nname": contains control character`)
	m.Calls[0].Outputs[0].Name = "out"
	m.CompileSpecs = []*pte.CompileSpec{{Key: "weight_streaming_budget\x00", Value: []byte("1")}}
	_, err = Write(io.Discard, &Program{Methods: []*Method{m}}, nil)
	assert.ErrorContains(t, err, `method "forward"`)
	m.CompileSpecs = []*pte.CompileSpec{{Key: "target_device", Value: []byte("cuda:0")}}
	_, err = Write(io.Discard, &Program{Methods: []*Method{m}}, &Options{TargetDevice: "cuda:1"})
	assert.ErrorContains(t, err, "use one of them")
	var buf bytes.Buffer
	res, err := Write(&buf, &Program{Methods: []*Method{m}}, &Options{InlineDelegateData: true})
	require.NoError(t, err)
	assert.Equal(t, int64(buf.Len()), res.Size)
	f, err := pte.NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	assert.Nil(t, f.Header, "inline data: no segment bytes, no extended header")
	assert.Len(t, f.Program.BackendDelegateData, 1)
}

// TestDedupByContent stores blobs with equal bytes once, whatever their
// source, and keeps equal-sized blobs that differ (even only in the middle)
// apart.
func TestDedupByContent(t *testing.T) {
	big := func(mid byte) []byte {
		b := bytes.Repeat([]byte{7}, 3*64<<10) // equal ends, a different middle
		b[len(b)/2] = mid
		return b
	}
	m := chainMethod("forward", 4)
	for i, data := range [][]byte{big(1), big(1), big(2), []byte("small")} {
		m.Calls[i].Engine = EngineReader(bytes.NewReader(data), int64(len(data)))
	}
	var buf bytes.Buffer
	res, err := Write(&buf, &Program{Methods: []*Method{m}}, nil)
	require.NoError(t, err)
	assert.Equal(t, 4, res.Delegates)
	assert.Equal(t, 3, res.Blobs)
	f, err := pte.NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	d := f.Program.Plan(0).Delegates
	assert.Equal(t, d[0].Processed.Index, d[1].Processed.Index)
	assert.NotEqual(t, d[1].Processed.Index, d[2].Processed.Index)
	assert.Len(t, f.Program.Segments, 4)
}
