//go:build !unix

package atomicfile

import "os"

// openNamed creates the temporary file tmp, failing if it exists. Write
// errors name tmp; File.Write rewrites them to name the destination.
func openNamed(tmp, name string) (*os.File, error) {
	return os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
}
