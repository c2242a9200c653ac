package export

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/pte"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// verifyClean parses a written program and fails on any Error finding of
// the reader's verifier.
func verifyClean(t testing.TB, data []byte) *pte.File {
	t.Helper()
	f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	for _, fd := range f.Verify() {
		require.NotEqual(t, pte.SeverityError, fd.Severity, "verify: %v", fd)
	}
	return f
}

// TestMethodWithoutEngines: a method with no engine call (empty, or
// returning its inputs) is legal in ExecuTorch and must verify clean: its
// delegates and instructions are present, empty vectors.
func TestMethodWithoutEngines(t *testing.T) {
	for _, m := range []*Method{
		{Name: "empty"},
		{Name: "identity", Inputs: []*Tensor{{Name: "x", DType: Int64, Shape: []int64{3}}}, Outputs: []*Tensor{{Name: "x"}}},
	} {
		var buf bytes.Buffer
		res, err := Write(&buf, &Program{Methods: []*Method{m, chainMethod("forward", 1)}}, nil)
		require.NoError(t, err, m.Name)
		assert.Equal(t, 0, res.Methods[0].Delegates)
		f := verifyClean(t, buf.Bytes())
		ep := f.Program.Plan(0)
		assert.NotNil(t, ep.Delegates, m.Name)
		assert.Empty(t, ep.Delegates, m.Name)
		require.Len(t, ep.Chains, 1)
		assert.NotNil(t, ep.Chains[0].Instructions, m.Name)
	}
}

// funcReader is a ReaderAt that == cannot compare (it holds a func).
type funcReader struct {
	read func(p []byte, off int64) (int, error)
}

func (r funcReader) ReadAt(p []byte, off int64) (int, error) { return r.read(p, off) }

// TestUncomparableReaderAt: two calls sharing a reader whose dynamic type
// is not comparable must not panic; equal bytes are still stored once.
func TestUncomparableReaderAt(t *testing.T) {
	data := strings.NewReader("engine")
	r := funcReader{read: data.ReadAt}
	m := chainMethod("forward", 2)
	for _, c := range m.Calls {
		c.Engine = EngineReader(r, 6)
	}
	var buf bytes.Buffer
	res, err := Write(&buf, &Program{Methods: []*Method{m}}, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Blobs)
	verifyClean(t, buf.Bytes())

	// The same pointer twice: one blob without reading (identity).
	p := &funcReader{read: data.ReadAt}
	for _, c := range m.Calls {
		c.Engine = EngineReader(p, 6)
	}
	res, err = Write(&buf, &Program{Methods: []*Method{m}}, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Blobs)
}

