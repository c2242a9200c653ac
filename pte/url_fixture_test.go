package pte_test

import (
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
)

// TestURLExampleFixture keeps testdata/url/model.pte, the program
// ExampleOpenURL serves, equal to its generator's output (testprog's
// "two_methods" program); -update rewrites it.
func TestURLExampleFixture(t *testing.T) {
	testkit.Golden(t, filepath.Join("testdata", "url", "model.pte"), testprog.Programs(t)["two_methods"])
}
