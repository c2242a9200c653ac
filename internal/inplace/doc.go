// Package inplace is the one way ptekit changes bytes of an existing file
// where they are, instead of writing a new file and renaming it
// (internal/atomicfile): pteexport --from X --in-place rewrites only the
// head of a program.
//
// An edit is crash-safe and safe for readers:
//
//   - Open takes a write lease on the file (Linux F_SETLEASE F_WRLCK). The
//     kernel grants it only when no other open file description of the file
//     exists, in this process or another, including the one a memory mapping
//     holds, so a file that ExecuTorch has open or mapped is refused with
//     ErrBusy. While the lease is held, another open of the file waits until
//     the edit is over. Where leases do not exist, Open refuses.
//   - WriteAt first writes the bytes it replaces, the new bytes and a SHA-256
//     checksum to an undo record next to the file (".NAME.pteundo", written
//     through internal/atomicfile, so it is complete or absent), then writes
//     the new bytes, syncs the file, removes the record and syncs the
//     directory.
//   - Recover (run by Open, by pteexport and pteinspect on the files they
//     open, and by pteexport --recover) puts the old bytes back when a record
//     is left over by a writer that died, so the file is afterwards exactly
//     the old or exactly the new one. It refuses a record that does not match
//     the file (another size, or bytes that are neither the old nor the new
//     ones: the file was replaced meanwhile) and leaves it for a person.
package inplace
