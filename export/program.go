package export

import (
	"io"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/pte"
)

// Program describes the program to build: one entry per method.
type Program struct {
	Methods []*Method
}

// Method describes one method (ExecutionPlan) of the program.
//
// Every tensor of a method has a unique name and is declared exactly once,
// where it is produced: a method input, or an output binding of an engine
// call. Everywhere else it is referred to by name; a consumer (an engine
// input binding, a method output) may repeat the dtype and shape, and they
// must then agree with the producer's.
type Method struct {
	// Name is the method name, e.g. "forward".
	Name string
	// Inputs are the method's input tensors in call order. Each needs a
	// DType and a Shape.
	Inputs []*Tensor
	// Outputs are the method's output tensors in return order. Only Name is
	// required; a DType or Shape given here is checked against the producer.
	Outputs []*Tensor
	// Calls are the engine calls, run in this order. Each becomes its own
	// TensorRTBackend delegate.
	Calls []*EngineCall
	// CompileSpecs are extra compile specs for every delegate of this method,
	// written after Options.CompileSpecs. The weight_streaming_budget key is
	// refused here: use Options.WeightStreamingBudget.
	CompileSpecs []*pte.CompileSpec
}

// Tensor is a named tensor with an element type and a shape.
type Tensor struct {
	Name string
	// DType is the element type; "" means "as declared by the producer".
	DType DType
	// Shape is the static shape. A dimension of -1 is dynamic; MaxShape
	// must then give its upper bound. nil means "as declared by the
	// producer" (a rank-0 tensor has a non-nil empty Shape).
	Shape []int64
	// MaxShape, when non-nil, makes the tensor's shape dynamic with these
	// upper bounds (ExecuTorch DYNAMIC_BOUND): memory is planned for
	// MaxShape. It has the rank of Shape, and each bound is at least the
	// static dimension it bounds.
	MaxShape []int64
}

// Binding connects a TensorRT engine I/O tensor to a method tensor.
type Binding struct {
	// Name is the TensorRT I/O tensor (binding) name. For a Blob source it
	// may be left empty to take the name from the blob.
	Name string
	// Tensor is the method tensor bound to it; "" means the same as Name.
	Tensor string
	// DType, Shape and MaxShape declare the tensor for an output binding
	// (required there) and are optional checks for an input binding.
	DType    DType
	Shape    []int64
	MaxShape []int64
}

// AliasedIO declares that an engine output is written in place into one of
// its inputs (TensorRT blob "aliased_io").
type AliasedIO struct {
	Output string // output binding name
	Input  string // input binding name
	Kind   string // "kv_cache_update" or "user"
}

// EngineCall is one call of a serialized TensorRT engine.
type EngineCall struct {
	// Name labels the call in errors and summaries; it defaults to the
	// engine file name or "calls[i]".
	Name string
	// Engine is where the engine (or an existing delegate blob) comes from.
	Engine Source
	// Inputs are the engine's input bindings in the order the delegate
	// receives them; Outputs its output bindings in engine output order.
	Inputs  []*Binding
	Outputs []*Binding
	// DeviceID is the CUDA device the engine runs on; it is written to the
	// blob and gives the derived target_device "cuda:<DeviceID>".
	DeviceID int
	// HardwareCompatible records that the engine was built hardware
	// compatible.
	HardwareCompatible bool
	// AliasedIO lists outputs written in place into inputs.
	AliasedIO []AliasedIO
	// SerializedMetadata and TargetPlatform are copied into the blob
	// metadata verbatim; the runtime does not read them.
	SerializedMetadata string
	TargetPlatform     string
}

// SourceKind says what the bytes of a Source are.
type SourceKind int

const (
	// SourceEngine is a serialized TensorRT engine (plan file); the exporter
	// wraps it in a TensorRT delegate blob.
	SourceEngine SourceKind = iota
	// SourceBlob is an existing TensorRT delegate blob (TR01/TR02), passed
	// through unchanged. Its binding names, device id, hardware
	// compatibility and aliased_io come from the blob; the EngineCall must
	// leave DeviceID, HardwareCompatible, AliasedIO, SerializedMetadata and
	// TargetPlatform at their zero values.
	SourceBlob
)

// Source locates engine bytes: a file (Path) or a reader (ReaderAt and
// Size). Bytes are read only while the program is written, never held in
// memory as a whole.
type Source struct {
	Kind     SourceKind
	Path     string
	ReaderAt io.ReaderAt
	Size     int64
}

// EngineFile returns a Source for a serialized TensorRT engine file.
func EngineFile(path string) Source { return Source{Kind: SourceEngine, Path: path} }

// EngineReader returns a Source for size bytes of a serialized engine.
func EngineReader(r io.ReaderAt, size int64) Source {
	return Source{Kind: SourceEngine, ReaderAt: r, Size: size}
}

// BlobFile returns a Source for a file holding an existing TensorRT
// delegate blob.
func BlobFile(path string) Source { return Source{Kind: SourceBlob, Path: path} }

// MaxSegmentAlignment is the largest segment alignment accepted, 1 MiB.
// Every segment is padded to the alignment, so a larger value mostly adds
// zeros to the file; ExecuTorch's defaults (128 bytes, 4 KiB before
// 2024-08) and the largest memory page size in use (64 KiB) are well below.
const MaxSegmentAlignment = 1 << 20

// NoHeadRoom as Options.HeadRoom reserves no head room: the segment base
// is where ExecuTorch's layout puts it.
const NoHeadRoom = -1

