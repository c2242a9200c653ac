package export

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The subset of vectors/pte NAME.input.json the tests read.
type vecInput struct {
	Program struct {
		ExecutionPlan []struct {
			Name   string `json:"name"`
			Values []struct {
				ValType string `json:"val_type"`
				Val     struct {
					ScalarType    string  `json:"scalar_type"`
					Sizes         []int64 `json:"sizes"`
					ShapeDynamism string  `json:"shape_dynamism"`
				} `json:"val"`
			} `json:"values"`
			Inputs  []int32 `json:"inputs"`
			Outputs []int32 `json:"outputs"`
			Chains  []struct {
				Instructions []struct {
					Type string `json:"instr_args_type"`
					Args struct {
						DelegateIndex int     `json:"delegate_index"`
						Args          []int32 `json:"args"`
					} `json:"instr_args"`
				} `json:"instructions"`
			} `json:"chains"`
			Delegates []struct {
				ID        string `json:"id"`
				Processed struct {
					Index int `json:"index"`
				} `json:"processed"`
				CompileSpecs []struct {
					Key   string `json:"key"`
					Value struct {
						UTF8 string `json:"utf8"`
					} `json:"value"`
				} `json:"compile_specs"`
			} `json:"delegates"`
		} `json:"execution_plan"`
	} `json:"program"`
	SerializeOptions struct {
		ExtractDelegateSegments bool   `json:"extract_delegate_segments"`
		SegmentAlignment        uint64 `json:"segment_alignment"`
	} `json:"serialize_options"`
	TRTBlobs []struct {
		Index       int `json:"backend_delegate_data_index"`
		Description struct {
			EngineHex string `json:"engine_hex"`
			Metadata  struct {
				IOBindings []struct {
					Name    string `json:"name"`
					IsInput bool   `json:"is_input"`
				} `json:"io_bindings"`
				AliasedIO          []AliasedIO `json:"aliased_io"`
				HardwareCompatible bool        `json:"hardware_compatible"`
				DeviceID           int         `json:"device_id"`
				SerializedMetadata string      `json:"serialized_metadata"`
				TargetPlatform     string      `json:"target_platform"`
			} `json:"metadata"`
		} `json:"description"`
	} `json:"trt_blobs"`
}

var scalarToDType = map[string]DType{
	"FLOAT": Float32, "HALF": Float16, "LONG": Int64, "INT": Int32, "BYTE": Uint8, "BOOL": Bool,
	"DOUBLE": Float64, "CHAR": Int8, "SHORT": Int16, "BFLOAT16": BFloat16,
}

