// Package pte reads and writes ExecuTorch program files (.pte).
//
// Start with Open (or NewFile for any io.ReaderAt): it returns a *File whose
// Program field is the decoded, verified program model; Verify reports what
// ExecuTorch would refuse, and Write/WriteFile write a Program back out. The
// schema's enums are pte's own types (ScalarType, KernelTypes, DataLocation,
// ...) with constants named after the schema (ScalarTypeFLOAT) and String
// methods, as debug/elf has Machine and EM_X86_64.
//
// A .pte file is a FlatBuffers Program (file identifier "ET12"), optionally
// preceded by an "eh00" extended header right after the 8-byte FlatBuffers
// prefix, and optionally followed by data segments that hold large payloads:
// constant tensor data, delegate blobs (for example TensorRT engines), named
// data and the initial values of mutable tensors.
//
// Reading is modelled on debug/elf: Open and NewFile read only the prefix,
// the extended header and the FlatBuffers region, verify every byte of it
// before decoding, and leave segment payloads on disk until they are asked
// for. Malformed input is reported as a *FormatError carrying the byte offset
// and the path of the offending field.
//
// Writing streams payloads from their sources and never holds them all in
// memory; WriteFile puts its output in place atomically (internal/atomicfile:
// complete or absent, never a partial file or a stray temporary one).
package pte