// DefaultHeadRoom is the head room reserved for a program of n TensorRT
// delegates: 64 bytes each (adding a weight_streaming_budget compile spec
// of the longest value, 19 digits, to a delegate adds 40 bytes of tables,
// and the shared key 32 more once) and 1 KiB of slack. 64 delegates get
// 5 KiB.
func DefaultHeadRoom(n int) uint64 { return 1024 + 64*uint64(max(n, 0)) }

// Options controls how a Program is written.
type Options struct {
	// WeightStreamingBudget is the per-engine weight streaming budget,
	// written as the weight_streaming_budget compile spec on every TensorRT
	// delegate of every method. compilespec.AutoBudget (the zero value)
	// writes no key, which leaves TensorRT's automatic budget in force.
	WeightStreamingBudget compilespec.Budget
	// TargetDevice, when non-empty, is written verbatim as the target_device
	// compile spec of every delegate instead of "cuda:<device id>".
	TargetDevice string
	// CompileSpecs are extra compile specs written first on every delegate
	// of every method. A target_device entry here pins the device like
	// TargetDevice does (the two may not both be given).
	CompileSpecs []*pte.CompileSpec
	// InlineDelegateData stores delegate blobs inside the flatbuffer instead
	// of in segments after it, up to MaxInlineDelegateData in total (Write
	// refuses more).
	InlineDelegateData bool
	// SegmentAlignment is the alignment of segment data in bytes; 0 means
	// 128 (ExecuTorch's default). It need not be a power of two (ExecuTorch
	// does not require one) but may not exceed MaxSegmentAlignment. When
	// it divides 4096, an engine of 64 KiB or more is placed so that it
	// lands on a page of the output, where the kernel can copy it
	// (pte.WriteOptions.PageCongruent); its blob then starts 16-aligned.
	SegmentAlignment uint64
	// HeadRoom is the padding reserved between the program's tables and
	// its segments, so that a later in-place re-bake (RebakeOptions.InPlace)
	// that adds a compile spec to every delegate still fits before the
	// segment base and writes only the head (pte.WriteOptions.HeadRoom). 0
	// means DefaultHeadRoom for the program's delegates, NoHeadRoom none;
	// otherwise from pte.MinHeadRoom (the least a re-bake recognises and
	// keeps) to pte.MaxHeadRoom. A program without segments (all data
	// inline) has no segment base and gets no room.
	HeadRoom int64
	// Progress, when non-nil, is called by WriteFile when the output file
	// is created, about five times a second while it is written, and at
	// the end, with the bytes written so far and the expected total (an
	// estimate until the end). Write does not call it.
	Progress func(written, total int64)
	// NoOverwrite makes WriteFile refuse to replace an existing file. The
	// check is atomic with putting the new file in place; the error wraps
	// fs.ErrExist.
	NoOverwrite bool
	// Inputs are more files the program is made from (pteexport passes its
	// manifest). WriteFile refuses, with an *InputError and whatever
	// NoOverwrite says, an output that is one of them or one of the engine
	// and blob files the program names: by path, symbolic link or hard link.
	Inputs []string
}

// Result summarizes a written program.
type Result struct {
	// Path is the output file (empty for Write).
	Path string
	// Size is the number of bytes written.
	Size int64
	// Methods lists the methods in program order.
	Methods []MethodSummary
	// Delegates is the number of TensorRTBackend delegates in the program;
	// Blobs the number of distinct blobs stored (identical blobs are stored
	// once).
	Delegates int
	Blobs     int
	// Budget is the weight_streaming_budget that every TensorRTBackend
	// delegate of the written program holds; nil when none holds one, or
	// when they hold different budgets (a re-bake that keeps the input's
	// budgets), which MixedBudgets then reports. MethodSummary.Engines has
	// each delegate's.
	Budget       *int64
	MixedBudgets bool
	// TargetDevice is the target_device value that every TensorRTBackend
	// delegate holds; "" when they differ or none holds one.
	TargetDevice string
	// Warnings are the conditions worth a user's attention.
	Warnings []Warning
	// InPlace is true when a re-bake rewrote only the head of the file
	// where it is (RebakeOptions.InPlace); Rewritten is then the number of
	// bytes it wrote (0 when the file already held the result), and Size
	// the size of the file.
	InPlace   bool
	Rewritten int64
	// Object is true when the output is an object in a store
	// (RebakeObject, WriteObject); Uploaded is then the number of bytes sent to the
	// store and Copied the number the store copied from the input on its
	// side (an in-store re-bake).
	Object           bool
	Uploaded, Copied int64
}

// MethodSummary describes one method of a written program.
type MethodSummary struct {
	Name string
	// Delegates is the number of TensorRTBackend delegates.
	Delegates int
	// PlannedBytes is the size of the method's planned memory (the sum of
	// non_const_buffer_sizes).
	PlannedBytes int64
	// Engines describes the method's TensorRTBackend delegates in delegate
	// order, as written.
	Engines []EngineSummary
}

// EngineSummary describes the compile specs of one TensorRTBackend
// delegate, as written.
type EngineSummary struct {
	// Budget is its weight_streaming_budget; nil when it has none (TensorRT
	// then chooses the budget), or one the TensorRT delegate refuses, which
	// is also reported as a WarnBadBudgetSpec warning.
	Budget *int64
	// TargetDevice is its target_device value, "" when it has none.
	TargetDevice string
}
