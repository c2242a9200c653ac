package conformtree

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// Names of the vectors/pte cases Build adds.
const (
	// EmptyBlob has a TensorRT delegate whose inline blob is empty: the
	// program loads, TensorRTBackend's init refuses the blob.
	EmptyBlob = "syn_trt_empty_blob"
	// PinnedDevice pins cuda:1 in target_device; its blob says device 0.
	PinnedDevice = "syn_trt_pinned_other_device"
	// UnusedConstant has a constant tensor nothing uses.
	UnusedConstant = "syn_trt_unused_constant"
	// PartialBudget carries a budget in one of its two methods only.
	PartialBudget = "syn_trt_budget_one_method"
)

// programVectors adds the TensorRT program cases to vectors/pte.
func (b *builder) programVectors() {
	progs := testprog.Programs(b.t)
	two, err := testprog.Build() // a copy to edit ("two_methods" has budgets in both methods)
	if err != nil {
		b.t.Fatal(err)
	}
	// align is the segment alignment the program was written with (the
	// edits write it again with pte.Write's default); 0 for a program
	// without delegate segments.
	cases := []struct {
		name  string
		align uint64
		data  []byte
	}{
		{EmptyBlob, 0, testprog.Rewrite(b.t, progs["inline"], func(p *pte.Program) {
			p.BackendDelegateData[p.ExecutionPlan[0].Delegates[0].Processed.Index].Data = []byte{}
		})},
		{PinnedDevice, pte.DefaultSegmentAlignment, testprog.Rewrite(b.t, progs["segment"], func(p *pte.Program) {
			testprog.SetSpec(p.ExecutionPlan[0].Delegates[0], "target_device", []byte("cuda:1"))
		})},
		{UnusedConstant, pte.DefaultSegmentAlignment, b.withConstant(progs["segment"])},
		{PartialBudget, pte.DefaultSegmentAlignment, testprog.Rewrite(b.t, two["two_methods"], func(p *pte.Program) {
			d := p.ExecutionPlan[1].Delegates[0]
			var kept []*pte.CompileSpec
			for _, s := range d.CompileSpecs {
				if s.Key != compilespec.KeyWeightStreamingBudget {
					kept = append(kept, s)
				}
			}
			d.CompileSpecs = kept
		})},
	}
	dir := filepath.Join("vectors", "pte")
	for _, c := range cases {
		b.program(dir, dir, c.name, c.data, false)
		f, err := pte.NewFile(bytes.NewReader(c.data), int64(len(c.data)))
		if err != nil {
			b.t.Fatalf("conformtree: %s: %v", c.name, err)
		}
		b.write(filepath.Join(dir, c.name+".input.json"), b.inputJSON(f, c.align))
		for _, run := range []struct {
			suffix string
			spec   []any // the runtime spec, as the record writes it
		}{
			{"", nil},
			{".rt-str", []any{"string", "2048"}},
			{".rt-int", []any{"int", 4096}},
			{".rt-bool", []any{"bool", true}},
		} {
			rec := newRecord(f.Program).head().loaded()
			for i, ep := range f.Program.ExecutionPlan {
				rec.meta(i)
				for j := range ep.Delegates {
					b.backendInit(rec, f, i, j, run.spec)
				}
				rec.event("load_method", "name", ep.Name, "ok", true, "error", "Ok", "planned_ok", true)
			}
			rec.done(0)
			b.write(filepath.Join(dir, c.name+run.suffix+".cpp.jsonl"), rec.bytes())
		}
		f.Close()
	}
}

// withConstant is the program with one more value: a FLOAT [2,2] constant
// tensor in the constant segment that no instruction uses.
func (b *builder) withConstant(data []byte) []byte {
	f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		b.t.Fatal(err)
	}
	defer f.Close()
	segs, err := f.SegmentReaders()
	if err != nil {
		b.t.Fatal(err)
	}
	p := f.Program
	cs := p.ConstantSegment
	segs[cs.SegmentIndex] = io.NewSectionReader(bytes.NewReader(bytes.Repeat([]byte{0x3f}, 16)), 0, 16)
	cs.Offsets = []uint64{0, 0}
	p.ExecutionPlan[0].Values = append(p.ExecutionPlan[0].Values, &pte.EValue{Val: &pte.Tensor{
		ScalarType: pte.ScalarTypeFLOAT, Sizes: []int32{2, 2}, DimOrder: []uint8{0, 1}, DataBufferIdx: 1}})
	var out bytes.Buffer
	if _, err := pte.Write(&out, p, segs, nil); err != nil {
		b.t.Fatalf("conformtree: %v", err)
	}
	return out.Bytes()
}

// payload returns the processed bytes of delegate j of plan i.
func (b *builder) payload(f *pte.File, i, j int) []byte {
	pl, err := f.DelegateData(i, j)
	if err != nil {
		b.t.Fatal(err)
	}
	data, err := pl.Data()
	if err != nil {
		b.t.Fatal(err)
	}
	return data
}

