// Package undorecord is the undo record of an in-place edit
// (internal/inplace): its name beside the edited file (Path), its layout
// (Encode), and the two ways to look at one, both read-only:
//
//   - Probe, the look a viewer takes: one lstat and, when something is
//     there, the record's fixed header. pteinspect and every open that is
//     not pteexport --recover or --in-place report what it finds; they
//     never apply a record.
//   - Read, the checked read that internal/inplace applies: a regular file
//     (opened with O_NOFOLLOW) owned by the edited file's owner, by root or
//     by the user running the command, not writable by group or others, whose
//     magic and lengths (against the edited file's size and MaxRun) are
//     checked before anything else is read, and whose checksum is checked
//     before any byte of it is used. Memory is bounded by the lengths the
//     header states once they are checked, never by the record's size.
//
// Nothing in this package writes, renames or removes a file: code that
// only views a program imports it and never internal/inplace, whose code
// applies records (internal/archtest and this package's audit test keep it
// so).
package undorecord
