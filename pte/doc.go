// Package pte reads and writes ExecuTorch program files (.pte).
//
// Start with Open (or NewFile for any io.ReaderAt): it returns a *File whose
// Program field is the decoded, verified program model, whose methods
// (execution plans) are read through Program.Plan and Program.Plans and
// set with Program.SetPlans; Verify reports what
// ExecuTorch would refuse of the container and its methods, and
// Write/WriteFile write a Program back out. Verify does not look inside
// delegates: the whole verdict of `pteinspect --verify`, with the TensorRT
// delegates' checks, is check.Program (package
// github.com/ptekit/ptekit/check). The
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
// A decoded program takes several times its flatbuffer region in memory.
// A reader that looks at one method at a time (a viewer of a program with
// thousands of methods) opens with OpenOptions.LazyPlans: the region is
// still verified whole and checked as ExecuTorch's Program::load checks it,
// but each execution plan is decoded only when Program.Plan (or Plans,
// PlanName, ...) asks for it, and not kept. The hint changes no answer of
// the package, only what is held in memory.
//
// Writing streams payloads from their sources and never holds them all in
// memory; WriteFile puts its output in place atomically (internal/atomicfile:
// complete or absent, never a partial file or a stray temporary one).
//
// # Segment layout
//
// By default Write lays segments out as ExecuTorch's serializer does: the
// segment base is the end of the program rounded up to the segment
// alignment (128 by default), and each segment starts at the end of the
// previous one rounded up to it. With WriteOptions.PageCongruent, a
// segment carrying at least CongruentMin (64 KiB) of a file's bytes (an
// engine behind a TensorRT blob header, a segment of another program; with
// CongruentAnyReader, of any source not in memory, such as a URL) starts
// instead where those bytes keep their file offset modulo 4096, at
// most 4095 bytes further (a segment of WideCongruentMin, 2 MiB, or more:
// modulo WideCongruence, 64 KiB, at most 65535 bytes further), and the
// base is moved (by less than that modulus, staying a multiple of the
// alignment) to keep that true. The kernel can
// then copy those bytes with copy_file_range, which shares blocks on XFS
// and btrfs, instead of through a buffer. ExecuTorch locates a segment by
// segment_base_offset + offset and checks only that it lies in the file;
// no loader requires an alignment of the offset, and a TensorRT engine
// keeps the 16-byte alignment its blob gives it (it lands on a page).
// File.SegmentAlignment finds the alignment with which a rewrite keeps a
// file's layout, so that a program whose head grows keeps its segment
// offsets and moves its base by whole pages.
package pte

// enums_generated.go is made by TestGeneratedEnumsAreCurrent from the
// schema's enums and unions (pte/enums_gen_test.go).
//
//go:generate go test -run ^TestGeneratedEnumsAreCurrent$ . -update
