// Package conformtree lays out, for tests, a conformance tree of the same
// layout as ../shared: every shared file (as a symbolic link, never a
// copy) plus programs, data files and records built here for situations a
// tree of other real programs may hold and the shared one does not:
//
//   - a paired program that ExecuTorch refuses at Program::load (its
//     constants in the deprecated inline constant_buffer): its records
//     stop after program_load, with no method events and no done event,
//     also when a data file is missing or is a program;
//   - a program whose methods need external data, one through an
//     external constant (InvalidState without data) and one through a
//     memory-planned EXTERNAL tensor (InvalidExternalData without data);
//   - a run of it that crashed in its first method (a data file whose key
//     has no tensor layout): the second method has no verdict;
//   - a vector run naming a data file the tree lacks, which the tests skip
//     with a message;
//   - TensorRT vector programs: one whose 0-byte inline blob the C++ blob
//     reader rejects in a program that otherwise loads, one whose
//     target_device pins another GPU than its blob's device_id (an
//     advisory warning), one with a constant tensor nothing uses and one
//     with a budget on only one of its two methods (the exporter cannot
//     reproduce those two).
//
// Records are written with the event names and fields of the upstream C++
// harness's records (NAME.cpp.jsonl, RUN.data.cpp.jsonl); the upstream
// Python views (NAME.json) of the programs built here are this module's
// own view of them (package inspect), so a tree built here tests how the
// suite reads records, not the reader against upstream.
//
// It is for tests only: its code is in its test files, and its test builds
// the tree (Build) and runs the conformance tests against it.
package conformtree
