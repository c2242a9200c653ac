package export

import (
	"cmp"
	"fmt"
	"github.com/ptekit/ptekit/internal/quote"
	"math"
	"slices"
	"strings"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/pte"
)

// maxRank is ExecuTorch's kTensorDimensionLimit.
const maxRank = 16

// tensorDef is a resolved method tensor.
type tensorDef struct {
	name     string
	dtype    DType
	scalar   pte.ScalarType
	shape    []int64 // as declared (-1 = dynamic)
	maxShape []int64 // nil when static
	sizes    []int32 // written sizes: the shape, or its upper bounds
	nbytes   int64
	value    int32
	produced int // -1 for a method input, else the producing call
	lastUse  int // last call reading it; len(calls) when alive to the end
	output   bool
	offset   int64 // arena offset, set by the planner
}

// callDef is a resolved engine call.
type callDef struct {
	index int
	// call is the engine call, nil once its blob is made (planMethods);
	// name is its Name, for errors.
	call     *EngineCall
	name     string
	inNames  []string // binding names, blob order
	outNames []string
	inputs   []*tensorDef
	outputs  []*tensorDef
	deviceID int64
}

// methodDef is a resolved method; resolveMethod builds it call by call.
type methodDef struct {
	m       *Method
	tensors []*tensorDef // value order
	// byName indexes tensors by name once the method has more than
	// scanTensors of them (see tensor); a map per method was most of
	// the resolved state of a program of many one-engine methods.
	byName  map[string]*tensorDef
	inputs  []*tensorDef
	outputs []*tensorDef
	calls   []*callDef
	arena   int64
}

// scanTensors is the number of tensors up to which a method's tensors
// are looked up by a scan of their names, not a map.
const scanTensors = 8

// tensor returns the tensor named name.
func (md *methodDef) tensor(name string) (*tensorDef, bool) {
	if md.byName != nil {
		t, ok := md.byName[name]
		return t, ok
	}
	for _, t := range md.tensors {
		if t.name == name {
			return t, true
		}
	}
	return nil, false
}

// add appends t to the method's tensors and indexes it.
func (md *methodDef) add(t *tensorDef) {
	md.tensors = append(md.tensors, t)
	switch {
	case md.byName != nil:
		md.byName[t.name] = t
	case len(md.tensors) > scanTensors:
		md.byName = make(map[string]*tensorDef, 2*len(md.tensors))
		for _, u := range md.tensors {
			md.byName[u.name] = u
		}
	}
}

// blobMeta is what an existing blob says about its bindings.
type blobMeta struct {
	inputs, outputs []delegate.Binding
	deviceID        int64
}

// maxDeviceIndex is the largest CUDA device index a program can name:
// ExecuTorch stores device indices as int8.
const maxDeviceIndex = compilespec.MaxDeviceIndex

// callError returns an Error about engine call ci of m (-1: none).
func callError(m *Method, ci int, tensor, msg string, err error) *Error {
	e := &Error{Method: m.Name, CallIndex: ci, Tensor: tensor, Msg: msg, Err: err}
	if ci >= 0 && ci < len(m.Calls) && m.Calls[ci] != nil {
		e.Call = m.Calls[ci].Name
	}
	return e
}

// err returns an Error about this call of method m, as callError does,
// without looking in m's calls (planMethods keeps only m's name).
func (cd *callDef) err(m *Method, tensor, msg string, err error) *Error {
	return &Error{Method: m.Name, CallIndex: cd.index, Call: cd.name, Tensor: tensor, Msg: msg, Err: err}
}

// resolve validates p and returns its resolved methods. blobs gives the
// metadata of calls whose source is an existing blob.
func resolve(p *Program, blobs map[*EngineCall]*blobMeta) ([]*methodDef, error) {
	if p == nil || len(p.Methods) == 0 {
		return nil, newError("", "", "the program has no methods", nil)
	}
	seen := make(map[string]bool, len(p.Methods))
	out := make([]*methodDef, 0, len(p.Methods))
	for i, m := range p.Methods {
		if m == nil {
			return nil, newError("", "", fmt.Sprintf("methods[%d] is nil", i), nil)
		}
		if err := checkName(m.Name); err != nil {
			return nil, newError("", "", fmt.Sprintf("methods[%d] name %s %v", i, quote.String(m.Name), err), nil)
		}
		if seen[m.Name] {
			return nil, newError(m.Name, "", "method name is used twice", nil)
		}
		seen[m.Name] = true
		md, err := resolveMethod(m, blobs)
		if err != nil {
			return nil, err
		}
		out = append(out, md)
	}
	return out, nil
}

