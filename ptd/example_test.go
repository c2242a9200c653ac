package ptd_test

import (
	"bytes"
	"fmt"
	"io"

	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// A program with one external constant "weight", resolved against a data
// file that holds it and one that does not.
func Example() {
	payload := make([]byte, 16)
	var buf bytes.Buffer
	_, err := ptd.Write(&buf, &ptd.Data{
		NamedData: []ptd.NamedData{{Key: "weight", Layout: &ptd.TensorLayout{
			ScalarType: pte.ScalarType(6), Sizes: []int32{2, 2}, DimOrder: []uint8{0, 1}}}},
		Segments: []*io.SectionReader{io.NewSectionReader(bytes.NewReader(payload), 0, 16)},
	})
	if err != nil {
		panic(err)
	}
	f, err := ptd.NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		panic(err)
	}
	fmt.Println("keys:", f.Keys())

	prog := &pte.Program{}
	prog.SetPlans([]*pte.ExecutionPlan{{Name: "forward", Values: []*pte.EValue{{Val: &pte.Tensor{
		ScalarType: pte.ScalarType(6), Sizes: []int32{2, 2}, DimOrder: []uint8{0, 1},
		ExtraTensorInfo: &pte.ExtraTensorInfo{FullyQualifiedName: "weight", Location: 1}}}}}})
	for _, srcs := range [][]ptd.Source{nil, {{Name: "model.ptd", File: f}}} {
		r := ptd.Resolve(prog, srcs)
		m := r.Methods[0]
		fmt.Printf("%d data files: %s %s\n", len(srcs), m.Name, m.Status)
		for _, row := range m.Tensors {
			fmt.Printf("  %s: file %d, %d bytes at %d\n", row.Key, row.File, row.Size, row.Offset)
		}
	}
	// Output:
	// keys: [weight]
	// 0 data files: forward InvalidState
	//   weight: file -1, -1 bytes at -1
	// 1 data files: forward Ok
	//   weight: file 0, 16 bytes at 208
}