// TestTargetDeviceSpecs: a target_device in the caller's compile specs is
// checked as ExecuTorch's device propagation reads it, matched as a C
// string (so "target_device\x00" is a pin, not an extra entry), and may not
// be given twice.
func TestTargetDeviceSpecs(t *testing.T) {
	write := func(specs []*pte.CompileSpec, top []*pte.CompileSpec, opts *Options) (*pte.File, *Result, error) {
		m := chainMethod("forward", 1)
		m.Calls[0].DeviceID = 1
		m.CompileSpecs = specs
		if opts == nil {
			opts = &Options{}
		}
		opts.CompileSpecs = top
		var buf bytes.Buffer
		res, err := Write(&buf, &Program{Methods: []*Method{m}}, opts)
		if err != nil {
			return nil, nil, err
		}
		return verifyClean(t, buf.Bytes()), res, nil
	}
	spec := func(k, v string) []*pte.CompileSpec { return []*pte.CompileSpec{{Key: k, Value: []byte(v)}} }
	for _, v := range []string{"banana", "cuda:x", "cuda:128", "cuda:-1"} {
		_, _, err := write(spec("target_device", v), nil, nil)
		assert.ErrorContains(t, err, "bad target_device", v)
		_, _, err = write(nil, spec("target_device", v), nil)
		assert.ErrorContains(t, err, "top-level compile_specs[0]: bad target_device", v)
	}
	_, _, err := write(nil, nil, &Options{TargetDevice: "cuda:200"})
	assert.ErrorContains(t, err, "outside [0, 127]")

	f, res, err := write(spec("target_device\x00", "cuda:0"), nil, nil)
	require.NoError(t, err)
	specs := f.Program.Plan(0).Delegates[0].CompileSpecs
	require.Len(t, specs, 1, "a C-string target_device key pins the device: no derived entry")
	assert.Equal(t, "target_device\x00", specs[0].Key)
	require.Len(t, res.Warnings, 1, "cuda:0 pinned for an engine of device 1")
	assert.Equal(t, WarnDeviceMismatch, res.Warnings[0].Kind)

	_, _, err = write(append(spec("target_device", "cuda:1"), spec("target_device\x00x", "cuda:1")...), nil, nil)
	assert.ErrorContains(t, err, "given twice")
	_, _, err = write(spec("target_device", "cuda:1"), spec("target_device", "cuda:1"), nil)
	assert.ErrorContains(t, err, "top-level compile specs pin it too")
	_, _, err = write(nil, spec("target_device", "cuda:1"), &Options{TargetDevice: "cuda:1"})
	assert.ErrorContains(t, err, "use one of them")

	// A hand-written budget in the top-level specs is blamed on them, not on
	// a method.
	_, _, err = write(nil, spec("weight_streaming_budget", "1"), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "top-level compile_specs[0]")
	assert.NotContains(t, err.Error(), "method")
}

// TestDerivedTargetDevice: the target_device derived from an engine's
// device is "cuda:N", and a device id no target_device can name is an
// error rather than a value ExecuTorch cannot store (validation refuses
// such ids first; this guards the derivation itself, including an id that
// would wrap in a 32-bit int).
func TestDerivedTargetDevice(t *testing.T) {
	sp := &specPlan{}
	specs, err := delegateSpecs(nil, sp, 127)
	require.NoError(t, err)
	require.Len(t, specs, 1)
	assert.Equal(t, "target_device", specs[0].Key)
	assert.Equal(t, "cuda:127", string(specs[0].Value))
	for _, id := range []int64{-1, 128, 1<<32 + 1} {
		_, err := delegateSpecs(nil, sp, id)
		assert.ErrorContains(t, err, "outside [0, 127]", id)
	}
	// A pin means no derivation, so the engine's id is not read.
	specs, err = delegateSpecs(nil, &specPlan{pinned: []byte("cuda:3")}, 128)
	require.NoError(t, err)
	assert.Equal(t, "cuda:3", string(specs[0].Value))
}

