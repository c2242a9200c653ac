// Package delegate reads and writes the payload of a TensorRTBackend
// delegate in an ExecuTorch program: the TensorRT "blob".
//
// A blob is a 32-byte little-endian header, compact JSON metadata (the
// engine's I/O bindings, aliased I/O, hardware compatibility, device id and
// two opaque strings) and the serialized TensorRT engine at a 16-byte
// aligned offset:
//
//	off  size  field
//	0    4     magic            "TR01", or "TR02" when the metadata carries aliased_io
//	4    u32   metadata_offset  32
//	8    u32   metadata_size
//	12   u32   engine_offset    align16(metadata_offset + metadata_size)
//	16   u64   engine_size
//	24   8     reserved         01 00 00 00 00 00 00 00 (byte 0 is a version byte no reader checks)
//
// Upstream has two readers of this format and they disagree. The Python
// reader parses the metadata with a real JSON parser; the C++ reader in the
// deployed TensorRTBackend uses a small hand-written scanner that, among
// other things, does not decode string escapes, drops bindings with an
// empty name, reads a missing is_input as "output", and finds
// hardware_compatible and device_id by substring search.
//
// This package offers both readings:
//
//   - [Decode] is ptekit's strict reading: the Python reader's checks and
//     defaults, plus type checks (a name must be a string, is_input a bool,
//     device_id an integer, ...). It reads the header and metadata only; the
//     engine is reached lazily through [Blob.Engine].
//   - [ReadDeployed] re-implements the C++ reader, so tools can say what the
//     deployed runtime will actually see.
//   - [Hazards] and [Check] list every difference between the two.
//
// [Encode] writes a blob. By default it writes only blobs that both readers
// read as intended: binding names are written as raw UTF-8 rather than
// \u escapes, and metadata the C++ reader would misread (control characters
// or empty names, an aliased name that collides with a key the scanner
// searches for, a device id outside a C++ int) is refused with a
// [*MetadataError] naming the field. [EncodeOptions.UpstreamCompatible]
// reproduces the upstream Python writer byte for byte instead.
package delegate
