//go:build !unix

package atomicfile

import (
	"io/fs"
	"os"
)

// openNamed creates the temporary file tmp, failing if it exists. Write
// errors name tmp; File.Write rewrites them to name the destination.
func openNamed(tmp, name string) (*os.File, error) {
	return os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
}

// plantedLink: systems without sticky shared directories follow every
// link.
func plantedLink(string, fs.FileInfo) error { return nil }
