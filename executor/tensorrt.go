package executor

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/internal/quote"
	"github.com/ptekit/ptekit/pte"
)

// TensorRTBackendID is the backend id of TensorRT delegates.
const TensorRTBackendID = delegate.BackendID

// KeySharedScratch is the process-wide TensorRTBackend option that turns the
// shared activation scratch pool on for engines initialized afterwards
// (upstream PR pytorch/TensorRT#4600, not merged): their execution contexts
// are created without scratch of their own, and a plan counts one buffer per
// device for them (ScratchMemory). Set it with TensorRTBackend.SetOptions.
const KeySharedScratch = "use_shared_activation_scratch"

// EngineFactory deserializes TensorRT engines. A TensorRT binding outside
// this repository implements it; StandIn provides a GPU-less stand-in.
type EngineFactory interface {
	// Deserialize makes the CUDA device current and deserializes the engine
	// bytes (read lazily from engine) into an engine on it.
	Deserialize(device int, engine *io.SectionReader) (Engine, error)
}

// Engine is a deserialized TensorRT engine (nvinfer1::ICudaEngine). Calls
// on one engine are serialized by the backend.
type Engine interface {
	// StreamableWeightsSize is getStreamableWeightsSize: > 0 only for
	// engines built with weight streaming.
	StreamableWeightsSize() int64
	// AutomaticBudget is getWeightStreamingAutomaticBudget.
	AutomaticBudget() int64
	// SetBudget is setWeightStreamingBudgetV2; false when refused.
	SetBudget(bytes int64) bool
	// Budget is getWeightStreamingBudgetV2.
	Budget() int64
	// ScratchSize is the activation scratch (device memory) one execution
	// context needs at the largest shapes (getDeviceMemorySizeV2).
	ScratchSize() int64
	// CreateContext creates an execution context.
	CreateContext(opts ContextOptions) (Context, error)
	// Close releases the engine.
	Close() error
}

// ContextOptions configures an execution context.
type ContextOptions struct {
	// UserManagedScratch asks for a context whose activation scratch the
	// caller supplies at each enqueue (kUSER_MANAGED), for the shared pool.
	UserManagedScratch bool
}

// Context is an execution context (nvinfer1::IExecutionContext): init
// creates one per engine, and fails the load when it cannot.
type Context interface {
	// Close releases the context.
	Close() error
}

// EngineTensors is implemented by engines that can describe their I/O
// tensors. When an engine implements it, Init makes the checks of
// TensorRTBackend::init that need the engine: an aliased_io pair of kind
// kv_cache_update must be the engine's own alias, a pair of kind user must
// have equal shapes, and no input may be a shape tensor. Without it those
// checks are skipped and the plan says so.
type EngineTensors interface {
	// AliasedInputTensor is getAliasedInputTensor: the input the output
	// aliases, "" when none.
	AliasedInputTensor(output string) string
	// TensorShape is getTensorShape: the dimensions of the named I/O
	// tensor (-1 for a dynamic dimension), nil when there is no such
	// tensor.
	TensorShape(name string) []int64
	// IsShapeTensor is isShapeInferenceIO: whether the named input is a
	// shape tensor.
	IsShapeTensor(name string) bool
}

// FactsReporter is implemented by engines that may not know some of their
// facts (the stand-in). For such engines the plan leaves the dependent
// figures nil instead of inventing them.
type FactsReporter interface {
	// KnownFacts reports which of StreamableWeightsSize, AutomaticBudget
	// and ScratchSize return real values.
	KnownFacts() (streamable, automatic, scratch bool)
}

// TensorRTBackend is the TensorRT delegate's init: it reads each blob with
// the deployed C++ reader's rules (delegate.ReadDeployed), deserializes the
// engine through an EngineFactory, resolves and applies the weight
// streaming budget exactly as upstream TensorRTBackend::init does, and
// creates the execution context. Beyond upstream it models the shared
// activation scratch pool's setting (SetOptions with KeySharedScratch).
type TensorRTBackend struct {
	factory EngineFactory
	shared  atomic.Bool
}

// NewTensorRTBackend returns a backend that deserializes engines with
// factory.
func NewTensorRTBackend(factory EngineFactory) *TensorRTBackend {
	return &TensorRTBackend{factory: factory}
}

// IsAvailable reports whether an engine factory is configured.
func (b *TensorRTBackend) IsAvailable() bool { return b.factory != nil }