func checkName(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("is empty")
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("contains a NUL byte")
	}
	return nil
}

func resolveMethod(m *Method, blobs map[*EngineCall]*blobMeta) (*methodDef, error) {
	md := &methodDef{m: m}
	for i, in := range m.Inputs {
		if in == nil {
			return nil, md.fail(-1, "", "inputs[%d] is nil", i)
		}
		t, err := md.declare(-1, in.Name, in.DType, in.Shape, in.MaxShape)
		if err != nil {
			return nil, err
		}
		md.inputs = append(md.inputs, t)
	}
	for i, c := range m.Calls {
		if err := md.resolveCall(i, c, blobs[c]); err != nil {
			return nil, err
		}
	}
	if err := md.resolveOutputs(); err != nil {
		return nil, err
	}
	end := len(md.calls)
	for _, t := range md.tensors {
		if t.produced < 0 || t.output {
			t.lastUse = end
		}
	}
	return md, nil
}

func (md *methodDef) fail(call int, tensor, format string, args ...any) error {
	return callError(md.m, call, tensor, fmt.Sprintf(format, args...), nil)
}

// firstProducers returns, for each tensor the calls of m produce, the
// index of the first call producing it.
func firstProducers(m *Method) map[string]int {
	producedBy := map[string]int{}
	for i, c := range m.Calls {
		if c == nil {
			continue
		}
		for _, b := range c.Outputs {
			if b == nil {
				continue
			}
			name := b.Tensor
			if name == "" {
				name = b.Name
			}
			if _, ok := producedBy[name]; !ok {
				producedBy[name] = i
			}
		}
	}
	return producedBy
}

// declare registers a tensor produced by call (-1 for a method input).
func (md *methodDef) declare(call int, name string, dt DType, shape, maxShape []int64) (*tensorDef, error) {
	m := md.m
	if err := checkName(name); err != nil {
		return nil, md.fail(call, name, "tensor name %v", err)
	}
	if prev, ok := md.tensor(name); ok {
		if prev.produced < 0 {
			return nil, md.fail(call, name, "tensor is declared twice (it is already a method input)")
		}
		return nil, md.fail(call, name, "tensor is declared twice (already produced by %s)", callLabel(prev.produced, m.Calls[prev.produced].Name))
	}
	if dt == "" {
		return nil, md.fail(call, name, "dtype is missing")
	}
	scalar, err := dt.ScalarType()
	if err != nil {
		return nil, callError(m, call, name, "bad dtype", err)
	}
	if shape == nil {
		return nil, md.fail(call, name, "shape is missing (use [] for a scalar)")
	}
	sizes, err := upperSizes(shape, maxShape)
	if err != nil {
		return nil, callError(m, call, name, "bad shape", err)
	}
	nbytes := dt.Size()
	for _, s := range sizes {
		if s != 0 && nbytes > math.MaxInt64/int64(s) {
			return nil, md.fail(call, name, "tensor byte size overflows int64")
		}
		nbytes *= int64(s)
	}
	// The shapes are the method's own, only read while the export runs:
	// cloning them was two allocations per tensor.
	t := &tensorDef{name: name, dtype: dt, scalar: scalar, shape: shape,
		maxShape: maxShape, sizes: sizes, nbytes: nbytes,
		value: int32(len(md.tensors)), produced: call, lastUse: call}
	md.add(t)
	return t, nil
}

