package export

import (
	"fmt"
	"math"
	"slices"
	"strings"

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
	index    int
	label    string
	call     *EngineCall
	inNames  []string // binding names, blob order
	outNames []string
	inputs   []*tensorDef
	outputs  []*tensorDef
	deviceID int64
}

// methodDef is a resolved method.
type methodDef struct {
	m       *Method
	tensors []*tensorDef // value order
	byName  map[string]*tensorDef
	inputs  []*tensorDef
	outputs []*tensorDef
	calls   []*callDef
	arena   int64
}

// blobMeta is what an existing blob says about its bindings.
type blobMeta struct {
	inputs, outputs []string
	deviceID        int64
}

func callLabel(i int, c *EngineCall) string {
	if c != nil && c.Name != "" {
		return fmt.Sprintf("calls[%d] (%q)", i, c.Name)
	}
	return fmt.Sprintf("calls[%d]", i)
}

// resolve validates p and returns its resolved methods. blobs gives the
// metadata of calls whose source is an existing blob.
func resolve(p *Program, blobs map[*EngineCall]*blobMeta) ([]*methodDef, error) {
	if p == nil || len(p.Methods) == 0 {
		return nil, &Error{Msg: "the program has no methods"}
	}
	seen := map[string]bool{}
	var out []*methodDef
	for i, m := range p.Methods {
		if m == nil {
			return nil, &Error{Msg: fmt.Sprintf("methods[%d] is nil", i)}
		}
		if err := checkName(m.Name); err != nil {
			return nil, &Error{Msg: fmt.Sprintf("methods[%d] name %q %v", i, m.Name, err)}
		}
		if seen[m.Name] {
			return nil, &Error{Method: m.Name, Msg: "method name is used twice"}
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
	md := &methodDef{m: m, byName: map[string]*tensorDef{}}
	fail := func(call, tensor, format string, args ...any) error {
		return &Error{Method: m.Name, Call: call, Tensor: tensor, Msg: fmt.Sprintf(format, args...)}
	}
	// declare registers a produced tensor.
	declare := func(call string, name string, dt DType, shape, maxShape []int64, producer int) (*tensorDef, error) {
		if err := checkName(name); err != nil {
			return nil, fail(call, name, "tensor name %v", err)
		}
		if prev, ok := md.byName[name]; ok {
			if prev.produced < 0 {
				return nil, fail(call, name, "tensor is declared twice (it is already a method input)")
			}
			return nil, fail(call, name, "tensor is declared twice (already produced by %s)", md.calls[prev.produced].label)
		}
		if dt == "" {
			return nil, fail(call, name, "dtype is missing")
		}
		scalar, err := dt.ScalarType()
		if err != nil {
			return nil, &Error{Method: m.Name, Call: call, Tensor: name, Msg: "bad dtype", Err: err}
		}
		if shape == nil {
			return nil, fail(call, name, "shape is missing (use [] for a scalar)")
		}
		sizes, err := upperSizes(shape, maxShape)
		if err != nil {
			return nil, &Error{Method: m.Name, Call: call, Tensor: name, Msg: "bad shape", Err: err}
		}
		nbytes := dt.Size()
		for _, s := range sizes {
			if s != 0 && nbytes > math.MaxInt64/int64(s) {
				return nil, fail(call, name, "tensor byte size overflows int64")
			}
			nbytes *= int64(s)
		}
		t := &tensorDef{name: name, dtype: dt, scalar: scalar, shape: slices.Clone(shape),
			maxShape: slices.Clone(maxShape), sizes: sizes, nbytes: nbytes,
			value: int32(len(md.tensors)), produced: producer, lastUse: producer}
		md.tensors = append(md.tensors, t)
		md.byName[name] = t
		return t, nil
	}

	for i, in := range m.Inputs {
		if in == nil {
			return nil, fail("", "", "inputs[%d] is nil", i)
		}
		t, err := declare("", in.Name, in.DType, in.Shape, in.MaxShape, -1)
		if err != nil {
			return nil, err
		}
		md.inputs = append(md.inputs, t)
	}

	// Names produced later, to tell "consumed before produced" from "unknown".
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

	for i, c := range m.Calls {
		label := callLabel(i, c)
		if c == nil {
			return nil, fail(label, "", "engine call is nil")
		}
		cd := &callDef{index: i, label: label, call: c, deviceID: int64(c.DeviceID)}
		md.calls = append(md.calls, cd)
		meta := blobs[c]
		if c.Engine.Kind == SourceBlob {
			if meta == nil {
				return nil, fail(label, "", "blob metadata was not read")
			}
			if c.DeviceID != 0 || c.HardwareCompatible || len(c.AliasedIO) > 0 ||
				c.SerializedMetadata != "" || c.TargetPlatform != "" {
				return nil, fail(label, "", "device_id, hardware_compatible, aliased_io, serialized_metadata and target_platform come from the blob and must not be set for a blob source")
			}
			if len(c.Inputs) != len(meta.inputs) || len(c.Outputs) != len(meta.outputs) {
				return nil, fail(label, "", "the call binds %d inputs and %d outputs but the blob has %d and %d",
					len(c.Inputs), len(c.Outputs), len(meta.inputs), len(meta.outputs))
			}
			cd.deviceID = meta.deviceID
		} else if c.DeviceID < 0 {
			return nil, fail(label, "", "device_id %d is negative", c.DeviceID)
		}
		bindingSeen := map[string]string{}
		bindName := func(b *Binding, j int, input bool) (string, error) {
			kind := "outputs"
			if input {
				kind = "inputs"
			}
			if b == nil {
				return "", fail(label, "", "%s[%d] is nil", kind, j)
			}
			name := b.Name
			if meta != nil {
				want := meta.outputs
				if input {
					want = meta.inputs
				}
				if name == "" {
					name = want[j]
				} else if name != want[j] {
					return "", fail(label, "", "%s[%d] binding %q does not match the blob's binding %q", kind, j, name, want[j])
				}
			}
			if name == "" {
				return "", fail(label, b.Tensor, "%s[%d] binding name is empty", kind, j)
			}
			if prev, ok := bindingSeen[name]; ok {
				return "", fail(label, "", "binding name %q is used twice (%s and %s[%d])", name, prev, kind, j)
			}
			bindingSeen[name] = fmt.Sprintf("%s[%d]", kind, j)
			return name, nil
		}
		for j, b := range c.Inputs {
			bname, err := bindName(b, j, true)
			if err != nil {
				return nil, err
			}
			tname := b.Tensor
			if tname == "" {
				tname = bname
			}
			t, ok := md.byName[tname]
			if !ok {
				if p, later := producedBy[tname]; later && p >= i {
					return nil, fail(label, tname, "input binding %q consumes the tensor before it is produced (by %s)", bname, callLabel(p, m.Calls[p]))
				}
				return nil, fail(label, tname, "input binding %q names an unknown tensor", bname)
			}
			if err := checkConsumer(t, b.DType, b.Shape, b.MaxShape); err != nil {
				return nil, &Error{Method: m.Name, Call: label, Tensor: tname,
					Msg: fmt.Sprintf("input binding %q disagrees with the producer", bname), Err: err}
			}
			t.lastUse = i
			cd.inNames = append(cd.inNames, bname)
			cd.inputs = append(cd.inputs, t)
		}
		for j, b := range c.Outputs {
			bname, err := bindName(b, j, false)
			if err != nil {
				return nil, err
			}
			tname := b.Tensor
			if tname == "" {
				tname = bname
			}
			t, err := declare(label, tname, b.DType, b.Shape, b.MaxShape, i)
			if err != nil {
				return nil, err
			}
			cd.outNames = append(cd.outNames, bname)
			cd.outputs = append(cd.outputs, t)
		}
		if len(cd.inputs)+len(cd.outputs) == 0 {
			return nil, fail(label, "", "engine call has no bindings")
		}
		if err := checkAliases(md, cd); err != nil {
			return nil, err
		}
	}

	for i, o := range m.Outputs {
		if o == nil {
			return nil, fail("", "", "outputs[%d] is nil", i)
		}
		t, ok := md.byName[o.Name]
		if !ok {
			return nil, fail("", o.Name, "method output is not produced by any engine call or method input")
		}
		if t.output {
			return nil, fail("", o.Name, "method output is listed twice")
		}
		if err := checkConsumer(t, o.DType, o.Shape, o.MaxShape); err != nil {
			return nil, &Error{Method: m.Name, Tensor: o.Name, Msg: "method output disagrees with its producer", Err: err}
		}
		t.output = true
		md.outputs = append(md.outputs, t)
	}
	end := len(md.calls)
	for _, t := range md.tensors {
		if t.produced < 0 || t.output {
			t.lastUse = end
		}
	}
	return md, nil
}

// checkAliases validates the aliased_io of an engine call.
func checkAliases(md *methodDef, cd *callDef) error {
	outs := map[string]bool{}
	for k, a := range cd.call.AliasedIO {
		fail := func(format string, args ...any) error {
			return &Error{Method: md.m.Name, Call: cd.label,
				Msg: fmt.Sprintf("aliased_io[%d]: ", k) + fmt.Sprintf(format, args...)}
		}
		oi := slices.Index(cd.outNames, a.Output)
		ii := slices.Index(cd.inNames, a.Input)
		switch {
		case oi < 0:
			return fail("output %q is not an output binding of this engine", a.Output)
		case ii < 0:
			return fail("input %q is not an input binding of this engine", a.Input)
		case a.Kind != "kv_cache_update" && a.Kind != "user":
			return fail("kind %q is neither \"kv_cache_update\" nor \"user\"", a.Kind)
		case outs[a.Output]:
			return fail("output %q is aliased twice", a.Output)
		}
		outs[a.Output] = true
		o, in := cd.outputs[oi], cd.inputs[ii]
		if o.dtype != in.dtype || !slices.Equal(o.sizes, in.sizes) {
			return fail("output %q (%s %v) and input %q (%s %v) differ in dtype or shape",
				a.Output, o.dtype, o.sizes, a.Input, in.dtype, in.sizes)
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
			if s >= 0 && u < s {
				return nil, fmt.Errorf("max_shape dimension %d (%d) is below the shape's %d", d, u, s)
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
		case c < 0 && maxShape != nil && int64(t.sizes[d]) > maxShape[d]:
			return fmt.Errorf("accepts at most %d in dimension %d, but the tensor can be %d", maxShape[d], d, t.sizes[d])
		}
	}
	return nil
}