// programFromVector rebuilds the description of an upstream-written
// program: one engine call per DelegateCall, bindings from the blob's
// metadata (the call's args are its inputs, then its outputs, in binding
// order), tensors from the values. When the exporter cannot describe the
// program (kernel calls, specs it does not write, values that are not
// tensors, ...), it returns a non-empty reason instead.
func programFromVector(t *testing.T, in *vecInput) (*Program, *Options, string) {
	t.Helper()
	opts := &Options{
		InlineDelegateData: !in.SerializeOptions.ExtractDelegateSegments,
		SegmentAlignment:   in.SerializeOptions.SegmentAlignment,
	}
	blobs := map[int]int{}
	for i, b := range in.TRTBlobs {
		blobs[b.Index] = i
	}
	p := &Program{}
	device := ""
	withBudget, withoutBudget := 0, 0
	for _, ep := range in.Program.ExecutionPlan {
		if v := unusedValue(ep.Inputs, ep.Outputs, len(ep.Values), func(yield func(int32) bool) {
			for _, c := range ep.Chains {
				for _, ins := range c.Instructions {
					for _, a := range ins.Args.Args {
						if !yield(a) {
							return
						}
					}
				}
			}
		}); v >= 0 {
			// The exporter writes only the values its calls use (an unused
			// constant tensor, say, is not written).
			return nil, nil, fmt.Sprintf("method %s: value %d is used by no instruction, input or output", ep.Name, v)
		}
		m := &Method{Name: ep.Name}
		tensor := func(v int32) (*Tensor, string) {
			if v < 0 || int(v) >= len(ep.Values) {
				return nil, fmt.Sprintf("value %d out of range", v)
			}
			val := ep.Values[v]
			if val.ValType != "Tensor" {
				return nil, fmt.Sprintf("value %d is a %s, not a Tensor", v, val.ValType)
			}
			dt, ok := scalarToDType[val.Val.ScalarType]
			if !ok {
				return nil, "scalar type " + val.Val.ScalarType
			}
			tn := &Tensor{Name: fmt.Sprintf("v%d", v), DType: dt, Shape: val.Val.Sizes}
			switch val.Val.ShapeDynamism {
			case "", "STATIC":
			case "DYNAMIC_BOUND":
				tn.MaxShape = val.Val.Sizes
			default:
				return nil, fmt.Sprintf("value %d has shape dynamism %s", v, val.Val.ShapeDynamism)
			}
			return tn, ""
		}
		for _, v := range ep.Inputs {
			tn, why := tensor(v)
			if why != "" {
				return nil, nil, "input: " + why
			}
			m.Inputs = append(m.Inputs, tn)
		}
		for _, v := range ep.Outputs {
			tn, why := tensor(v)
			if why != "" {
				return nil, nil, "output: " + why
			}
			m.Outputs = append(m.Outputs, &Tensor{Name: tn.Name})
		}
		if len(ep.Chains) != 1 {
			return nil, nil, fmt.Sprintf("%d chains", len(ep.Chains))
		}
		for _, ins := range ep.Chains[0].Instructions {
			if ins.Type != "DelegateCall" {
				return nil, nil, "a " + ins.Type + " instruction"
			}
			if ins.Args.DelegateIndex < 0 || ins.Args.DelegateIndex >= len(ep.Delegates) {
				return nil, nil, "delegate index out of range"
			}
			d := ep.Delegates[ins.Args.DelegateIndex]
			if d.ID != "TensorRTBackend" {
				return nil, nil, fmt.Sprintf("a %q delegate", d.ID)
			}
			bi, ok := blobs[d.Processed.Index]
			if !ok {
				return nil, nil, fmt.Sprintf("no blob description for backend_delegate_data[%d]", d.Processed.Index)
			}
			blob := in.TRTBlobs[bi].Description
			engine, err := hex.DecodeString(blob.EngineHex)
			if err != nil || len(engine) == 0 {
				return nil, nil, "no engine bytes in the blob description"
			}
			// The exporter writes [weight_streaming_budget,] target_device.
			keys := []string{}
			for _, cs := range d.CompileSpecs {
				keys = append(keys, cs.Key)
				switch cs.Key {
				case "weight_streaming_budget":
					b, err := compilespec.ParseBudgetSpec([]byte(cs.Value.UTF8))
					if err != nil {
						return nil, nil, fmt.Sprintf("budget %q: %v", cs.Value.UTF8, err)
					}
					if string(b.Spec()) != cs.Value.UTF8 {
						return nil, nil, fmt.Sprintf("budget %q is not written canonically", cs.Value.UTF8)
					}
					if opts.WeightStreamingBudget.IsAuto() {
						opts.WeightStreamingBudget = b
					}
				case "target_device":
					if cs.Value.UTF8 != fmt.Sprintf("cuda:%d", blob.Metadata.DeviceID) {
						if device != "" && device != cs.Value.UTF8 {
							return nil, nil, "pinned target devices differ"
						}
						device = cs.Value.UTF8
					}
				}
			}
			switch k := strings.Join(keys, ","); k {
			case "weight_streaming_budget,target_device":
				withBudget++
			case "target_device":
				withoutBudget++
			default:
				return nil, nil, "compile specs " + k
			}
			if withBudget > 0 && withoutBudget > 0 {
				// The exporter gives every engine the same budget; an absent
				// key is a budget of its own (the engine's default).
				return nil, nil, "only some delegates carry a weight_streaming_budget"
			}
			call := &EngineCall{
				Engine:             EngineReader(bytes.NewReader(engine), int64(len(engine))),
				DeviceID:           blob.Metadata.DeviceID,
				HardwareCompatible: blob.Metadata.HardwareCompatible,
				AliasedIO:          blob.Metadata.AliasedIO,
				SerializedMetadata: blob.Metadata.SerializedMetadata,
				TargetPlatform:     blob.Metadata.TargetPlatform,
			}
			nIn := 0
			for _, b := range blob.Metadata.IOBindings {
				if b.IsInput {
					nIn++
				}
			}
			if len(ins.Args.Args) != len(blob.Metadata.IOBindings) {
				return nil, nil, fmt.Sprintf("%d args for %d bindings", len(ins.Args.Args), len(blob.Metadata.IOBindings))
			}
			ki, ko := 0, nIn
			for _, b := range blob.Metadata.IOBindings {
				arg := &ko
				if b.IsInput {
					arg = &ki
				}
				tn, why := tensor(ins.Args.Args[*arg])
				if why != "" {
					return nil, nil, "engine binding " + b.Name + ": " + why
				}
				*arg++
				if b.IsInput {
					call.Inputs = append(call.Inputs, &Binding{Name: b.Name, Tensor: tn.Name})
				} else {
					call.Outputs = append(call.Outputs, &Binding{Name: b.Name, Tensor: tn.Name, DType: tn.DType, Shape: tn.Shape, MaxShape: tn.MaxShape})
				}
			}
			m.Calls = append(m.Calls, call)
		}
		p.Methods = append(p.Methods, m)
	}
	if device != "" {
		opts.TargetDevice = device
	}
	return p, opts, ""
}

