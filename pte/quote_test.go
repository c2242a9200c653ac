package pte_test

import (
	"strings"
	"testing"

	"github.com/ptekit/ptekit/pte"
)

// TestLookupErrorQuotesShort: an error that quotes a caller's or a file's
// value quotes at most 64 bytes of it (issue 11 #6).
func TestLookupErrorQuotesShort(t *testing.T) {
	f, err := pte.Open("testdata/url/model.pte")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	key := strings.Repeat("k", 1<<20)
	_, err = f.NamedData(key)
	if err == nil {
		t.Fatal("no error for a missing 1 MiB key")
	}
	if n := len(err.Error()); n > 300 || !strings.Contains(err.Error(), "(1048576 bytes)") {
		t.Errorf("error is %d bytes: %.200s", n, err)
	}
}
