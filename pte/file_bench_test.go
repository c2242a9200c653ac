package pte

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/ptekit/ptekit/internal/fbs/program"
	"github.com/ptekit/ptekit/internal/testkit"
)

// rdTestProgram builds, with the generated schema builders, a one-method
// program whose n TensorRT-like delegates each live in their own segment of
// segSize bytes, and returns the file's bytes up to the end of the flatbuffer
// region plus the full file size and each segment's absolute offset. Segment
// bytes are not materialised (callers write them or leave the file sparse).
func rdTestProgram(n int, segSize uint64) (head []byte, size int64, segOffs []int64) {
	b := flatbuffers.NewBuilder(1024)
	str := func(s string) flatbuffers.UOffsetT { return b.CreateString(s) }
	i32s := func(xs ...int32) flatbuffers.UOffsetT {
		b.StartVector(4, len(xs), 4)
		for i := len(xs) - 1; i >= 0; i-- {
			b.PrependInt32(xs[i])
		}
		return b.EndVector(len(xs))
	}
	tables := func(xs []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
		b.StartVector(4, len(xs), 4)
		for i := len(xs) - 1; i >= 0; i-- {
			b.PrependUOffsetT(xs[i])
		}
		return b.EndVector(len(xs))
	}
	// Two float tensors [1, 4].
	var values []flatbuffers.UOffsetT
	for range 2 {
		sizes := i32s(1, 4)
		b.StartVector(1, 2, 1)
		b.PrependByte(1)
		b.PrependByte(0)
		dims := b.EndVector(2)
		program.TensorStart(b)
		program.TensorAddScalarType(b, program.ScalarTypeFLOAT)
		program.TensorAddSizes(b, sizes)
		program.TensorAddDimOrder(b, dims)
		t := program.TensorEnd(b)
		program.EValueStart(b)
		program.EValueAddValType(b, program.KernelTypesTensor)
		program.EValueAddVal(b, t)
		values = append(values, program.EValueEnd(b))
	}
	var delegates, instrs []flatbuffers.UOffsetT
	for i := range n {
		key, val := str("weight_streaming_budget"), b.CreateByteVector([]byte("1073741824"))
		program.CompileSpecStart(b)
		program.CompileSpecAddKey(b, key)
		program.CompileSpecAddValue(b, val)
		spec := program.CompileSpecEnd(b)
		specs := tables([]flatbuffers.UOffsetT{spec})
		program.BackendDelegateDataReferenceStart(b)
		program.BackendDelegateDataReferenceAddLocation(b, program.DataLocationSEGMENT)
		program.BackendDelegateDataReferenceAddIndex(b, uint32(i+1))
		ref := program.BackendDelegateDataReferenceEnd(b)
		id := str("TensorRTBackend")
		program.BackendDelegateStart(b)
		program.BackendDelegateAddId(b, id)
		program.BackendDelegateAddProcessed(b, ref)
		program.BackendDelegateAddCompileSpecs(b, specs)
		delegates = append(delegates, program.BackendDelegateEnd(b))
		args := i32s(0, 1)
		program.DelegateCallStart(b)
		program.DelegateCallAddDelegateIndex(b, int32(i))
		program.DelegateCallAddArgs(b, args)
		call := program.DelegateCallEnd(b)
		program.InstructionStart(b)
		program.InstructionAddInstrArgsType(b, program.InstructionArgumentsDelegateCall)
		program.InstructionAddInstrArgs(b, call)
		instrs = append(instrs, program.InstructionEnd(b))
	}
	instrVec := tables(instrs)
	empty := i32s()
	program.ChainStart(b)
	program.ChainAddInputs(b, empty)
	program.ChainAddOutputs(b, empty)
	program.ChainAddInstructions(b, instrVec)
	chain := program.ChainEnd(b)
	name, vals, ins, outs := str("forward"), tables(values), i32s(0), i32s(1)
	chains, ops, dels := tables([]flatbuffers.UOffsetT{chain}), tables(nil), tables(delegates)
	b.StartVector(8, 1, 8)
	b.PrependInt64(0)
	ncbs := b.EndVector(1)
	program.ExecutionPlanStart(b)
	program.ExecutionPlanAddName(b, name)
	program.ExecutionPlanAddValues(b, vals)
	program.ExecutionPlanAddInputs(b, ins)
	program.ExecutionPlanAddOutputs(b, outs)
	program.ExecutionPlanAddChains(b, chains)
	program.ExecutionPlanAddOperators(b, ops)
	program.ExecutionPlanAddDelegates(b, dels)
	program.ExecutionPlanAddNonConstBufferSizes(b, ncbs)
	plan := program.ExecutionPlanEnd(b)

	// Segment 0 is the empty constant segment; 1..n hold the engines.
	const align = 128
	var segs []flatbuffers.UOffsetT
	var rel []uint64
	cursor := uint64(0)
	for i := 0; i <= n; i++ {
		sz := segSize
		if i == 0 {
			sz = 0
		}
		rel = append(rel, cursor)
		program.DataSegmentStart(b)
		program.DataSegmentAddOffset(b, cursor)
		program.DataSegmentAddSize(b, sz)
		segs = append(segs, program.DataSegmentEnd(b))
		cursor = (cursor + sz + align - 1) / align * align
	}
	dataSize := rel[n] + segSize
	b.StartVector(8, 1, 8)
	b.PrependUint64(0)
	offs := b.EndVector(1)
	program.SubsegmentOffsetsStart(b)
	program.SubsegmentOffsetsAddOffsets(b, offs)
	cs := program.SubsegmentOffsetsEnd(b)
	plans, segVec, cbuf, bdd := tables([]flatbuffers.UOffsetT{plan}), tables(segs), tables(nil), tables(nil)
	program.ProgramStart(b)
	program.ProgramAddExecutionPlan(b, plans)
	program.ProgramAddConstantBuffer(b, cbuf)
	program.ProgramAddBackendDelegateData(b, bdd)
	program.ProgramAddSegments(b, segVec)
	program.ProgramAddConstantSegment(b, cs)
	b.FinishWithFileIdentifier(program.ProgramEnd(b), []byte("ET12"))
	fb := b.FinishedBytes()

	// Insert the 32-byte eh00 header after the prefix; only the root offset
	// moves, every other flatbuffer offset is relative.
	const h = 32
	programSize := uint64(len(fb) + h)
	base := (programSize + align - 1) / align * align
	head = make([]byte, base)
	copy(head, fb[:8])
	binary.LittleEndian.PutUint32(head, binary.LittleEndian.Uint32(fb)+h)
	copy(head[8:], "eh00")
	binary.LittleEndian.PutUint32(head[12:], 32)
	binary.LittleEndian.PutUint64(head[16:], programSize)
	binary.LittleEndian.PutUint64(head[24:], base)
	binary.LittleEndian.PutUint64(head[32:], dataSize)
	copy(head[8+h:], fb[8:])
	for _, r := range rel[1:] {
		segOffs = append(segOffs, int64(base+r))
	}
	return head, int64(base + dataSize), segOffs
}

