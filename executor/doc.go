// Package executor is a thin model of the ExecuTorch runtime's load path for
// .pte programs whose delegates carry TensorRT engines: program and method
// load, the TensorRT delegate's init, and its weight streaming budget
// resolution. It loads programs and methods the way ExecuTorch's C++
// runtime does, so that pipelines can load, check and plan a program
// before it reaches a GPU (PlanProgram, which `pteinspect --plan` prints).
// It does not execute methods.
//
// # Loading
//
// Load wraps a *pte.File; Program.LoadMethod loads a method with the checks
// of ExecuTorch's Program::method_meta and Method::init, in their order and
// with their error classes (see LoadMethod). A union whose tag is set but
// whose table is absent (a typed nil in the pte model) is InvalidProgram,
// never a panic.
//
// Each delegate's backend is looked up by id in a Registry (an
// unregistered or unavailable id is a NotFound error naming the backend and
// the method) and its Init receives the payload lazily (*pte.Payload), the
// compile specs, and the load-time options addressed to that backend id
// (LoadOptions, modelled on ExecuTorch's LoadBackendOptionsMap: bool, int32
// or string values of at most 255 bytes, keys under 64 bytes, first match
// wins, every delegate of the backend gets the same list). When loading
// fails, every handle created so far is destroyed and LoadMethod returns a
// nil *Method. Errors are *Error values whose Code is ExecuTorch's error
// class (pte.Code) and whose Plans keep the plans reported before the
// failure.
//
// # External data
//
// Config.DataFiles passes the program's .ptd files (ptd.Load opens one),
// as ExecuTorch's Module(program, data_files) does. Load resolves the
// program against them once (ptd.Resolve, Program.Data) and, like
// Module::load, fails when a file does not load or the files do not merge
// (a key in two files is InvalidArgument; the error wraps ErrDataFiles).
// LoadMethod then applies the resolution at the step where Method::init
// meets it: external constants first (InvalidState without a data map,
// NotFound for an unknown key, InvalidExternalData for a layout that
// differs from the tensor's), then each memory-planned EXTERNAL tensor
// after its structural checks (InvalidExternalData without a data file),
// then the merge of the program's named_data with the external keys for
// the delegates (InvalidArgument on a shared key). Keys a delegate looks
// up inside its own blob are not modelled.
//
// # Error kinds
//
// KindOf spells a code in snake case, as the JSON outputs (PlanError.Kind)
// do. Loading reports: "invalid_program" (malformed program, rejected
// budget, engine refusing an explicit budget), "invalid_argument" (payload
// past the end of the file, unknown method), "not_found" (backend not
// registered or unavailable, payload segment missing), "internal"
// (unknown payload location), "invalid_state" (external constants without
// a data map), "invalid_external_data" (external tensors the data files do
// not provide as the program declares them), "access_failed" (a data file
// that cannot be read), "not_supported" (tensor features the runtime lacks, and a
// TensorRT blob whose metadata exceeds the 64 MiB ptekit reads: that error
// wraps ErrOutcomeUnknown, as the deployed reader would scan it and its
// verdict is unknown; PlanError.Unknown marks it) and
// "memory_allocation_failed".
//
// # TensorRT
//
// TensorRTBackend reads each blob as the deployed C++ reader does
// (delegate.ReadDeployed), deserializes the engine through an EngineFactory
// and resolves the weight streaming budget in the delegate's order
// (ResolveBudget): load-time option, then the single compile spec, then
// automatic. It applies it as the delegate does: an explicit budget is
// clamped to the streamable size and fails the load when the engine refuses
// it; the automatic budget falls back to 0 when refused; a budget for an
// engine with nothing streamable is reported, not fatal. Each decision is a
// Plan (Method.Plans) and a log/slog record.
//
// Beyond the upstream delegate, the opt-in shared activation scratch pool
// (KeySharedScratch, PlanOptions.SharedScratch) is modelled as far as load
// goes: a participating engine's context is created without scratch of its
// own, and ScratchMemory counts one buffer per device for such engines.
//
// # Planning without a GPU
//
// PlanProgram loads every method with a StandIn engine factory whose
// streamable size, scratch size and automatic budget the caller may state,
// and returns a ProgramPlan ready for JSON. A figure that depends on an
// engine fact nobody stated is null, and ProgramPlan.Assumed lists the fact
// (BudgetPlan.Applied says when else it is null); ProgramPlan.Stated lists
// the facts the caller stated, whose figures are assumptions rather than an
// engine's. Backends other than TensorRT that the caller did not register
// are not modelled: their delegates are assumed to load
// (MethodPlan.NotModelled), so that the TensorRT delegates after them are
// planned too.
//
// Init steps that need the engine's own tensor descriptions (the
// agreement of an aliased_io pair with the engine, the refusal of
// shape-tensor inputs) run only with engines implementing EngineTensors;
// the names and kinds of aliased_io pairs are always checked against the
// blob's bindings.
package executor
