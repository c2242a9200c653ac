// Package runtime is a thin ExecuTorch runtime for .pte programs whose
// delegates carry TensorRT engines. It loads programs and methods the way
// ExecuTorch's C++ runtime does, so that pipelines can load, check and plan
// a program before it reaches a GPU, and so that a real TensorRT binding can
// plug in later.
//
// # Loading
//
// Load wraps a *pte.File; Program.LoadMethod initializes a method's
// delegates in order. Each delegate's backend is looked up by id in a
// Registry (an unregistered or unavailable id is a NotFound error naming the
// backend and the method) and its Init receives the payload lazily
// (*pte.Payload), the compile specs, and the load-time options addressed to
// that backend id (LoadOptions, modelled on ExecuTorch's
// LoadBackendOptionsMap: bool, int32 or string values of at most 255 bytes,
// keys under 64 bytes, first match wins, every delegate of the backend gets
// the same list). When a delegate fails, every handle created so far is
// destroyed. Errors are *Error values whose Code is ExecuTorch's error class
// (pte.Code: InvalidProgram, InvalidArgument, NotFound, ...).
//
// Method.Execute runs the method's chains: a DelegateCall hands the backend
// the delegate's inputs then outputs; a KernelCall runs a registered kernel
// (an unregistered operator is an OperatorMissing error naming it; unlike
// ExecuTorch, operators are resolved at execution so that kernel-free
// planning works).
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
// Beyond the upstream delegate, Method.SetBudget changes the budget of a
// loaded engine (waiting for in-flight executions and recreating the
// execution context), and the opt-in shared activation scratch pool
// (ScratchPool, KeySharedScratch) backs every participating context on a
// device with one grow-only buffer, ordering consecutive users with events.
//
// # Planning without a GPU
//
// PlanProgram loads every method with a StandIn engine factory whose
// streamable and scratch sizes the caller may state, and returns a
// ProgramPlan ready for JSON: per method name, ok, error {kind, message}
// and delegates {index, backend, device, budget {source, requested,
// applied}}, where applied is null when it depends on an engine fact nobody
// stated (TensorRT's automatic budget, or an unstated streamable size).
package runtime
