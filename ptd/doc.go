// Package ptd reads and writes ExecuTorch external data files (.ptd,
// FlatTensor, identifier "FT01") and resolves a program's external tensors
// against them the way ExecuTorch's loader does.
//
// Large models keep their weights outside the .pte program, in one or more
// .ptd files loaded beside it; delegates share blobs through the same
// named-data mechanism. A .ptd file is an 8-byte FlatBuffers prefix, a
// 40-byte "FH01" header (flatbuffer offset and size, segment base offset and
// size), the FlatTensor tables (segments, and named_data keys with an
// optional TensorLayout) and the segment bytes.
//
// Open and NewFile read only the head, the header and the flatbuffer region;
// they apply FlatTensorDataMap::load's checks in its order and verify every
// byte of the flatbuffer before decoding it (ExecuTorch runs no verifier on
// .ptd files: where it would read out of bounds or crash, a *FormatError
// says so with Undefined set). Payloads are read lazily through
// pte.Payload. Errors carry the ExecuTorch error class (pte.Code) of the
// check that fails. Files written in the FlatTensor layout used before
// 2025-06, which has the same identifier and version, are recognised
// (File.Legacy) rather than misread.
//
// Resolve takes a program and the data files in the order given and
// reports, like ExecuTorch's Module::load and Method::load: each file's load
// result and keys, the merge (keys dropped for empty maps, duplicates
// refused), and per method every EXTERNAL tensor (constant or memory-planned)
// with the file that provides it, layout checks and the error code.
//
// Write and WriteFile write a .ptd file: Contents of an open File copies it
// byte for byte; modified or new Data is encoded afresh with segments
// streamed from their readers.
package ptd
