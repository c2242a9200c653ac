//go:build !linux

package atomicfile

import (
	"io/fs"
	"os"
)

// holdReplaced returns nil: releasing a replaced file in a helper process
// is done on Linux only; elsewhere the rename frees it as it always did.
func holdReplaced(target string, st fs.FileInfo) *os.File { return nil }

// release closes old.
func release(old *os.File) { old.Close() }

// dropCached does nothing: see the Linux version.
func dropCached(target string, st fs.FileInfo) {}
