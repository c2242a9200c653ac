// Package atomicfile is the one way ptekit writes an output file: the file
// appears complete or not at all, an interrupted or killed writer leaves
// neither a partial output nor a stray temporary file, and an output that
// would replace one of the command's own inputs is refused.
//
// A writer calls [Create] (or [CreateContext]), writes through the returned
// [File] (it is an [io.Writer] and [io.ReaderFrom]; [File.OSFile] gives the
// *os.File for copy_file_range), and ends with [File.Commit] or
// [File.Abort]. Nothing is visible at the destination before Commit.
//
// # How the file is put in place
//
// On Linux the data goes into an unnamed file made with O_TMPFILE in the
// destination's directory. Commit links it into the directory with
// linkat(2) through /proc/self/fd; a new destination is linked under its
// own name (atomically, and refusing a name that appeared meanwhile when
// [Options.NoOverwrite] is set). Because linkat cannot replace a name, an
// existing destination is replaced by linking the file under a hidden name
// (.NAME.tmp-N) and renaming that over the destination. Until Commit the
// file has no name, so a process killed at any point (kill -9 included)
// leaves nothing behind, except in the two system calls between that link
// and the rename: a kill exactly there leaves a complete .NAME.tmp-N file.
//
// Where O_TMPFILE is unavailable (other systems; Linux file systems that
// refuse it with EOPNOTSUPP, such as NFS; kernels older than 3.11, which
// answer EISDIR; no /proc), the data goes into a hidden .NAME.tmp-N file
// in the same directory that is renamed over the destination. Errors,
// Abort and interrupts remove it, but a process killed with SIGKILL (or a
// crash of the machine) leaves it behind; nothing removes it later, since
// it may belong to a writer still running.
//
// # Replacing a large file
//
// The kernel frees a file's blocks when the last reference to it goes:
// when an output replaces an existing file and nothing else holds it open,
// that is the rename in Commit, so the writer pays for freeing the old
// file (about 0.18 ms per MiB on ext4, 0.4-0.6 s for 2 GiB) after its own
// data is written, as cp(1) over a file pays it in its truncating open.
// The package does not move that cost elsewhere: it starts no process and
// leaves no descriptor open behind Commit.
//
// The old file's cached pages go first: Create advises the kernel (Linux,
// POSIX_FADV_DONTNEED) that the clean cached pages of a file of 16 MiB or
// more that the output will replace are not needed, unless the output
// rewrites that file in place (Options.InPlace) and reads it meanwhile.
// Left cached, those dead pages made the output's own pages come from
// reclaim: a 2 GiB re-bake over a just-written 2 GiB file copied 2-4x
// slower (cp over a file does not meet it, since its truncation frees
// them first). The file's bytes are untouched; an abandoned output leaves
// it as it was, only uncached.
//
// # Decided behaviour
//
//   - Permissions: a new file gets 0666 less the umask, as a shell
//     redirection or cp(1) would create it. A replaced file keeps its
//     permission bits (not its owner, group, ACLs or extended attributes:
//     the output is a new file owned by the writer). Other hard links to a
//     replaced file keep the old contents.
//   - Symbolic links: when the destination is a symbolic link, the file it
//     points to is replaced and the link is kept, as cp(1) and a shell
//     redirection write through a link; the temporary file lives next to
//     the target so the rename stays within one file system. A link whose
//     target does not exist is refused rather than guessed at.
//   - The destination must be a regular file or not exist: a directory, a
//     device or a FIFO is refused before anything is written.
//   - Durability: Commit fsyncs the file before it is linked, and the
//     directory after the rename, so a completed write survives a crash.
//     An error syncing the directory is ignored: some file systems cannot
//     sync directories, and the output is complete either way.
//   - Inputs: [Options.Inputs] refuses an output that is one of
//     the command's inputs by path, through a symbolic link or as another
//     hard link (same device and inode), with an [*InputError] naming both.
//     A rewrite in place (a re-bake of X into X) names that input as
//     [Options.InPlace]: allowed under the same path, refused under another
//     name. The check runs in Create and again in Commit.
//   - Interrupts: [NotifyInterrupt] turns the first SIGINT or SIGTERM into
//     the cancellation of a context, with an [*InterruptError] as its cause
//     that gives the conventional exit status (130, 143); a File made by
//     CreateContext aborts itself when that context is done. A second
//     signal has its default effect and ends the process at once.
//   - Errors speak of the destination, never of a temporary name: a write
//     error names the output path, and a missing directory reads
//     "directory /out does not exist".
package atomicfile