// backendInit writes the backend_init event of delegate j of plan i with
// the runtime spec (nil: none), as the harness's fake backend prints it.
func (b *builder) backendInit(rec *record, f *pte.File, i, j int, spec []any) {
	d := f.Program.ExecutionPlan[i].Delegates[j]
	data := b.payload(f, i, j)
	specs := []any{}
	for _, s := range d.CompileSpecs {
		m := orderedMap{"key", s.Key, "value_hex", hex.EncodeToString(s.Value), "value_text", valueText(s.Value)}
		if s.Key == compilespec.KeyWeightStreamingBudget {
			n, err := compilespec.ParseBudget(s.Value)
			m = append(m, "upstream_parse_weight_streaming_budget", orderedMap{"valid", err == nil, "bytes", n})
		}
		specs = append(specs, m)
	}
	runtime, get := []any{}, any(orderedMap{"ok", false, "error", "Error::NotFound"})
	if spec != nil {
		runtime = append(runtime, orderedMap{"key", compilespec.KeyWeightStreamingBudget, "type", spec[0], "value", spec[1]})
		get = orderedMap{"ok", false, "error", "Error::InvalidArgument"}
		if s, ok := spec[1].(string); ok {
			get = orderedMap{"ok", true, "string", s}
		}
	}
	v, err := delegate.ReadDeployed(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		b.t.Fatal(err)
	}
	parse := orderedMap{"ok", v.OK}
	if v.OK {
		parse = append(parse, "engine_offset", v.EngineOffset, "engine_size", v.EngineSize, "inputs", nonNil(v.Inputs),
			"outputs", nonNil(v.Outputs), "num_aliased_io", len(v.AliasedIO), "device_id", v.DeviceID)
	}
	rec.event("backend_init", "backend", d.ID, "method", f.Program.ExecutionPlan[i].Name, "processed_size", len(data),
		"processed_fnv1a64", fmt.Sprintf("%x", harnessFNV(data)), "processed_head_hex", hex.EncodeToString(data[:min(16, len(data))]),
		"compile_specs", specs, "runtime_specs", runtime, "get_runtime_spec_weight_streaming_budget", get,
		"upstream_trt_blob_parse", parse)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// harnessFNV is the hash the harness prints as processed_fnv1a64: FNV-1a
// 64 with its offset basis one digit short (see executor's vectorFNV).
func harnessFNV(data []byte) uint64 {
	h := uint64(1469598103934665603)
	for _, c := range data {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// valueText is the harness's value_text: the bytes with `"` and `\`
// escaped and every byte below 0x20 or from 0x7f written as \u00XX.
func valueText(v []byte) string {
	var sb strings.Builder
	for _, c := range v {
		switch {
		case c == '"' || c == '\\':
			sb.WriteByte('\\')
			sb.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&sb, `\u%04x`, c)
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// orderedMap is a JSON object whose members keep the order given (key,
// value, key, value, ...).
type orderedMap []any

func (m orderedMap) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i := 0; i+1 < len(m); i += 2 {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, err := json.Marshal(m[i])
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m[i+1])
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// inputJSON writes the serializer input of f in the vectors' mapping of
// exir's Program (vectors/README.md, section 4): delegates INLINE, each
// distinct blob once in backend_delegate_data with its description in
// trt_blobs.
func (b *builder) inputJSON(f *pte.File, align uint64) []byte {
	p := f.Program
	var blobs [][]byte
	var trtBlobs []any
	var plans []any
	for i, ep := range p.ExecutionPlan {
		var values []any
		for _, v := range ep.Values {
			switch x := v.Val.(type) {
			case *pte.Tensor:
				var alloc any
				if x.AllocationInfo != nil {
					alloc = orderedMap{"memory_id", x.AllocationInfo.MemoryID, "memory_offset_low", x.AllocationInfo.MemoryOffsetLow,
						"memory_offset_high", x.AllocationInfo.MemoryOffsetHigh}
				}
				values = append(values, orderedMap{"val_type", "Tensor", "val", orderedMap{
					"scalar_type", x.ScalarType.String(), "storage_offset", x.StorageOffset, "sizes", x.Sizes,
					"dim_order", dimOrder(x.DimOrder), "requires_grad", x.RequiresGrad, "layout", x.Layout,
					"data_buffer_idx", x.DataBufferIdx, "allocation_info", alloc, "shape_dynamism", x.ShapeDynamism.String(),
					"extra_tensor_info", nil}})
			case *pte.Int:
				values = append(values, orderedMap{"val_type", "Int", "val", orderedMap{"int_val", x.IntVal}})
			default:
				b.t.Fatalf("conformtree: value of type %T", x)
			}
		}
		var chains []any
		for _, c := range ep.Chains {
			var ins []any
			for _, in := range c.Instructions {
				dc, ok := in.Args.(*pte.DelegateCall)
				if !ok {
					b.t.Fatalf("conformtree: instruction %T", in.Args)
				}
				ins = append(ins, orderedMap{"instr_args_type", "DelegateCall", "instr_args",
					orderedMap{"delegate_index", dc.DelegateIndex, "args", dc.Args}})
			}
			chains = append(chains, orderedMap{"inputs", c.Inputs, "outputs", c.Outputs, "stacktrace", nil, "instructions", ins})
		}
		var delegates []any
		for j, d := range ep.Delegates {
			data := b.payload(f, i, j)
			idx := -1
			for k, bl := range blobs {
				if bytes.Equal(bl, data) {
					idx = k
				}
			}
			if idx < 0 {
				idx = len(blobs)
				blobs = append(blobs, data)
				trtBlobs = append(trtBlobs, orderedMap{"backend_delegate_data_index", idx, "description", blobDescription(data)})
			}
			var specs []any
			for _, s := range d.CompileSpecs {
				specs = append(specs, orderedMap{"key", s.Key, "value", orderedMap{"utf8", string(s.Value)}})
			}
			delegates = append(delegates, orderedMap{"id", d.ID, "processed", orderedMap{"location", "INLINE", "index", idx},
				"compile_specs", specs})
		}
		plans = append(plans, orderedMap{"name", ep.Name, "container_meta_type", orderedMap{"encoded_inp_str", "", "encoded_out_str", ""},
			"values", values, "inputs", ep.Inputs, "outputs", ep.Outputs, "chains", chains, "operators", []any{},
			"delegates", delegates, "non_const_buffer_sizes", ep.NonConstBufferSizes, "non_const_buffer_device", nil})
	}
	var data []any
	for _, bl := range blobs {
		data = append(data, orderedMap{"data", hex.EncodeToString(bl)})
	}
	constants := []any{orderedMap{"storage", ""}}
	if cs := p.ConstantSegment; cs != nil && len(cs.Offsets) > 1 {
		seg, err := f.Segment(int(cs.SegmentIndex))
		if err != nil {
			b.t.Fatal(err)
		}
		all, err := seg.Data()
		if err != nil {
			b.t.Fatal(err)
		}
		for k := 1; k < len(cs.Offsets); k++ {
			end := uint64(len(all))
			if k+1 < len(cs.Offsets) {
				end = cs.Offsets[k+1]
			}
			constants = append(constants, orderedMap{"storage", hex.EncodeToString(all[cs.Offsets[k]:end])})
		}
	}
	opts := orderedMap{"extract_delegate_segments", align != 0}
	if align != 0 {
		opts = append(opts, "segment_alignment", align)
	}
	in := orderedMap{"program", orderedMap{"version", p.Version, "execution_plan", plans, "constant_buffer", constants,
		"backend_delegate_data", data, "segments", []any{}, "constant_segment", orderedMap{"segment_index", 0, "offsets", []any{}},
		"mutable_data_segments", nil, "named_data", nil},
		"serialize_options", opts, "trt_blobs", trtBlobs}
	out, err := json.Marshal(in)
	if err != nil {
		b.t.Fatal(err)
	}
	return out
}

// dimOrder writes a dim order as numbers (encoding/json writes []uint8 as
// base64).
func dimOrder(d []uint8) []int {
	out := make([]int, len(d))
	for i, x := range d {
		out[i] = int(x)
	}
	return out
}

// blobDescription is a blob's input in the trt-blob-write format, or nil
// for an empty blob.
func blobDescription(data []byte) any {
	if len(data) == 0 {
		return nil
	}
	bl, err := delegate.Decode(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil
	}
	engine, _ := io.ReadAll(bl.Engine())
	m := bl.Metadata
	var bindings, aliased []any
	for _, x := range m.IOBindings {
		bindings = append(bindings, orderedMap{"name", x.Name, "dtype", x.DType, "shape", nonNilInts(x.Shape), "is_input", x.IsInput})
	}
	for _, a := range m.AliasedIO {
		aliased = append(aliased, orderedMap{"output", a.Output, "input", a.Input, "kind", a.Kind})
	}
	return orderedMap{"engine_hex", hex.EncodeToString(engine), "metadata", orderedMap{
		"io_bindings", bindings, "aliased_io", aliasedOrEmpty(aliased), "hardware_compatible", m.HardwareCompatible,
		"device_id", m.DeviceID, "serialized_metadata", m.SerializedMetadata, "target_platform", m.TargetPlatform}}
}

func nonNilInts(s []int64) []int64 {
	if s == nil {
		return []int64{}
	}
	return s
}

func aliasedOrEmpty(a []any) []any {
	if a == nil {
		return []any{}
	}
	return a
}