// unusedValue returns the first of n values that is neither an input, an
// output nor an argument of an instruction (args yields those), or -1.
func unusedValue(inputs, outputs []int32, n int, args func(yield func(int32) bool)) int {
	used := make([]bool, n)
	mark := func(v int32) bool {
		if v >= 0 && int(v) < n {
			used[v] = true
		}
		return true
	}
	for _, v := range inputs {
		mark(v)
	}
	for _, v := range outputs {
		mark(v)
	}
	args(mark)
	for v, u := range used {
		if !u {
			return v
		}
	}
	return -1
}

// checkPlan checks that the memory plan of every method of f is valid
// (the exporter need not plan as upstream does): every planned tensor lies
// within its arena at a 16-byte aligned offset, and no two tensors that
// are live at the same time (a method input throughout, a method output
// from the call that writes it to the end, others from the call that
// writes them to the last call that reads them)
// share bytes.
func checkPlan(t interface {
	assert.TestingT
	Helper()
}, f *pte.File) {
	t.Helper()
	for _, ep := range f.Program.ExecutionPlan {
		type span struct {
			v, arena    int
			lo, hi      uint64
			first, last int
		}
		const never, always = 1 << 30, -1
		spans := map[int]*span{}
		for v, val := range ep.Values {
			tn, ok := val.Val.(*pte.Tensor)
			if !ok || tn.AllocationInfo == nil {
				continue
			}
			n := uint64(scalarSize(tn.ScalarType))
			for _, d := range tn.Sizes {
				n *= uint64(d)
			}
			a := tn.AllocationInfo
			off := uint64(a.MemoryOffsetHigh)<<32 | uint64(a.MemoryOffsetLow)
			if !assert.True(t, a.MemoryID >= 1 && int(a.MemoryID) < len(ep.NonConstBufferSizes), "%s: value %d arena %d", ep.Name, v, a.MemoryID) {
				continue
			}
			assert.Zero(t, off%16, "%s: value %d at offset %d", ep.Name, v, off)
			assert.LessOrEqual(t, off+n, uint64(ep.NonConstBufferSizes[a.MemoryID]), "%s: value %d [%d,+%d) past its arena", ep.Name, v, off, n)
			spans[v] = &span{v: v, arena: int(a.MemoryID), lo: off, hi: off + n, first: never, last: always}
		}
		use := func(v int32, i int) {
			if s := spans[int(v)]; s != nil {
				s.first, s.last = min(s.first, i), max(s.last, i)
			}
		}
		for _, v := range ep.Inputs {
			use(v, always)
			use(v, never)
		}
		for i, ins := range ep.Chains[0].Instructions {
			if dc, ok := ins.Args.(*pte.DelegateCall); ok {
				for _, v := range dc.Args {
					use(v, i)
				}
			}
		}
		for _, v := range ep.Outputs {
			use(v, never)
		}
		for _, a := range spans {
			for _, b := range spans {
				if a.v >= b.v || a.arena != b.arena || a.lo >= b.hi || b.lo >= a.hi || a.hi == a.lo || b.hi == b.lo {
					continue
				}
				assert.True(t, a.last < b.first || b.last < a.first,
					"%s: values %d and %d share bytes of arena %d while both live", ep.Name, a.v, b.v, a.arena)
			}
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v))
}