// resolveCall checks engine call i and binds its inputs to known tensors
// and its outputs to new ones; meta is the blob's metadata for a blob
// source, else nil.
func (md *methodDef) resolveCall(i int, c *EngineCall, meta *blobMeta) error {
	if c == nil {
		return md.fail(i, "", "engine call is nil")
	}
	cd := &callDef{index: i, call: c, name: c.Name, deviceID: int64(c.DeviceID)}
	md.calls = append(md.calls, cd)
	if err := md.checkDevice(cd, meta); err != nil {
		return err
	}
	seen := map[string]bindingRef{}
	for j, b := range c.Inputs {
		if err := md.bindInput(cd, meta, seen, j, b); err != nil {
			return err
		}
	}
	for j, b := range c.Outputs {
		if err := md.bindOutput(cd, meta, seen, j, b); err != nil {
			return err
		}
	}
	if len(cd.inputs)+len(cd.outputs) == 0 {
		return md.fail(i, "", "engine call has no bindings")
	}
	return checkAliases(md, cd)
}

// checkDevice checks the call's device and, for a blob source, that the
// call leaves what the blob states to the blob.
func (md *methodDef) checkDevice(cd *callDef, meta *blobMeta) error {
	i, c := cd.index, cd.call
	if c.Engine.Kind != SourceBlob {
		if c.DeviceID < 0 || c.DeviceID > maxDeviceIndex {
			return md.fail(i, "", "device_id %d is outside [0, %d] (ExecuTorch stores device indices as int8)", c.DeviceID, maxDeviceIndex)
		}
		return nil
	}
	if meta == nil {
		return md.fail(i, "", "blob metadata was not read")
	}
	if c.DeviceID != 0 || c.HardwareCompatible || len(c.AliasedIO) > 0 ||
		c.SerializedMetadata != "" || c.TargetPlatform != "" {
		return md.fail(i, "", "device_id, hardware_compatible, aliased_io, serialized_metadata and target_platform come from the blob and must not be set for a blob source")
	}
	if len(c.Inputs) != len(meta.inputs) || len(c.Outputs) != len(meta.outputs) {
		return md.fail(i, "", "the call binds %d inputs and %d outputs but the blob has %d and %d",
			len(c.Inputs), len(c.Outputs), len(meta.inputs), len(meta.outputs))
	}
	cd.deviceID = meta.deviceID
	if cd.deviceID < 0 || cd.deviceID > maxDeviceIndex {
		return md.fail(i, "", "the blob's device_id %d is outside [0, %d] (ExecuTorch stores device indices as int8, so target_device cuda:%d cannot be written)",
			cd.deviceID, maxDeviceIndex, cd.deviceID)
	}
	return nil
}

// bindingName returns the engine binding name of inputs[j] or outputs[j]
// (the blob's when the call leaves it out), refusing one used twice in the
// call (seen).
func (md *methodDef) bindingName(cd *callDef, meta *blobMeta, seen map[string]bindingRef, b *Binding, j int, input bool) (string, error) {
	i := cd.index
	kind := "outputs"
	if input {
		kind = "inputs"
	}
	if b == nil {
		return "", md.fail(i, "", "%s[%d] is nil", kind, j)
	}
	name := b.Name
	if meta != nil {
		want := meta.outputs[j].Name
		if input {
			want = meta.inputs[j].Name
		}
		if name == "" {
			name = want
		} else if name != want {
			return "", md.fail(i, "", "%s[%d] binding %s does not match the blob's binding %s", kind, j, quote.String(name), quote.String(want))
		}
	}
	if name == "" {
		return "", md.fail(i, b.Tensor, "%s[%d] binding name is empty", kind, j)
	}
	if prev, ok := seen[name]; ok {
		return "", md.fail(i, "", "binding name %s is used twice (%s and %s[%d])", quote.String(name), prev, kind, j)
	}
	seen[name] = bindingRef{input, j}
	return name, nil
}

// bindingRef is where a call uses a binding name: its inputs[j] or
// outputs[j]. It is formatted only for an error.
type bindingRef struct {
	input bool
	j     int
}

func (b bindingRef) String() string {
	if b.input {
		return fmt.Sprintf("inputs[%d]", b.j)
	}
	return fmt.Sprintf("outputs[%d]", b.j)
}

