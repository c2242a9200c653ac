package testkit

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// update is the one switch that regenerates every file Golden checks:
// go test ./... -update.
var update = flag.Bool("update", false, "rewrite golden files and generated fuzz seeds in testdata from the current output")

// Golden checks that the file at path (a golden output, a committed fuzz
// seed, a generated fixture) holds exactly got. With -update it (re)writes
// the file from got instead, creating its directory. A missing or stale
// file fails the test without stopping it; the message names the file and
// the first line that differs.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%v (run the test with -update to create it)", err)
		return
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s is stale: %s (run the test with -update to rewrite it)", path, firstDiff(want, got))
	}
}

// firstDiff describes where got first differs from want, by line.
func firstDiff(want, got []byte) string {
	wl, gl := slices.Collect(bytes.Lines(want)), slices.Collect(bytes.Lines(got))
	for i := 0; ; i++ {
		switch {
		case i >= len(wl):
			return fmt.Sprintf("line %d: the file ends, got %q", i+1, clip(gl[i]))
		case i >= len(gl):
			return fmt.Sprintf("line %d: got ends, the file has %q", i+1, clip(wl[i]))
		case !bytes.Equal(wl[i], gl[i]):
			return fmt.Sprintf("line %d: the file has %q, got %q", i+1, clip(wl[i]), clip(gl[i]))
		}
	}
}

// clip shortens a line for a message.
func clip(line []byte) []byte {
	if len(line) > 120 {
		return append(line[:120:120], "..."...)
	}
	return line
}

// FuzzCorpusFile returns data as a file of Go's fuzzing corpus format
// holding one []byte argument, the form of a seed committed under
// testdata/fuzz/FuzzXxx.
func FuzzCorpusFile(data []byte) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", data)
}