// documentOf returns the JSON form of a .pte file, hashed, in the shape of
// vectors/pte NAME.json (raw_program instead of program).
func documentOf(t *testing.T, path string) map[string]any {
	t.Helper()
	f, err := pte.Open(path)
	require.NoError(t, err)
	defer f.Close()
	for _, fd := range f.Verify() {
		require.NotEqual(t, "error", strings.ToLower(fd.Severity.String()), "verify: %v", fd)
	}
	doc, err := inspect.Build(f, &inspect.Options{Hash: true})
	require.NoError(t, err)
	data, err := inspect.Marshal(doc)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	// The reader's findings, when its document carries them: no error
	// (warnings, such as a pinned target_device that disagrees with a blob's
	// device_id, are the caller's to check); the reference documents have
	// no such member.
	if probs, ok := m["problems"].([]any); ok {
		for _, p := range probs {
			assert.NotEqual(t, "error", p.(map[string]any)["severity"], "problem in %s: %v", path, p)
		}
	}
	delete(m, "problems")
	m["raw_program"] = m["program"]
	delete(m, "program")
	for _, d := range m["delegates"].([]any) {
		delete(d.(map[string]any), "tensorrt")
	}
	return m
}

// diffExcept returns the differences between got and want whose path
// matches none of the allowed patterns.
func diffExcept(t *testing.T, got, want any, allowed ...string) []string {
	t.Helper()
	diffs, err := inspect.Diff(got, want)
	require.NoError(t, err)
	var res []*regexp.Regexp
	for _, a := range allowed {
		res = append(res, regexp.MustCompile("^"+a+"$"))
	}
	var out []string
next:
	for _, d := range diffs {
		for _, re := range res {
			if re.MatchString(d.Path) {
				continue next
			}
		}
		out = append(out, d.String())
	}
	return out
}

// Paths that legitimately differ between two writers of the same program:
// the flatbuffer's byte layout, hence sizes and offsets of the file.
var layoutPaths = []string{
	`file\..*`, `extended_header\.(program_size|segment_base_offset)`, `segments\[\d+\]\.file_offset`,
}

