package export

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
	"github.com/ptekit/ptekit/pte/ptejson"
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
// metadata, tensors from the values. It returns ok=false for programs the
// exporter does not make (kernel calls, hand-written budget specs).
func programFromVector(t *testing.T, in *vecInput) (*Program, *Options, bool) {
	t.Helper()
	opts := &Options{
		InlineDelegateData: !in.SerializeOptions.ExtractDelegateSegments,
		SegmentAlignment:   in.SerializeOptions.SegmentAlignment,
	}
	p := &Program{}
	for _, ep := range in.Program.ExecutionPlan {
		m := &Method{Name: ep.Name}
		tensor := func(v int32) *Tensor {
			val := ep.Values[v]
			require.Equal(t, "Tensor", val.ValType)
			dt, ok := scalarToDType[val.Val.ScalarType]
			require.True(t, ok, val.Val.ScalarType)
			return &Tensor{Name: "v" + string(rune('0'+v)), DType: dt, Shape: val.Val.Sizes}
		}
		for _, v := range ep.Inputs {
			m.Inputs = append(m.Inputs, tensor(v))
		}
		for _, v := range ep.Outputs {
			m.Outputs = append(m.Outputs, &Tensor{Name: tensor(v).Name})
		}
		for _, ins := range ep.Chains[0].Instructions {
			if ins.Type != "DelegateCall" {
				return nil, nil, false
			}
			d := ep.Delegates[ins.Args.DelegateIndex]
			budgets := 0
			for _, cs := range d.CompileSpecs {
				switch cs.Key {
				case "weight_streaming_budget":
					budgets++
					if opts.WeightStreamingBudget == nil {
						n := int64(0)
						for _, c := range cs.Value.UTF8 {
							n = n*10 + int64(c-'0')
						}
						opts.WeightStreamingBudget = &n
					}
				case "target_device":
				default:
					return nil, nil, false
				}
			}
			if budgets > 1 {
				return nil, nil, false
			}
			blob := in.TRTBlobs[d.Processed.Index].Description
			engine, err := hex.DecodeString(blob.EngineHex)
			require.NoError(t, err)
			call := &EngineCall{
				Engine:             EngineReader(bytes.NewReader(engine), int64(len(engine))),
				DeviceID:           blob.Metadata.DeviceID,
				HardwareCompatible: blob.Metadata.HardwareCompatible,
				AliasedIO:          blob.Metadata.AliasedIO,
				SerializedMetadata: blob.Metadata.SerializedMetadata,
				TargetPlatform:     blob.Metadata.TargetPlatform,
			}
			k := 0
			for _, b := range blob.Metadata.IOBindings {
				tn := tensor(ins.Args.Args[k])
				k++
				if b.IsInput {
					call.Inputs = append(call.Inputs, &Binding{Name: b.Name, Tensor: tn.Name})
				} else {
					call.Outputs = append(call.Outputs, &Binding{Name: b.Name, Tensor: tn.Name, DType: tn.DType, Shape: tn.Shape})
				}
			}
			m.Calls = append(m.Calls, call)
		}
		p.Methods = append(p.Methods, m)
	}
	return p, opts, true
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
	doc, err := ptejson.Build(f, &ptejson.Options{Hash: true})
	require.NoError(t, err)
	data, err := ptejson.Marshal(doc)
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
	diffs, err := ptejson.Diff(got, want)
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
			p, opts, ok := programFromVector(t, &in)
			if !ok {
				if mustRebuild[name] {
					t.Fatal("the exporter could not describe this program")
				}
				t.Skip("not a program the exporter makes (kernel calls or hand-written budget specs)")
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
		})
	}
	if made == 0 {
		t.Error("no upstream program was rebuilt")
	}
}

// mustRebuild lists the vectors the exporter must be able to describe.
var mustRebuild = map[string]bool{
	"trt_segment": true, "trt_inline": true, "trt_two_engines_chain": true,
	"trt_identical_blobs_dedup": true, "trt_two_methods_prefill_decode": true, "trt_aliased_io_tr02": true,
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
