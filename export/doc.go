// Package export builds ExecuTorch programs (.pte) whose methods run
// serialized TensorRT engines through the TensorRTBackend delegate, and
// re-bakes the weight streaming budget of existing programs.
//
// # Building
//
// A Program lists methods; each Method declares its input tensors, the
// ordered engine calls that compute it, and its outputs. Every EngineCall
// becomes its own TensorRTBackend delegate, as Torch-TensorRT's exporter
// partitions: the engine bytes (a file, an io.ReaderAt, or an existing
// TensorRT blob passed through) are wrapped in a TR01/TR02 blob and stored
// once per distinct blob. WriteFile streams the engines into the output; it
// never holds them in memory and never leaves a partial file.
//
// The written ExecutionPlan follows the upstream-written TensorRT programs
// (vectors/pte in the reference material): tensor values with identity
// dim_order, one chain of DelegateCalls whose args are the delegate's
// inputs then outputs in blob order, one planned arena with 16-byte aligned
// offsets shared by tensors whose lifetimes do not overlap, and torch JSON
// pytree strings in container_meta_type. Compile specs on each delegate
// are the caller's, then weight_streaming_budget (when a budget is given),
// then target_device ("cuda:<device id>" unless pinned).
//
// Problems in a description are reported as *Error naming the method,
// engine call and tensor; conditions worth attention (several engine calls
// in a method, a budget applying to each of them) are returned as Warnings
// in the Result.
//
// # Manifest
//
// ReadManifest reads the JSON form used by cmd/pteexport (docs/manifest.md
// has the full reference):
//
//	{
//	  "methods": [{
//	    "name": "forward",
//	    "inputs": [{"name": "x", "dtype": "float32", "shape": [1, -1], "max_shape": [1, 64]}],
//	    "outputs": ["y"],
//	    "compile_specs": [{"key": "k", "value": "text"}],
//	    "engines": [{
//	      "name": "encoder",
//	      "engine": "encoder.engine",      // or "blob": an existing TensorRT blob
//	      "device_id": 0,
//	      "hardware_compatible": false,
//	      "inputs": [{"binding": "input", "tensor": "x"}],
//	      "outputs": [{"binding": "output", "tensor": "y", "dtype": "float32", "shape": [1, 8]}],
//	      "aliased_io": [{"output": "...", "input": "...", "kind": "kv_cache_update"}],
//	      "serialized_metadata": "", "target_platform": "linux_x86_64"
//	    }]
//	  }],
//	  "compile_specs": [{"key": "k", "value_hex": "00ff"}],
//	  "weight_streaming_budget_per_engine": "4GiB",   // bytes, a size, "auto" or null
//	  "target_device": "cuda:0",
//	  "inline_delegate_data": false,
//	  "segment_alignment": 128
//	}
//
// A tensor is declared where it is produced (a method input or an engine
// output binding, which need dtype and shape); elsewhere a dtype or shape is
// a check. A binding may be a bare string naming both the binding and the
// tensor. Unknown members are errors.
//
// A built program is written only if the reader's verifier
// (pte.File.Verify) finds no error in it, so a file the exporter writes
// loads in ExecuTorch as far as ptekit can tell.
//
// # Re-baking
//
// Rebake opens an existing program and sets or clears the budget (and
// optionally the target device) on every TensorRTBackend delegate, copying
// every segment byte for byte and leaving the rest of the program as it was.
// An input that fails the reader's verifier is refused.
//
// # Results and output files
//
// The Result of a write describes the file as written: each delegate's
// budget and target_device (MethodSummary.Engines) and the values common to
// all of them; Result.Summary is its JSON document (docs/json.md), which
// pteexport --json prints. Output files are written through internal/atomicfile:
// complete or absent, never partial, and nothing left behind when a write
// fails or its context is cancelled (on Linux even when the process is
// killed). NoOverwrite refuses, in the same step that puts the file in
// place, to replace an existing one; WriteFile refuses an output that is
// one of its inputs (*InputError).
package export
