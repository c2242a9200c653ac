package compilespec

import (
	"os"
	"path/filepath"
	"testing"
)

// sharedPath returns the path of a file under ../shared (the reference data
// next to the repository). When the file is missing the test fails if the
// CI environment variable is set and is skipped otherwise.
func sharedPath(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join("..", "..", "shared", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("shared test data missing (CI is set): %v", err)
		}
		t.Skipf("shared test data missing: %v", err)
	}
	return p
}