// rdWriteTestProgram writes rdTestProgram's file to path, sparse: only the
// flatbuffer region and a "TR01" magic at each engine segment are written.
func rdWriteTestProgram(tb testing.TB, path string, n int, segSize uint64) {
	tb.Helper()
	head, size, segOffs := rdTestProgram(n, segSize)
	fh, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteAt(head, 0); err != nil {
		tb.Fatal(err)
	}
	for _, o := range segOffs {
		if _, err := fh.WriteAt([]byte("TR01"), o); err != nil {
			tb.Fatal(err)
		}
	}
	if err := fh.Truncate(size); err != nil {
		tb.Fatal(err)
	}
}

// TestTestProgram checks the benchmark's generated program: it opens,
// verifies clean and resolves every delegate to its segment.
func TestTestProgram(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.pte")
	rdWriteTestProgram(t, path, 3, 1000)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, fd := range f.Verify() {
		if fd.Severity == SeverityError {
			t.Error(fd)
		}
	}
	if got := len(f.Program.Plan(0).Delegates); got != 3 {
		t.Fatalf("%d delegates, want 3", got)
	}
	for j := range 3 {
		pl, err := f.DelegateData(0, j)
		if err != nil {
			t.Fatal(err)
		}
		data, err := pl.Data()
		if err != nil || len(data) != 1000 || string(data[:4]) != "TR01" {
			t.Fatalf("delegate %d: %d bytes %q, err %v", j, len(data), data[:4], err)
		}
	}
}

