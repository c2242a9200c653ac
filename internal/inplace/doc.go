// Package inplace is the one way ptekit changes bytes of an existing file
// where they are, instead of writing a new file and renaming it
// (internal/atomicfile): pteexport --from X --in-place rewrites only the
// head of a program, and pteexport --recover X undoes an edit a crash
// interrupted. It is the only package that applies undo records; code that
// only views a program never imports it (internal/undorecord reports a
// record without applying it).
//
// An edit is crash-safe and safe for readers:
//
//   - Open takes a write lease on the file (Linux F_SETLEASE F_WRLCK). The
//     kernel grants it only when no other open file description of the file
//     exists, in this process or another, including the one a memory mapping
//     holds, so a file that ExecuTorch has open or mapped is refused with
//     ErrBusy. While the lease is held, another open of the file waits until
//     the edit is over. Where leases do not exist, Open refuses.
//   - Before every write of the file, the editor checks the lease
//     (F_GETLEASE; Edit.guard): once the kernel may have broken it (another
//     process opened the file and lease-break-time passed, as when the
//     editor was stopped), it writes nothing more, fails with
//     ErrLeaseBroken and backs out: it puts the old bytes back under the
//     lease taken again when nobody has the file open, else leaves the
//     record for Recover.
//   - WriteAt first writes the bytes it replaces, the new bytes and a SHA-256
//     checksum to an undo record next to the file (undorecord.Path, written
//     through internal/atomicfile with mode 0600, so it is complete or
//     absent), then writes the new bytes, syncs the file, removes the record
//     and syncs the directory.
//   - Recover (run by Open and by pteexport --recover, never by a viewer)
//     puts the old bytes back when a record is left over by a writer that
//     died, so the file is afterwards exactly the old or exactly the new
//     one. It applies only a record undorecord.Read trusts (a regular file
//     owned by the file's owner, root or this user, writable by nobody
//     else, sound, about a file of this size) whose range in the file holds
//     only old or new bytes, and leaves any other for a person.
package inplace