// SetOptions applies process-wide backend options (ExecuTorch's
// set_option("TensorRTBackend", ...)). The only key is KeySharedScratch, a
// bool: engines initialized afterwards use the shared scratch pool (each
// engine keeps the setting in force at its init). A non-bool value is
// InvalidArgument; unknown keys are ignored.
func (b *TensorRTBackend) SetOptions(opts ...Option) error {
	for _, o := range opts {
		if o.Key != KeySharedScratch {
			continue
		}
		on, ok := o.Value.Bool()
		if !ok {
			return errorf(CodeInvalidArgument, "%s must be a bool, got the %s %s", KeySharedScratch, o.Value.Kind(), o.Value)
		}
		b.shared.Store(on)
	}
	return nil
}

// trtHandle is one initialized TensorRT delegate.
type trtHandle struct {
	mu     sync.Mutex // serializes Destroy
	engine Engine
	ctx    Context // nil after Destroy
}

// Init implements Backend, following TensorRTBackend::init step by step.
func (b *TensorRTBackend) Init(ictx *InitContext, payload *pte.Payload, specs []*pte.CompileSpec) (Handle, error) {
	log := ictx.Logger
	view, err := readBlob(log, payload)
	if err != nil {
		return nil, err
	}
	plan := Plan{Device: int(view.DeviceID), Inputs: view.Inputs, Outputs: view.Outputs, BudgetPlan: BudgetPlan{Source: SourceAutomatic}}
	if len(view.Inputs) == 0 && len(view.Outputs) == 0 {
		plan.Notes = append(plan.Notes, "the blob names no bindings: upstream infers them from the engine's I/O tensor names, so whether the load succeeds depends on the engine (not modelled here); aliased_io is checked against the inferred names after that")
	}
	if view.DeviceID < 0 {
		log.Error("TensorRTBackend::init: cudaSetDevice failed", slog.Int("device", int(view.DeviceID)))
		return nil, errorf(CodeInvalidProgram, "cudaSetDevice(%d) failed: invalid device ordinal", view.DeviceID)
	}
	engine, err := b.factory.Deserialize(int(view.DeviceID), io.NewSectionReader(payload, int64(view.EngineOffset), int64(view.EngineSize)))
	if err != nil || engine == nil {
		log.Error("TensorRTBackend::init: failed to deserialize TensorRT engine", slog.Any("error", err))
		return nil, wrapError(CodeInvalidProgram, "failed to deserialize TensorRT engine", err)
	}
	ok := false
	defer func() {
		if !ok {
			engine.Close()
		}
	}()
	// From here on every outcome is reported, as it stands when Init
	// returns: a failure's plan says how far the engine got.
	defer ictx.ReportPlan(&plan)

	res, err := ResolveBudget(ictx.RuntimeSpecs, specs)
	for _, n := range res.Notes {
		log.Error("TensorRTBackend::init: " + n)
	}
	plan.Notes = append(plan.Notes, res.Notes...)
	if err != nil {
		e := err.(*Error)
		log.Error("TensorRTBackend::init: "+e.Msg, slog.Any("error", e.Err))
		plan.Source, plan.Reason = res.Source, "load fails: "+e.Msg
		if e.Err != nil {
			plan.Reason += ": " + e.Err.Error()
		}
		return nil, e
	}
	if err := applyBudget(log, engine, res, &plan); err != nil {
		return nil, err
	}

	h := &trtHandle{engine: engine}
	plan.SharedScratch = b.shared.Load()
	// applyBudget noted an unknown streamable size.
	if _, _, scratchKnown := knownFacts(engine); scratchKnown {
		plan.Scratch = new(engine.ScratchSize())
	} else {
		plan.Assumed = appendOnce(plan.Assumed, FactScratch)
	}
	h.ctx, err = engine.CreateContext(ContextOptions{UserManagedScratch: plan.SharedScratch})
	if err != nil || h.ctx == nil {
		log.Error("TensorRTBackend::init: failed to create execution context", slog.Any("error", err))
		return nil, wrapError(CodeInvalidProgram, "failed to create execution context", err)
	}
	if err := checkEngineIO(log, engine, view, &plan); err != nil {
		h.ctx.Close()
		return nil, err
	}
	log.Info("TensorRTBackend::init: TensorRT engine ready",
		slog.Int("inputs", len(view.Inputs)), slog.Int("outputs", len(view.Outputs)), slog.Bool("shared_scratch", plan.SharedScratch))
	ok = true
	return h, nil
}

