package executor

import "io"

// Engine facts a stand-in engine may be told (StandIn) and a plan may lack
// (ProgramPlan.Assumed, Plan.Assumed).
const (
	FactStreamable = "streamable" // the streamable weight size
	FactScratch    = "scratch"    // the activation scratch size
	FactAutomatic  = "automatic"  // TensorRT's automatic budget
)

// StandIn is an EngineFactory for planning without a GPU. Its engines take
// the streamable weight size, activation scratch size and automatic budget
// stated here (nil: not stated, so every figure depending on it stays
// unknown in the plan), accept any budget between 0 and the streamable
// size, and have no aliased outputs or shape-tensor inputs they could
// report.
type StandIn struct {
	// Streamable is the engine's streamable weight size in bytes; nil
	// means not stated.
	Streamable *int64
	// Scratch is the activation scratch an execution context needs, in
	// bytes; nil means not stated.
	Scratch *int64
	// Automatic is the automatic budget; on a GPU TensorRT computes it
	// from the free device memory.
	Automatic *int64
}

// Deserialize implements EngineFactory. The engine bytes are not read.
func (s StandIn) Deserialize(device int, engine *io.SectionReader) (Engine, error) {
	e := &standInEngine{}
	e.streamable, e.streamKnown = stated(s.Streamable)
	e.scratch, e.scratchKnown = stated(s.Scratch)
	e.automatic, e.autoKnown = stated(s.Automatic)
	return e, nil
}

// stated is a stated fact, at least 0, and whether it was stated.
func stated(p *int64) (int64, bool) {
	if p == nil {
		return 0, false
	}
	return max(*p, 0), true
}

type standInEngine struct {
	streamable, scratch, automatic, budget int64
	streamKnown, scratchKnown, autoKnown   bool
}

func (e *standInEngine) KnownFacts() (streamable, automatic, scratch bool) {
	return e.streamKnown, e.autoKnown, e.scratchKnown
}
func (e *standInEngine) StreamableWeightsSize() int64 { return e.streamable }
func (e *standInEngine) AutomaticBudget() int64       { return e.automatic }
func (e *standInEngine) SetBudget(n int64) bool {
	if n < 0 || n > e.streamable {
		return false
	}
	e.budget = n
	return true
}
func (e *standInEngine) Budget() int64      { return e.budget }
func (e *standInEngine) ScratchSize() int64 { return e.scratch }
func (e *standInEngine) CreateContext(ContextOptions) (Context, error) {
	return standInContext{}, nil
}
func (e *standInEngine) Close() error { return nil }

type standInContext struct{}

func (standInContext) Close() error { return nil }