// TestAliasedNameCollidingWithScalarKey: an aliased output named
// "device_id" would be found by the deployed C++ reader's text search for
// the device_id key in upstream's layout. The export still succeeds (the
// encoder writes the scalars first), and the strict, Python and deployed
// readings of the written blob all agree with what was asked for. Metadata
// no layout can carry (a control character in a name) is still refused,
// naming the call.
func TestAliasedNameCollidingWithScalarKey(t *testing.T) {
	for _, name := range []string{"device_id", "hardware_compatible"} {
		m := &Method{Name: "forward", Inputs: []*Tensor{{Name: "cache", DType: Float32, Shape: []int64{2, 2}}}}
		m.Calls = []*EngineCall{{
			Engine:             EngineReader(strings.NewReader("engine"), 6),
			DeviceID:           3,
			HardwareCompatible: true,
			Inputs:             []*Binding{{Name: "in", Tensor: "cache"}},
			Outputs:            []*Binding{{Name: name, Tensor: "y", DType: Float32, Shape: []int64{2, 2}}},
			AliasedIO:          []AliasedIO{{Output: name, Input: "in", Kind: "user"}},
		}}
		m.Outputs = []*Tensor{{Name: "y"}}
		var buf bytes.Buffer
		_, err := Write(&buf, &Program{Methods: []*Method{m}}, nil)
		require.NoError(t, err, name)
		f := verifyClean(t, buf.Bytes())
		pl, err := f.DelegateData(0, 0)
		require.NoError(t, err)
		rep, err := delegate.Check(pl.SectionReader, pl.Size())
		require.NoError(t, err)
		require.NoError(t, rep.Err, name)
		require.NoError(t, rep.PythonErr, name)
		assert.Empty(t, rep.Hazards, name)

		want := []delegate.AliasedIO{{Output: name, Input: "in", Kind: "user"}}
		assert.Equal(t, want, rep.Blob.Metadata.AliasedIO, name)
		assert.Equal(t, int64(3), rep.Blob.Metadata.DeviceID, name)
		assert.True(t, rep.Blob.Metadata.HardwareCompatible, name)
		d := rep.Deployed
		require.True(t, d.OK, "%s: deployed reader rejects: %s", name, d.Reason)
		assert.Equal(t, []string{"in"}, d.Inputs, name)
		assert.Equal(t, []string{name}, d.Outputs, name)
		assert.Equal(t, want, d.AliasedIO, name)
		assert.Equal(t, int32(3), d.DeviceID, name)
		assert.True(t, d.HardwareCompatible, name)
		py := rep.Python.Metadata
		assert.Equal(t, "3", fmt.Sprint(py.DeviceID), name)
		assert.Equal(t, true, py.HardwareCompatible, name)
		assert.Equal(t, []delegate.PyAliasedIO{{Output: name, Input: "in", Kind: "user"}}, py.AliasedIO, name)

		m.Calls[0].Outputs[0].Name = name + "\x01"
		m.Calls[0].AliasedIO[0].Output = name + "\x01"
		_, err = Write(&buf, &Program{Methods: []*Method{m}}, nil)
		var e *Error
		require.ErrorAs(t, err, &e, name)
		assert.Equal(t, "forward", e.Method)
		assert.ErrorContains(t, err, "cannot encode the TensorRT blob")
	}
}

// TestBuiltProgramWrittenStrictly: a built program is written only when
// pte's verifier finds no error in it, so a defect in what the exporter
// builds is refused before the first byte rather than shipped as a file
// that fails to load. (Write and WriteFile both write through writeTo.)
func TestBuiltProgramWrittenStrictly(t *testing.T) {
	b, err := build(&Program{Methods: []*Method{chainMethod("forward", 1)}}, nil)
	require.NoError(t, err)
	defer b.close()
	ep := b.prog.Plan(0)
	ep.Values = append(ep.Values, &pte.EValue{}) // no value: ExecuTorch fails to load it
	var buf bytes.Buffer
	_, err = b.writeTo(&buf, false)
	var ve *pte.VerifyError
	require.ErrorAs(t, err, &ve)
	assert.Contains(t, err.Error(), `method "forward"`)
	assert.Zero(t, buf.Len(), "nothing is written")
}

// TestEngineFIFORefused: an engine path naming a FIFO is refused at once
// instead of blocking in open(2).
func TestEngineFIFORefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "engine.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	m := chainMethod("forward", 1)
	m.Calls[0].Engine = EngineFile(fifo)
	err := noBlock(t, fifo, func() error {
		_, err := Write(&bytes.Buffer{}, &Program{Methods: []*Method{m}}, nil)
		return err
	})
	assert.ErrorContains(t, err, "not a regular file (a named pipe)")
}

// blobFile writes an existing TensorRT blob whose bindings record dtype
// and shape (as this package writes them) and returns its path.
func blobFile(t *testing.T, meta *delegate.Metadata) string {
	t.Helper()
	sr, err := delegate.NewBlobReader(meta, strings.NewReader("engine"), 6)
	require.NoError(t, err)
	data := make([]byte, sr.Size())
	_, err = sr.ReadAt(data, 0)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "b.blob")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// TestBlobBindingTypesChecked: the dtype and shape a passed-through blob
