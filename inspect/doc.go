// Package inspect holds every view of a program file that pteinspect prints,
// as library values a pipeline can call: the inspection document and its
// stable JSON form (Build, Marshal), the checks (Check, problems), the
// structural diff (Diff, DiffDocuments), the change summary of two
// programs (SummarizeDiff), the compile spec rows and the load
// plan view; for external data, the .ptd document and diff (BuildPTD,
// DiffPTD) and where a program's EXTERNAL tensors come from given its data
// files (ExternalData, DataProblems, CheckData, NeededKeys).
//
// The JSON forms are a compatibility promise for pipelines (they are what
// `pteinspect --json`, `--plan --json` and `diff --json` print) and are
// documented in docs/json.md. A Document has six members: file,
// extended_header, segments, delegates, program and problems, and a
// seventh, external_data, only when it was built with data files
// (Options.Data). The program member is the whole Program table with the
// schema's snake_case field names, in schema field order, written by one
// walker over the pte model (program.go says its rules).
//
// With hashing on, the extended_header, segments, delegates and program
// members carry the same values as the upstream ExecuTorch Python
// deserializer's view of a file (its raw_program is our program).
//
// Build reads only what it needs: the file prefix, header and flatbuffer
// region (already read by pte.Open), the first bytes of each delegate
// payload and, for TensorRT delegates, the blob header and metadata. Hashing
// streams every payload through SHA-256 and never loads one whole.
package inspect
