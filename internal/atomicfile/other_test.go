//go:build !unix

package atomicfile

import (
	"io/fs"
	"testing"
)

// umask is 0 where there is none.
func umask(t *testing.T) fs.FileMode { return 0 }