// bindInput binds the call's inputs[j] to the tensor it consumes.
func (md *methodDef) bindInput(cd *callDef, meta *blobMeta, seen map[string]bindingRef, j int, b *Binding) error {
	i, m := cd.index, md.m
	bname, err := md.bindingName(cd, meta, seen, b, j, true)
	if err != nil {
		return err
	}
	tname := cmp.Or(b.Tensor, bname)
	t, ok := md.tensor(tname)
	if !ok {
		// Made only for the error: which call produces it, to tell
		// "consumed before produced" from "unknown".
		if p, later := firstProducers(m)[tname]; later && p >= i {
			return md.fail(i, tname, "input binding %s consumes the tensor before it is produced (by %s)", quote.String(bname), callLabel(p, m.Calls[p].Name))
		}
		return md.fail(i, tname, "input binding %s names an unknown tensor", quote.String(bname))
	}
	if err := checkConsumer(t, b.DType, b.Shape, b.MaxShape); err != nil {
		return cd.err(m, tname, fmt.Sprintf("input binding %s disagrees with the producer", quote.String(bname)), err)
	}
	if meta != nil {
		if err := checkBlobBinding(t, meta.inputs[j]); err != nil {
			return cd.err(m, tname, fmt.Sprintf("input binding %s disagrees with the blob", quote.String(bname)), err)
		}
	}
	t.lastUse = i
	cd.inNames = append(cd.inNames, bname)
	cd.inputs = append(cd.inputs, t)
	return nil
}

// bindOutput declares the tensor the call's outputs[j] produces.
func (md *methodDef) bindOutput(cd *callDef, meta *blobMeta, seen map[string]bindingRef, j int, b *Binding) error {
	bname, err := md.bindingName(cd, meta, seen, b, j, false)
	if err != nil {
		return err
	}
	tname := cmp.Or(b.Tensor, bname)
	t, err := md.declare(cd.index, tname, b.DType, b.Shape, b.MaxShape)
	if err != nil {
		return err
	}
	if meta != nil {
		if err := checkBlobBinding(t, meta.outputs[j]); err != nil {
			return cd.err(md.m, tname, fmt.Sprintf("output binding %s disagrees with the blob", quote.String(bname)), err)
		}
	}
	cd.outNames = append(cd.outNames, bname)
	cd.outputs = append(cd.outputs, t)
	return nil
}

// resolveOutputs binds the method's outputs to the tensors producing them.
func (md *methodDef) resolveOutputs() error {
	for i, o := range md.m.Outputs {
		if o == nil {
			return md.fail(-1, "", "outputs[%d] is nil", i)
		}
		t, ok := md.tensor(o.Name)
		if !ok {
			return md.fail(-1, o.Name, "method output is not produced by any engine call or method input")
		}
		if t.output {
			return md.fail(-1, o.Name, "method output is listed twice")
		}
		if err := checkConsumer(t, o.DType, o.Shape, o.MaxShape); err != nil {
			return callError(md.m, -1, o.Name, "method output disagrees with its producer", err)
		}
		t.output = true
		md.outputs = append(md.outputs, t)
	}
	return nil
}

// checkAliases validates the aliased_io of an engine call.
func checkAliases(md *methodDef, cd *callDef) error {
	outs := map[string]bool{}
	for k, a := range cd.call.AliasedIO {
		fail := func(format string, args ...any) error {
			return cd.err(md.m, "", fmt.Sprintf("aliased_io[%d]: ", k)+fmt.Sprintf(format, args...), nil)
		}
		oi := slices.Index(cd.outNames, a.Output)
		ii := slices.Index(cd.inNames, a.Input)
		switch {
		case oi < 0:
			return fail("output %s is not an output binding of this engine", quote.String(a.Output))
		case ii < 0:
			return fail("input %s is not an input binding of this engine", quote.String(a.Input))
		case a.Kind != "kv_cache_update" && a.Kind != "user":
			return fail("kind %s is neither \"kv_cache_update\" nor \"user\"", quote.String(a.Kind))
		case outs[a.Output]:
			return fail("output %s is aliased twice", quote.String(a.Output))
		}
		outs[a.Output] = true
		o, in := cd.outputs[oi], cd.inputs[ii]
		if o.dtype != in.dtype || !slices.Equal(o.sizes, in.sizes) {
			return fail("output %s (%s %v) and input %s (%s %v) differ in dtype or shape",
				quote.String(a.Output), o.dtype, o.sizes, quote.String(a.Input), in.dtype, in.sizes)
		}
	}
	return nil
}

