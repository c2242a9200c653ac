package atomicfile

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// dropCacheMin is the size from which Create lets the cached pages of the
// file an output replaces go (dropCached); below it they cost too little
// to matter.
var dropCacheMin int64 = 16 << 20

// dropCached tells the kernel that the clean cached pages of target, the
// file st describes and which the output will replace, are not needed
// (POSIX_FADV_DONTNEED; why: the package documentation, "Replacing a large
// file"). Small files and other file types are left alone, and so is a
// file whose name no longer leads to the file st describes.
func dropCached(target string, st fs.FileInfo) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || !st.Mode().IsRegular() || st.Size() < dropCacheMin {
		return
	}
	fd, err := unix.Open(target, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return // a hint only: nothing to report
	}
	defer unix.Close(fd)
	var now unix.Stat_t
	if unix.Fstat(fd, &now) != nil || uint64(now.Dev) != uint64(sys.Dev) || now.Ino != sys.Ino {
		return
	}
	unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED)
}