// readBlob reads a TensorRT blob as the deployed C++ reader does and
// refuses what its init refuses.
func readBlob(log *slog.Logger, payload *pte.Payload) (*delegate.DeployedView, error) {
	if payload == nil {
		return nil, errorf(CodeInvalidArgument, "null processed buffer")
	}
	view, err := delegate.ReadDeployed(payload, payload.Size())
	if err != nil {
		return nil, wrapError(CodeInvalidProgram, "failed to read TensorRT blob", err)
	}
	if view.MetadataUnread {
		// Not a parse failure: ptekit stopped short of what the deployed
		// reader does, so the load outcome is unknown.
		log.Warn("TensorRTBackend::init: TensorRT blob metadata not read by ptekit; the deployed load outcome is unknown",
			slog.Uint64("metadata_size", uint64(view.MetadataSize)), slog.Int("limit", delegate.MaxMetadataSize))
		return nil, wrapError(CodeNotSupported, fmt.Sprintf("TensorRT blob metadata of %d bytes (at blob byte %d) is larger than the %d bytes ptekit reads",
			view.MetadataSize, view.MetadataOffset, delegate.MaxMetadataSize), ErrOutcomeUnknown)
	}
	if why := view.InitRefusal(); why != "" {
		// A wrapping engine range upstream accepts and hands TensorRT an
		// out-of-bounds range; ptekit refuses it with the parse failures.
		log.Error("TensorRTBackend::init: failed to parse TensorRT blob", slog.String("reason", why))
		return nil, errorf(CodeInvalidProgram, "%s", why)
	}
	return view, nil
}

// checkEngineIO makes init's steps 10 (aliased_io mapping) and 11 (input
// profiles): every aliased pair names an existing output and input and has
// a known kind; with an engine that describes its tensors (EngineTensors),
// a kv_cache_update pair must be the engine's own alias, a user pair must
// have equal shapes, and no input may be a shape tensor. Failures are
// InvalidProgram.
func checkEngineIO(log *slog.Logger, engine Engine, view *delegate.DeployedView, plan *Plan) error {
	fail := func(format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		log.Error("TensorRTBackend::init: " + msg)
		plan.Notes = append(plan.Notes, "load fails: "+msg)
		return errorf(CodeInvalidProgram, "%s", msg)
	}
	tensors, described := engine.(EngineTensors)
	if len(view.Inputs) == 0 && len(view.Outputs) == 0 && len(view.AliasedIO) > 0 {
		// Upstream checks aliased_io against the binding names it infers
		// from the engine, which no Engine here reports.
		msg := "the blob names no bindings, so its aliased_io is checked against the engine's own I/O tensor names, which ptekit cannot read"
		log.Warn("TensorRTBackend::init: " + msg)
		plan.Notes = append(plan.Notes, "load outcome unknown: "+msg)
		return wrapError(CodeNotSupported, msg, ErrOutcomeUnknown)
	}
	for _, a := range view.AliasedIO {
		if !slices.Contains(view.Outputs, a.Output) || !slices.Contains(view.Inputs, a.Input) {
			return fail("aliased_io names not found (output=%s, input=%s)", quote.String(a.Output), quote.String(a.Input))
		}
		switch {
		case a.Kind != delegate.KindKVCacheUpdate && a.Kind != delegate.KindUser:
			return fail("aliased_io entry for output %s has unknown kind %s", quote.String(a.Output), quote.String(a.Kind))
		case !described:
		case a.Kind == delegate.KindKVCacheUpdate:
			if got := tensors.AliasedInputTensor(a.Output); got != a.Input {
				return fail("kv_cache_update alias for output %s disagrees with the engine (engine aliases %s, blob says %s)", quote.String(a.Output), quote.String(got), quote.String(a.Input))
			}
		default:
			if o, i := tensors.TensorShape(a.Output), tensors.TensorShape(a.Input); o == nil || !slices.Equal(o, i) {
				return fail("user alias output %s shape %v is incompatible with input %s shape %v", quote.String(a.Output), o, quote.String(a.Input), i)
			}
		}
	}
	if described {
		for _, in := range view.Inputs {
			if tensors.IsShapeTensor(in) {
				return fail("shape tensor input %s is not supported", quote.String(in))
			}
		}
	} else if len(view.AliasedIO) > 0 {
		plan.Notes = append(plan.Notes, "aliased_io kinds and names checked; their agreement with the engine is not (the engine does not describe its tensors)")
	}
	if len(view.AliasedIO) > 0 {
		log.Info("TensorRTBackend::init: aliased output(s) bound in-place to caller-owned inputs", slog.Int("aliased", len(view.AliasedIO)))
	}
	return nil
}

