// Package schema holds the FlatBuffers schema of ExecuTorch program files
// (program.fbs and scalar_type.fbs, file identifier "ET12") and the Go code
// that flatc generates from it.
//
// The generated accessors trust their input completely: they panic, or
// allocate whatever a length field says, when the bytes are malformed. Never
// call them on bytes that have not passed the verifier in package pte; use
// package pte to read and write .pte files.
//
// Regenerate with `go generate ./schema/...` (needs flatc, Debian package
// flatbuffers-compiler); TestGeneratedCodeIsCurrent checks that the committed
// code matches the schema.
package schema

//go:generate flatc --go --go-namespace schema --gen-onefile --gen-all -o . program.fbs
//go:generate gofmt -w program_generated.go
