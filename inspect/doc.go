// Package inspect holds every view of a program file that pteinspect prints,
// as library values a pipeline can call: the inspection document and its
// stable JSON form (Build, Marshal), the checks (Check, problems), the
// structural diff (Diff, DiffDocuments), the change summary of two
// programs (SummarizeDiff), the compile spec rows and the load
// plan view; for external data, the .ptd document and diff (BuildPTD,
// DiffPTD) and where a program's EXTERNAL tensors come from given its data
// files (ExternalData, DataProblems, CheckData, FileNeededKeys).
//
// The JSON forms are a compatibility promise for pipelines (they are what
// `pteinspect --json`, `--plan --json` and `diff --json` print) and are
// documented in docs/json.md. A Document
// has six members: file, extended_header, segments, delegates, program and
// problems (what Check finds: the reader's verification and the TensorRT
// blob checks), and a seventh, external_data, only when it was built with
// data files (Options.Data).
// The program member is the whole Program table with the schema's snake_case
// field names, in schema field order:
//
//   - absent tables, vectors and byte vectors are null, present empty
//     vectors are [];
//   - absent scalars are their schema default;
//   - enums are written by member name ("FLOAT", "SEGMENT"), or as a number
//     when the value has no name in the schema;
//   - a union field f is written as two members, f_type holding the member
//     name ("Tensor", "DelegateCall", "NONE") and f holding the member table
//     (null for NONE and for tags the schema does not know);
//   - byte vectors are {"size": N}, plus "sha256" when hashing is on;
//   - non-finite doubles are the strings "inf", "-inf" and "nan".
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
