// Package program is the Go code flatc generates from schema/program.fbs
// (with scalar_type.fbs; file identifier "ET12"), committed so that a build
// needs no flatc.
//
// The generated accessors trust their input completely: they panic, or
// allocate whatever a length field says, when the bytes are malformed. Only
// package pte calls them, and only on bytes its verifier has passed; use
// package pte to read and write .pte files.
//
// Regenerate with `go generate ./internal/fbs/program` (needs flatc, Debian
// package flatbuffers-compiler); TestGeneratedCodeIsCurrent checks that the
// committed code matches the schema.
package program

//go:generate flatc --go --go-namespace program --gen-onefile --gen-all -o . ../../../schema/program.fbs
//go:generate gofmt -w program_generated.go