// records for its bindings must agree with the method tensors; a blob that
// records none (as Torch-TensorRT writes it) is not checked.
func TestBlobBindingTypesChecked(t *testing.T) {
	typed := blobFile(t, &delegate.Metadata{IOBindings: []delegate.Binding{
		{Name: "in", DType: "float32", Shape: []int64{2, 2}, IsInput: true},
		{Name: "out", DType: "torch.float32", Shape: []int64{2, -1}},
	}})
	untyped := blobFile(t, &delegate.Metadata{IOBindings: []delegate.Binding{
		{Name: "in", Shape: []int64{}, IsInput: true}, {Name: "out", Shape: []int64{}},
	}})
	build := func(blob string, edit func(m *Method)) error {
		m := chainMethod("forward", 1)
		m.Calls[0].Engine = BlobFile(blob)
		edit(m)
		var buf bytes.Buffer
		_, err := Write(&buf, &Program{Methods: []*Method{m}}, nil)
		if err == nil {
			verifyClean(t, buf.Bytes())
		}
		return err
	}
	assert.NoError(t, build(typed, func(m *Method) {}))
	for _, c := range []struct {
		edit func(m *Method)
		msg  string
	}{
		{func(m *Method) { m.Inputs[0].DType = Int8 }, `input binding "in" disagrees with the blob: the blob records dtype float32, but the tensor is int8`},
		{func(m *Method) { m.Inputs[0].Shape = []int64{7, 3, 5} }, `input binding "in" disagrees with the blob: the blob records shape [2 2]`},
		{func(m *Method) { m.Calls[0].Outputs[0].DType = Bool }, `output binding "out" disagrees with the blob: the blob records dtype torch.float32, but the tensor is bool`},
		{func(m *Method) { m.Calls[0].Outputs[0].Shape = []int64{9} }, `output binding "out" disagrees with the blob: the blob records shape [2 -1]`},
		{func(m *Method) { m.Calls[0].Outputs[0].Shape = []int64{3, 2} }, `output binding "out" disagrees with the blob`},
	} {
		err := build(typed, c.edit)
		require.Error(t, err, c.msg)
		assert.Contains(t, err.Error(), c.msg)
		assert.Contains(t, err.Error(), "engine calls[0]")
		assert.NoError(t, build(untyped, c.edit), "no recorded types: %s", c.msg)
	}
}

// TestSegmentAlignmentCapped: alignments above MaxSegmentAlignment are
// refused by Write and Rebake; the cap itself is accepted.
func TestSegmentAlignmentCapped(t *testing.T) {
	p := &Program{Methods: []*Method{chainMethod("forward", 1)}}
	_, err := Write(&bytes.Buffer{}, p, &Options{SegmentAlignment: MaxSegmentAlignment + 1})
	assert.ErrorContains(t, err, "exceeds 1048576")
	var buf bytes.Buffer
	_, err = Write(&buf, p, &Options{SegmentAlignment: MaxSegmentAlignment})
	require.NoError(t, err)
	f := verifyClean(t, buf.Bytes())
	assert.Zero(t, f.Header.SegmentBaseOffset%MaxSegmentAlignment)
	_, err = Rebake("unused.pte", filepath.Join(t.TempDir(), "o.pte"), &RebakeOptions{WeightStreamingBudget: &compilespec.AutoBudget, SegmentAlignment: 1 << 30})
	assert.ErrorContains(t, err, "exceeds 1048576")
}

// TestInlineDelegateDataCapped: inline payloads above MaxInlineDelegateData
// are refused, with advice to use segments.
func TestInlineDelegateDataCapped(t *testing.T) {
	m := chainMethod("forward", 2)
	for i, n := range []int64{MaxInlineDelegateData / 2, MaxInlineDelegateData / 2} {
		m.Calls[i].Engine = EngineReader(funcReader{func(p []byte, off int64) (int, error) {
			for j := range p {
				p[j] = byte(i)
			}
			if off+int64(len(p)) >= n {
				return int(n - off), io.EOF
			}
			return len(p), nil
		}}, n)
	}
	p := &Program{Methods: []*Method{m}}
	_, err := Write(io.Discard, p, &Options{InlineDelegateData: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "store it in segments")
	assert.Contains(t, err.Error(), fmt.Sprint(MaxInlineDelegateData))
}
