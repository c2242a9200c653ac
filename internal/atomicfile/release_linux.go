package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// Replacing a large file frees its blocks when the last reference to the
// old inode goes, which is the rename itself when nothing holds it open:
// about 0.18 ms per MiB on ext4 here (0.37 s for 2 GiB), all of it on the
// writer's critical path. Commit instead pins the old inode with an O_PATH
// descriptor before the rename and, once the new file is in place and
// synced, hands that descriptor to a short-lived copy of this program
// (/proc/self/exe, recognised by releaseEnv in init) that closes it, so
// the freeing happens in another process.

// releaseEnv marks a process started only to close a replaced file:
// descriptor 3 is the old file (O_PATH), 4 the read end of a pipe whose
// write end the writer closes once it has dropped its own reference.
const releaseEnv = "PTEKIT_ATOMICFILE_RELEASE"

// releaseMin is the allocated size from which a replaced file is released
// in a helper process: spawning one costs the writer 0.2-2 ms, about what
// freeing 8 MiB costs on ext4; below 16 MiB the synchronous free is as
// cheap.
var releaseMin int64 = 16 << 20

// releaseExe is the program that serves releaseEnv; tests change it to
// make the spawn fail.
var releaseExe = "/proc/self/exe"

// testRelease, when set, is called by a release with the helper's pid
// after the writer dropped its reference and before it lets the helper go,
// and then with the helper's exit state once it is reaped.
var testRelease struct {
	held   func(pid int)
	reaped func(*os.ProcessState)
}

// Magic numbers (statfs f_type) of the local file systems on which a
// replaced file is released in a helper. Elsewhere the rename frees it as
// before: NFS would keep an open replaced file as a visible .nfsXXXX name
// until the close, and network and FUSE file systems free on the server
// side anyway.
var releaseFS = map[int64]bool{
	0xEF53:     true, // ext2, ext3, ext4
	0x58465342: true, // xfs
	0x9123683E: true, // btrfs
	0xF2F52010: true, // f2fs
	0x01021994: true, // tmpfs
}

const oPath = 0x200000 // O_PATH, which package syscall does not export

func init() {
	if _, ok := os.LookupEnv(releaseEnv); ok {
		serveRelease()
	}
}

// serveRelease is the whole life of a release helper: wait until the
// writer has let go of the old file (EOF on the pipe, which also comes
// when the writer dies), close it and exit. It never returns. Started by
// anything but holdReplaced's release (the variable set by hand), it says
// so and exits 2 rather than run the command.
func serveRelease() {
	var st syscall.Stat_t
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, 3, syscall.F_GETFL, 0)
	if errno != 0 || flags&oPath == 0 || syscall.Fstat(4, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		fmt.Fprintf(os.Stderr, "%s is set: this process would only close a file an output replaced; unset it to run the command\n", releaseEnv)
		os.Exit(2)
	}
	var b [1]byte
	for {
		if _, err := syscall.Read(4, b[:]); err != syscall.EINTR {
			break
		}
	}
	syscall.Close(3) // the old file's blocks are freed here
	os.Exit(0)
}

// holdReplaced returns a reference (O_PATH, which needs no permission and
// opens nothing a lease or a FIFO would notice) to target, the file st
// describes, when it is worth releasing in a helper; nil otherwise.
func holdReplaced(target string, st fs.FileInfo) *os.File {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || sys.Blocks*512 < releaseMin {
		return nil
	}
	fd, ok := openSame(target, sys, oPath)
	if !ok {
		return nil
	}
	var sfs syscall.Statfs_t
	if syscall.Fstatfs(fd, &sfs) != nil || !releaseFS[int64(sfs.Type)] {
		syscall.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), target)
}

// openSame opens target with flags (plus O_NOFOLLOW and O_CLOEXEC) when it
// is still the file sys describes (same device and inode: the name may
// have been replaced since it was checked).
func openSame(target string, sys *syscall.Stat_t, flags int) (int, bool) {
	fd, err := syscall.Open(target, flags|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, false
	}
	var now syscall.Stat_t
	if syscall.Fstat(fd, &now) != nil || now.Dev != sys.Dev || now.Ino != sys.Ino {
		syscall.Close(fd)
		return -1, false
	}
	return fd, true
}

// release drops old, which the rename has unlinked, in a helper process;
// when no helper can be started it closes old here, which frees the
// blocks synchronously as a rename without holdReplaced would have.
func release(old *os.File) {
	if !releaseInHelper(old) {
		old.Close()
	}
}

func releaseInHelper(old *os.File) bool {
	pr, pw, err := os.Pipe()
	if err != nil {
		return false
	}
	cmd := &exec.Cmd{
		Path:       releaseExe,
		Args:       []string{"ptekit-release"},
		Env:        []string{releaseEnv + "=1"},
		ExtraFiles: []*os.File{old, pr}, // descriptors 3 and 4
		// Its own session: a Ctrl-C meant for the writer's shell does not
		// reach it (it would free the blocks anyway, on exit).
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = cmd.Start()
	pr.Close()
	if err != nil {
		pw.Close()
		return false
	}
	old.Close() // not the last reference: the helper holds one
	if testRelease.held != nil {
		testRelease.held(cmd.Process.Pid)
	}
	pw.Close() // the helper closes the old file and exits
	// Reap it if this process lives on; if it exits first, init does.
	go func() {
		cmd.Wait()
		if testRelease.reaped != nil {
			testRelease.reaped(cmd.ProcessState)
		}
	}()
	return true
}

// fadviseTrap is the fadvise64(2) system call number of the 64-bit
// architectures, whose arguments are (fd, offset, len, advice); package
// syscall does not wrap it. Elsewhere dropCached does nothing.
var fadviseTrap = map[string]uintptr{
	"amd64": 221, "arm64": 223, "riscv64": 223, "loong64": 223,
	"ppc64": 233, "ppc64le": 233, "s390x": 253,
}[runtime.GOARCH]

// dropCached tells the kernel that the cached pages of target, the file
// st describes and which the output will replace, are not needed: once
// the output takes its name they are dead, and while they stay cached
// the output's own pages must be reclaimed from elsewhere. A 2 GiB
// re-bake over a just-written 2 GiB file copied 2-4x slower for that
// (cp over a file does not meet it: its truncation frees the pages
// first). Only clean pages go (POSIX_FADV_DONTNEED); the file's bytes
// are untouched, so an output that is then abandoned leaves it as it
// was, merely uncached. Small files and other file types are left alone.
func dropCached(target string, st fs.FileInfo) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || fadviseTrap == 0 || !st.Mode().IsRegular() || st.Size() < releaseMin {
		return
	}
	fd, ok := openSame(target, sys, syscall.O_RDONLY|syscall.O_NONBLOCK)
	if !ok {
		return
	}
	defer syscall.Close(fd)
	const posixFadvDontneed = 4
	syscall.Syscall6(fadviseTrap, uintptr(fd), 0, 0, posixFadvDontneed, 0, 0)
}