// benchOpenFile writes a generated program with 64 segment delegates of
// total size total and returns it opened through a byte counter.
func benchOpenFile(b *testing.B, total uint64) (*testkit.CountingReaderAt, int64) {
	const n = 64
	path := filepath.Join(b.TempDir(), fmt.Sprintf("bench%d.pte", total))
	rdWriteTestProgram(b, path, n, total/n)
	return testkit.OpenCounting(b, path)
}

// benchOpenOnce opens the program and lists it (listProgram).
func benchOpenOnce(b *testing.B, r io.ReaderAt, size int64) {
	f, err := NewFile(r, size)
	if err != nil {
		b.Fatal(err)
	}
	if specs := listProgram(b, f); specs != 64 {
		b.Fatalf("%d compile specs, want 64", specs)
	}
}

// maxOpenBytes is the most an open may read, whatever the file size.
const maxOpenBytes = 1 << 20

// benchmarkOpen times benchOpenOnce on a program of total segment bytes and
// fails when an open reads maxOpenBytes or more.
func benchmarkOpen(b *testing.B, total uint64) {
	cr, size := benchOpenFile(b, total)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		benchOpenOnce(b, cr, size)
	}
	perOp := float64(cr.Bytes()) / float64(b.N)
	b.ReportMetric(perOp, "bytes-read/op")
	if perOp >= maxOpenBytes {
		b.Fatalf("an open read %.0f bytes, the limit is %d", perOp, maxOpenBytes)
	}
}

// BenchmarkOpen2MiB opens a 2 MiB program with 64 engines.
func BenchmarkOpen2MiB(b *testing.B) { benchmarkOpen(b, 2<<20) }

// BenchmarkOpen2GiB opens a 2 GiB (sparse) program with 64 engines; it must
// read under 1 MiB (checked) and take about as long as BenchmarkOpen2MiB
// (see BenchmarkOpenRatio).
func BenchmarkOpen2GiB(b *testing.B) { benchmarkOpen(b, 2<<30) }

// BenchmarkOpenRatio opens the 2 MiB and the 2 GiB program alternately, so
// that both see the same machine load, and reports the time of a 2 GiB open
// over that of a 2 MiB open (ratio-2GiB/2MiB; the target is at most 1.5) and
// the bytes each open read.
func BenchmarkOpenRatio(b *testing.B) {
	small, smallSize := benchOpenFile(b, 2<<20)
	large, largeSize := benchOpenFile(b, 2<<30)
	var tSmall, tLarge time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		benchOpenOnce(b, small, smallSize)
		mid := time.Now()
		benchOpenOnce(b, large, largeSize)
		tSmall += mid.Sub(start)
		tLarge += time.Since(mid)
	}
	b.ReportMetric(float64(tLarge)/float64(tSmall), "ratio-2GiB/2MiB")
	b.ReportMetric(float64(small.Bytes())/float64(b.N), "bytes-read-2MiB/op")
	large2 := float64(large.Bytes()) / float64(b.N)
	b.ReportMetric(large2, "bytes-read-2GiB/op")
	if large2 >= maxOpenBytes {
		b.Fatalf("a 2 GiB open read %.0f bytes, the limit is %d", large2, maxOpenBytes)
	}
}

// TestOpenFuzzSeeds keeps testdata/fuzz/FuzzOpen in step with the generator;
// -update rewrites the seeds.
func TestOpenFuzzSeeds(t *testing.T) {
	small, _, segOffs := rdTestProgram(2, 40)
	full := make([]byte, int(segOffs[1])+40)
	copy(full, small)
	for _, o := range segOffs {
		copy(full[o:], "TR01")
	}
	seeds := map[string][]byte{"two_segment_delegates": full, "flatbuffer_only": small[:len(small)-8]}
	dir := filepath.Join("testdata", "fuzz", "FuzzOpen")
	for name, data := range seeds {
		testkit.Golden(t, filepath.Join(dir, name), testkit.FuzzCorpusFile(data))
	}
}
