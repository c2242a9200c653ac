package testkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// setUpdate sets the -update switch for the rest of the test.
func setUpdate(t *testing.T, on bool) {
	old := *update
	*update = on
	t.Cleanup(func() { *update = old })
}

func TestGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "golden", "out.txt")
	setUpdate(t, false)
	if how, msg := outcome(t, func(tb testing.TB) { Golden(tb, path, []byte("a\n")) }); how != "error" || !strings.Contains(msg, "-update") {
		t.Errorf("missing file: ended %q %q, want an error saying -update", how, msg)
	}

	setUpdate(t, true)
	if how, msg := outcome(t, func(tb testing.TB) { Golden(tb, path, []byte("one\ntwo\n")) }); how != "" {
		t.Fatalf("-update: ended %s: %s", how, msg)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "one\ntwo\n" {
		t.Fatalf("-update wrote %q, %v", b, err)
	}

	setUpdate(t, false)
	if how, msg := outcome(t, func(tb testing.TB) { Golden(tb, path, []byte("one\ntwo\n")) }); how != "" {
		t.Errorf("same bytes: ended %s: %s", how, msg)
	}
	for _, tc := range []struct{ got, where string }{
		{"one\nTWO\n", `line 2: the file has "two\n", got "TWO\n"`},
		{"one\ntwo\nthree\n", `line 3: the file ends, got "three\n"`},
		{"one\n", `line 2: got ends, the file has "two\n"`},
		{"one\ntwo", `line 2: the file has "two\n", got "two"`},
	} {
		how, msg := outcome(t, func(tb testing.TB) { Golden(tb, path, []byte(tc.got)) })
		if how != "error" || !strings.Contains(msg, path) || !strings.Contains(msg, tc.where) {
			t.Errorf("got %q: ended %q %q, want an error naming the file and %s", tc.got, how, msg, tc.where)
		}
	}
}

func TestFuzzCorpusFile(t *testing.T) {
	got := string(FuzzCorpusFile([]byte("PK\x00\n\"")))
	if want := "go test fuzz v1\n[]byte(\"PK\\x00\\n\\\"\")\n"; got != want {
		t.Errorf("FuzzCorpusFile = %q, want %q", got, want)
	}
}