func knownFacts(e Engine) (streamable, automatic, scratch bool) {
	if f, ok := e.(FactsReporter); ok {
		return f.KnownFacts()
	}
	return true, true, true
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// applyBudget applies a resolved budget to engine the way
// TensorRTBackend::init does and fills in plan.
func applyBudget(log *slog.Logger, engine Engine, res Resolution, plan *Plan) error {
	plan.Source = res.Source
	if res.Explicit {
		plan.Requested = new(res.Bytes)
	}
	streamKnown, autoKnown, _ := knownFacts(engine)
	if !streamKnown {
		plan.Assumed = appendOnce(plan.Assumed, FactStreamable)
		if res.Explicit {
			plan.Reason = fmt.Sprintf("budget %d bytes requested; the applied budget is that clamped to the engine's streamable weight size, which is not known (none applies if the engine has no streamable weights)", res.Bytes)
		} else {
			plan.Reason = "automatic budget chosen by TensorRT on the device; not known without the engine"
		}
		return nil
	}
	streamable := engine.StreamableWeightsSize()
	plan.Streamable = new(streamable)
	plan.Streaming = new(streamable > 0)
	if streamable <= 0 {
		if res.Explicit {
			log.Error("TensorRTBackend::init: "+msgNotStreamable, slog.Int64("requested", res.Bytes))
			plan.Reason = "engine has no streamable weights: the requested budget is ignored and all weights stay resident"
		} else {
			plan.Reason = "engine has no streamable weights: all weights stay resident"
		}
		return nil
	}
	var budget int64
	if res.Explicit {
		budget = min(res.Bytes, streamable)
	} else {
		if !autoKnown {
			plan.Assumed = appendOnce(plan.Assumed, FactAutomatic)
			plan.Reason = "automatic budget chosen by TensorRT on the device; not known without a GPU"
			return nil
		}
		budget = engine.AutomaticBudget()
	}
	if !engine.SetBudget(budget) {
		if res.Explicit || !engine.SetBudget(0) {
			suffix := ""
			if !res.Explicit {
				suffix = ", and fallback to 0 also failed"
			}
			log.Error("TensorRTBackend::init: setWeightStreamingBudgetV2 failed", slog.Int64("requested", budget), slog.Bool("explicit", res.Explicit))
			plan.Reason = fmt.Sprintf("the engine refused budget %d%s", budget, suffix)
			return errorf(CodeInvalidProgram, "setWeightStreamingBudgetV2 failed (requested=%d%s)", budget, suffix)
		}
		log.Info("TensorRTBackend::init: " + msgAutomaticFallback)
		plan.Notes = append(plan.Notes, fmt.Sprintf("the engine refused the automatic budget %d", budget))
		plan.Reason = "automatic budget could not be set; fell back to 0 (stream all weights)"
	} else {
		switch {
		case res.Explicit && budget < res.Bytes:
			plan.Reason = fmt.Sprintf("requested budget clamped to the streamable weight size %d", streamable)
		case res.Explicit:
			plan.Reason = "requested budget applied"
		default:
			plan.Reason = "automatic budget applied"
		}
	}
	applied := engine.Budget()
	plan.Applied = new(applied)
	log.Info("TensorRTBackend::init: weight streaming budget",
		slog.String("source", string(res.Source)), slog.Int64("budget", applied), slog.Int64("streamable", streamable),
		slog.Int64("scratch", engine.ScratchSize()))
	return nil
}

// Destroy implements Backend: it releases the context and the engine.
func (b *TensorRTBackend) Destroy(h Handle) {
	th, ok := h.(*trtHandle)
	if !ok || th == nil {
		return
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	if th.ctx != nil {
		th.ctx.Close()
		th.ctx = nil
	}
	if th.engine != nil {
		th.engine.Close()
		th.engine = nil
	}
}
