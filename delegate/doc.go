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
// This package offers three readings:
//
//   - [DecodePython] reads as upstream's Python reader does, accepting
//     exactly what it accepts and keeping each value with its JSON type
//     ([PyMetadata]), since that reader checks no types.
//   - [Decode] is ptekit's strict reading: the Python reading, refusing
//     what [PyMetadata.Refused] lists (a name that is not a string, is_input
//     that is not a bool, device_id that is not an integer, NaN, ...), into
//     the typed [Metadata].
//   - [ReadDeployed] re-implements the C++ reader, so tools can say what the
//     deployed runtime will actually see.
//
// [Check] runs all three and lists every difference as a [Hazard]. Each
// reads the header, the metadata and the blob's last byte only; the engine
// is reached lazily through [Blob.Engine], and metadata above
// [MaxMetadataSize] is not read at all.
//
// [Encode] writes a blob. By default it writes only blobs that both readers
// read as intended: binding names are written as raw UTF-8 rather than
// \u escapes, hardware_compatible and device_id go before aliased_io when
// an aliased name would capture the C++ reader's key search, and metadata
// no blob can carry to the C++ reader unchanged (control characters, empty
// or repeated names, a device id outside a C++ int) is refused with a
// [*MetadataError] naming the field. [EncodeOptions.UpstreamCompatible]
// reproduces the upstream Python writer byte for byte instead.
package delegate