// upperSizes checks a declared shape and returns the sizes written to the
// program: the static shape, or the upper bounds of a dynamic one.
func upperSizes(shape, maxShape []int64) ([]int32, error) {
	if len(shape) > maxRank {
		return nil, fmt.Errorf("rank %d exceeds ExecuTorch's limit of %d", len(shape), maxRank)
	}
	if maxShape != nil && len(maxShape) != len(shape) {
		return nil, fmt.Errorf("max_shape %v has rank %d but shape %v has rank %d", maxShape, len(maxShape), shape, len(shape))
	}
	sizes := make([]int32, len(shape))
	for d, s := range shape {
		switch {
		case s == -1 && maxShape == nil:
			return nil, fmt.Errorf("dimension %d of %v is dynamic (-1) but no max_shape gives its upper bound", d, shape)
		case s < -1:
			return nil, fmt.Errorf("dimension %d of %v is negative", d, shape)
		case s > math.MaxInt32:
			return nil, fmt.Errorf("dimension %d of %v exceeds 2^31-1", d, shape)
		}
		u := s
		if maxShape != nil {
			u = maxShape[d]
			if u < 0 || u > math.MaxInt32 {
				return nil, fmt.Errorf("max_shape dimension %d (%d) is outside [0, 2^31-1]", d, u)
			}
			if s >= 0 && u != s {
				return nil, fmt.Errorf("max_shape dimension %d (%d) differs from the static dimension %d of %v; write -1 in shape to make the dimension dynamic", d, u, s, shape)
			}
		}
		sizes[d] = int32(u)
	}
	return sizes, nil
}

// checkConsumer checks a consumer's optional dtype and shape against the
// producer's declaration.
func checkConsumer(t *tensorDef, dt DType, shape, maxShape []int64) error {
	if dt != "" && dt != t.dtype {
		return fmt.Errorf("dtype %s, but the tensor is %s", dt, t.dtype)
	}
	if shape == nil && maxShape == nil {
		return nil
	}
	if shape == nil {
		shape = t.shape
	}
	if len(shape) != len(t.shape) {
		return fmt.Errorf("shape %v has rank %d, but the tensor's shape %v has rank %d", shape, len(shape), t.shape, len(t.shape))
	}
	if maxShape != nil && len(maxShape) != len(shape) {
		return fmt.Errorf("max_shape %v does not have the rank of shape %v", maxShape, shape)
	}
	for d := range shape {
		c, p := shape[d], t.shape[d]
		switch {
		case c >= 0 && p >= 0 && c != p:
			return fmt.Errorf("shape %v, but the tensor's shape is %v (dimension %d)", shape, t.shape, d)
		case c >= 0 && p < 0:
			return fmt.Errorf("shape %v is fixed in dimension %d, but the tensor's shape %v is dynamic there", shape, d, t.shape)
		case c >= 0 && maxShape != nil && maxShape[d] != c:
			return fmt.Errorf("max_shape %v differs from the static dimension %d of shape %v", maxShape, d, shape)
		case c < 0 && maxShape != nil && int64(t.sizes[d]) > maxShape[d]:
			return fmt.Errorf("accepts at most %d in dimension %d, but the tensor can be %d", maxShape[d], d, t.sizes[d])
		}
	}
	return nil
}

// checkBlobBinding checks the dtype and shape an existing blob records for
// a binding against the method tensor bound to it. Torch-TensorRT's
// exporter records neither (dtype "" and shape []), and then there is
// nothing to check; neither is a dtype spelled in a way this package does
// not know (the runtime never reads it). A "torch." prefix is accepted.
func checkBlobBinding(t *tensorDef, b delegate.Binding) error {
	if b.DType != "" {
		dt := DType(strings.TrimPrefix(b.DType, "torch."))
		if _, err := dt.ScalarType(); err == nil && dt != t.dtype {
			return fmt.Errorf("the blob records dtype %s, but the tensor is %s", b.DType, t.dtype)
		}
	}
	if len(b.Shape) > 0 {
		if err := checkConsumer(t, "", b.Shape, nil); err != nil {
			return fmt.Errorf("the blob records shape %v: %w", b.Shape, err)
		}
	}
	return nil
}
