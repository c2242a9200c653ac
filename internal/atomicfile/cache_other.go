//go:build !linux

package atomicfile

import "io/fs"

// dropCached does nothing: see the Linux version.
func dropCached(target string, st fs.FileInfo) {}
