package pte_test

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/ptekit/ptekit/pte"
)

// Write lays out the segments and inserts the extended header itself; the
// program refers to payloads by their position in the slice.
func ExampleWrite() {
	engine := strings.Repeat("E", 1000) // stands for a TensorRT blob
	p := &pte.Program{
		// Offsets[0] is the placeholder: no constants, segment 0 is empty.
		ConstantSegment: &pte.SubsegmentOffsets{SegmentIndex: 0, Offsets: []uint64{0}},
	}
	p.SetPlans([]*pte.ExecutionPlan{{
		Name:                "forward",
		ContainerMetaType:   &pte.ContainerMetadata{},
		Values:              []*pte.EValue{{Val: &pte.Tensor{ScalarType: pte.ScalarTypeFLOAT, Sizes: []int32{4}, DimOrder: []uint8{0}, AllocationInfo: &pte.AllocationDetails{MemoryID: 1}}}},
		Inputs:              []int32{0},
		Outputs:             []int32{0},
		Chains:              []*pte.Chain{{Instructions: []*pte.Instruction{{Args: &pte.DelegateCall{Args: []int32{0, 0}}}}}},
		Operators:           []*pte.Operator{},
		NonConstBufferSizes: []int64{0, 16},
		Delegates: []*pte.BackendDelegate{{
			ID:        "TensorRTBackend",
			Processed: &pte.BackendDelegateDataReference{Location: pte.DataLocationSEGMENT, Index: 1},
		}},
	}})
	segments := []*io.SectionReader{
		io.NewSectionReader(strings.NewReader(""), 0, 0),
		io.NewSectionReader(strings.NewReader(engine), 0, int64(len(engine))),
	}
	var buf bytes.Buffer
	info, err := pte.Write(&buf, p, segments, nil)
	if err != nil {
		log.Fatal(err)
	}
	h := info.Header
	fmt.Println("base % 128:", h.SegmentBaseOffset%128, "data size:", h.SegmentDataSize)
	for i, s := range info.Segments {
		fmt.Printf("segment %d: offset %d size %d\n", i, s.Offset, s.Size)
	}
	fmt.Println("file size ok:", info.Size == int64(buf.Len()) && info.Size == int64(h.SegmentBaseOffset+h.SegmentDataSize))
	// Output:
	// base % 128: 0 data size: 1000
	// segment 0: offset 0 size 0
	// segment 1: offset 0 size 1000
	// file size ok: true
}

// Re-writing an opened file with its own segments passes every segment
// byte through unchanged while the program (here a compile spec) changes.
func ExampleFile_SegmentReaders() {
	f, err := pte.Open("model.pte")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	for _, d := range f.Program.Plan(0).Delegates {
		d.CompileSpecs = append(d.CompileSpecs, &pte.CompileSpec{Key: "weight_streaming_budget", Value: []byte("1073741824")})
	}
	segments, err := f.SegmentReaders()
	if err != nil {
		log.Fatal(err)
	}
	// WriteFile reads the sources before renaming over model.pte.
	if _, err := pte.WriteFile("model.pte", f.Program, segments, nil); err != nil {
		log.Fatal(err)
	}
}
