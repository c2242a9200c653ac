// Package flattensor is the Go code flatc generates from schema/flat_tensor.fbs
// (the FlatTensor root table of .ptd external data files, identifier "FT01").
//
// The accessors trust their input: they panic, or allocate what a length
// field says, on malformed bytes. Only package ptd calls them, and only on
// bytes its verifier has passed.
//
// flatc 2.0.8 qualifies the ScalarType enum, which scalar_type.fbs declares
// in another FlatBuffers namespace, with that namespace's name even in
// --gen-onefile output, which does not compile; go:generate strips the
// qualifier (the enum is generated into this package by --gen-all).
// TestGeneratedCodeIsCurrent applies the same steps.
package flattensor

//go:generate flatc --go --go-namespace flattensor --gen-onefile --gen-all -o . ../../../schema/flat_tensor.fbs
//go:generate sed -i s/executorch_flatbuffer\.//g flat_tensor_generated.go
//go:generate gofmt -w flat_tensor_generated.go
