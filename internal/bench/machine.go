package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// machine describes where the run happens: CPU, cores, kernel, the file
// system of the temporary directory, Go version and date.
func machine(tmp string) string {
	cpu := "?"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := "?"
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(data))
	}
	return fmt.Sprintf("Machine: %d CPUs (%s), Linux %s, %s file system in %s, %s, %s.\n",
		runtime.NumCPU(), cpu, kernel, fsType(tmp), tmp, runtime.Version(), time.Now().UTC().Format("2006-01-02 15:04 UTC"))
}

// fsType names the file system holding dir, from statfs(2)'s magic.
func fsType(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "unknown"
	}
	names := map[int64]string{0xEF53: "ext4", 0x58465342: "xfs", 0x9123683E: "btrfs", 0x01021994: "tmpfs", 0x794c7630: "overlayfs"}
	if name, ok := names[int64(st.Type)]; ok {
		return name
	}
	return fmt.Sprintf("0x%x", st.Type)
}