func vectorCases(t *testing.T) (string, []string) {
	dir := testkit.SharedDir(t, "vectors", "pte")
	names, err := filepath.Glob(filepath.Join(dir, "*.input.json"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	for i, n := range names {
		names[i] = strings.TrimSuffix(filepath.Base(n), ".input.json")
	}
	sort.Strings(names)
	return dir, names
}

// TestExportMatchesUpstreamPrograms rebuilds every upstream-written
// TensorRT program the exporter can make from its description and checks
// that the output has the same structure: methods, values and their
// memory plan, delegate calls and args, compile specs, segment layout and
// blob bytes (sha256), and passes the reader's verifier.
func TestExportMatchesUpstreamPrograms(t *testing.T) {
	dir, names := vectorCases(t)
	made := 0
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			var in vecInput
			readJSON(t, filepath.Join(dir, name+".input.json"), &in)
			p, opts, why := programFromVector(t, &in)
			if why != "" {
				t.Skipf("%s: not a program the exporter describes: %s", name, why)
			}
			made++
			out := filepath.Join(t.TempDir(), "out.pte")
			res, err := WriteFile(out, p, opts)
			require.NoError(t, err)
			require.Equal(t, len(p.Methods), len(res.Methods))

			var want map[string]any
			readJSON(t, filepath.Join(dir, name+".json"), &want)
			got := documentOf(t, out)
			allowed := append([]string{
				// upstream's oracle wrote "", the exporter the torch JSON pytree
				`raw_program\.execution_plan\[\d+\]\.container_meta_type\..*`,
				// the memory plan is checked for validity, not equality
				`raw_program\.execution_plan\[\d+\]\.non_const_buffer_sizes.*`,
				`raw_program\.execution_plan\[\d+\]\.values\[\d+\]\.val\.allocation_info\..*`,
			}, layoutPaths...)
			if mixedBudgets(&in) {
				// one budget per program here; upstream used one per delegate
				allowed = append(allowed,
					`delegates\[\d+\]\.compile_specs\[0\]\.value_(hex|utf8)`,
					`raw_program\.execution_plan\[\d+\]\.delegates\[\d+\]\.compile_specs\[0\]\.value\.(size|sha256)`)
			}
			if os.Getenv("DBG") != "" {
				for _, d := range diffExcept(t, got, want) {
					t.Log(d)
				}
			}
			for _, d := range diffExcept(t, got, want, allowed...) {
				t.Error(d)
			}
			f, err := pte.Open(out)
			require.NoError(t, err)
			defer f.Close()
			checkPlan(t, f)
		})
	}
	if made == 0 {
		t.Error("no upstream program was rebuilt")
	}
}

func mixedBudgets(in *vecInput) bool {
	seen := map[string]bool{}
	for _, ep := range in.Program.ExecutionPlan {
		for _, d := range ep.Delegates {
			for _, cs := range d.CompileSpecs {
				if cs.Key == "weight_streaming_budget" {
					seen[cs.Value.UTF8] = true
				}
			}
		}
	}
	return len(seen) > 1
}

// planRecorder records checkPlan's failures.
type planRecorder struct{ errs []string }

func (r *planRecorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *planRecorder) Helper() {}

// TestCheckPlanCatchesOverlap guards checkPlan: the exporter's plan passes;
// the method output moved onto its input, or off its 16-byte alignment, fails.
func TestCheckPlanCatchesOverlap(t *testing.T) {
	var buf bytes.Buffer
	_, err := Write(&buf, &Program{Methods: []*Method{chainMethod("forward", 2)}}, nil)
	require.NoError(t, err)
	open := func() *pte.File {
		f, err := pte.NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		require.NoError(t, err)
		return f
	}
	var r planRecorder
	checkPlan(&r, open())
	assert.Empty(t, r.errs)
	for _, off := range []uint32{0, 8} {
		f := open()
		ep := f.Program.ExecutionPlan[0]
		in := ep.Values[ep.Inputs[0]].Val.(*pte.Tensor).AllocationInfo
		out := ep.Values[ep.Outputs[0]].Val.(*pte.Tensor).AllocationInfo
		out.MemoryOffsetLow = in.MemoryOffsetLow + off
		r = planRecorder{}
		checkPlan(&r, f)
		assert.NotEmpty(t, r.errs, "output at input+%d", off)
	}
}

// scalarSize is the element size of the DType of s, 0 when s has none.
func scalarSize(s pte.ScalarType) int64 {
	for _, info := range dtypes {
		if info.scalar == s {
			return info.size
		}
	}
	return 0
}
