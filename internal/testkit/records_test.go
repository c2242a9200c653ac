package testkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Records in the form the upstream C++ harness prints them.
const (
	recHead = `{"event":"register_backend","name":"TensorRTBackend","error":"Error::Ok"}
{"event":"check_header","status":"CompatibleVersion"}
{"event":"register_stub_kernels","count":2,"error":"Error::Ok"}
`
	recData = `{"event":"data_map_load","file":"w.ptd","ok":true,"error":"Ok","keys":["w"]}
{"event":"data_map_merge","maps":1,"ok":true,"error":"Ok","keys":["w"]}
`
	recMissing = `{"event":"data_map_load","file":"does_not_exist.ptd","ok":false,"error":"Error::AccessFailed","keys":[]}
{"event":"data_map_merge","maps":0,"ok":false,"error":"Error::InvalidArgument","keys":[]}
`
	recRefused = `{"event":"program_load","verification":"InternalConsistency","ok":false,"error":"Error::InvalidProgram"}
`
	recLoaded = `{"event":"program_load","verification":"InternalConsistency","ok":true,"error":"Ok"}
{"event":"methods","count":2,"names":["a","b"]}
{"event":"method_meta","name":"a","num_inputs":1,"num_outputs":1,"num_instructions":2,"memory_planned_buffers":[48],"backends":[]}
`
	recMethodA = `{"event":"load_method","name":"a","ok":true,"error":"Ok","planned_ok":true}
`
	recBlobBad = `{"event":"backend_init","backend":"TensorRTBackend","method":"b","processed_size":0,"processed_fnv1a64":"cbf29ce484222325","processed_head_hex":"","compile_specs":[],"runtime_specs":[],"get_runtime_spec_weight_streaming_budget":{"ok":false,"error":"Error::NotFound"},"upstream_trt_blob_parse":{"ok":false}}
`
	recBudgetTwice = `{"event":"backend_init","backend":"TensorRTBackend","method":"a","processed_size":0,"processed_fnv1a64":"cbf29ce484222325","processed_head_hex":"","compile_specs":[{"key":"weight_streaming_budget","value_hex":"31","value_text":"1","upstream_parse_weight_streaming_budget":{"valid":true,"bytes":1}},{"key":"weight_streaming_budget\u0000x","value_hex":"32","value_text":"2","upstream_parse_weight_streaming_budget":{"valid":true,"bytes":2}}],"runtime_specs":[],"get_runtime_spec_weight_streaming_budget":{"ok":false,"error":"Error::NotFound"},"upstream_trt_blob_parse":{"ok":true}}
`
	recMethodB = `{"event":"method_meta","name":"b","num_inputs":1,"num_outputs":1,"num_instructions":2,"memory_planned_buffers":[48],"backends":[]}
{"event":"load_method","name":"b","ok":false,"error":"Error::NotFound","planned_ok":true}
`
	recDone = `{"event":"done","failures":1}
`
)

// TestReadDataRecord: a record that stops after a failed program_load is
// a refusal, not a crash, and Module::load answers the first failure of
// the data files, the merge and the program load, in that order; a record
// that stops inside a method is a crash with no verdict for the methods
// after it.
func TestReadDataRecord(t *testing.T) {
	for _, c := range []struct {
		name, rec        string
		crashed, refused bool
		module, data     string
		verdicts         map[string]string
	}{
		{"complete", recHead + recData + recLoaded + recMethodA + recMethodB + recDone, false, false, "Ok", "Ok", map[string]string{"a": "Ok", "b": "NotFound"}},
		{"refused", recHead + recRefused, false, true, "InvalidProgram", "Ok", map[string]string{}},
		{"refused with data", recHead + recData + recRefused, false, true, "InvalidProgram", "Ok", map[string]string{}},
		{"refused, data missing", recHead + recMissing + recRefused, false, true, "AccessFailed", "AccessFailed", map[string]string{}},
		{"blob rejected", recHead + recLoaded + recMethodA + recBlobBad + recMethodB + recDone, false, false, "Ok", "Ok", map[string]string{"a": "Ok", "b": "NotFound"}},
		{"budget twice", recHead + recLoaded + recBudgetTwice + recMethodA + recDone, false, false, "Ok", "Ok", map[string]string{"a": "Ok"}},
		{"data missing", recHead + recMissing + recLoaded + recMethodA + recMethodB + recDone, false, false, "AccessFailed", "AccessFailed", map[string]string{"a": "Ok", "b": "NotFound"}},
		{"crashed in the first method", recHead + recLoaded, true, false, "Ok", "Ok", map[string]string{}},
		{"crashed in a method", recHead + recLoaded + recMethodA, true, false, "Ok", "Ok", map[string]string{"a": "Ok"}},
		{"crashed before program_load", recHead + recData, true, false, "Ok", "Ok", map[string]string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run.cpp.jsonl")
			if err := os.WriteFile(path, []byte(c.rec), 0o644); err != nil {
				t.Fatal(err)
			}
			r := ReadDataRecord(t, path)
			if r.Crashed != c.crashed || r.ProgramRefused() != c.refused || r.ModuleCode() != c.module || r.DataCode() != c.data {
				t.Errorf("crashed %v refused %v module %s data %s; want %v %v %s %s",
					r.Crashed, r.ProgramRefused(), r.ModuleCode(), r.DataCode(), c.crashed, c.refused, c.module, c.data)
			}
			if len(r.Loads) != len(c.verdicts) {
				t.Errorf("verdicts %v, want %v", r.Loads, c.verdicts)
			}
			for m, want := range c.verdicts {
				if got, ok := r.Loads[m]; !ok || got != want {
					t.Errorf("method %s: %q %v, want %s", m, got, ok, want)
				}
			}
			// A method after the one the run crashed in is unreached.
			if u := r.Unreached(); u["a"] || u["b"] != (c.name == "crashed in the first method") {
				t.Errorf("unreached %v", u)
			}
			if strings.Contains(c.rec, "u0000x") != (len(r.BudgetRejected) == 1 && r.BudgetRejected[0] == "a") {
				t.Errorf("budget rejected in %v", r.BudgetRejected)
			}
			// Every record here but the crashed ones shows a refusal.
			if r.InitRefused() == strings.HasPrefix(c.name, "crashed") {
				t.Errorf("InitRefused = %v", r.InitRefused())
			}
			if strings.Contains(c.rec, `"ok":false}}`) != (len(r.BlobRejected) == 1 && r.BlobRejected[0] == "b") {
				t.Errorf("blob rejected in %v", r.BlobRejected)
			}
			if strings.Contains(c.rec, "program_load") && r.Program == "" {
				t.Error("program_load not read")
			}
		})
	}
}
