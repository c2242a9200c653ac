package pte_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

// TestCorpus reads every real program of the shared corpus and compares
// what we decoded, field by field, with the upstream Python deserializer's
// view of it (corpus/ref/NAME.json): the extended header, the segments with
// their sha256, the delegates with their compile specs and payload digests,
// and the whole raw Program table. It reports the first differing JSON path
// of each file (and how many paths differ).
func TestCorpus(t *testing.T) {
	dir := testkit.SharedDir(t, "corpus")
	checkAgainstUpstream(t, dir, filepath.Join(dir, "ref"), "*.pte")
}

// TestVectorsJSON does the same for the TensorRT programs of vectors/pte,
// whose NAME.json uses the same mapping.
func TestVectorsJSON(t *testing.T) {
	dir := testkit.SharedDir(t, "vectors/pte")
	checkAgainstUpstream(t, dir, dir, "*.pte")
}

func checkAgainstUpstream(t *testing.T, dir, refDir, pattern string) {
	files, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no %s in %s (%v)", pattern, dir, err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".pte")
		t.Run(name, func(t *testing.T) {
			ref, err := os.ReadFile(filepath.Join(refDir, name+".json"))
			if err != nil {
				t.Fatalf("reference view: %v", err)
			}
			f, err := pte.Open(path)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer f.Close()
			doc, err := inspect.Build(f, &inspect.Options{Hash: true})
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			diffs, err := diffUpstream(doc, ref)
			if err != nil {
				t.Fatal(err)
			}
			if len(diffs) > 0 {
				t.Errorf("%d paths differ from the upstream view; first: %s", len(diffs), diffs[0])
			}
		})
	}
}

// diffUpstream compares the members of doc that promise the upstream
// deserializer's values (file, extended_header, segments, delegates and
// program) with those of upstream, whose program member is raw_program.
// Only doc has each delegate's tensorrt member; it is left out.
func diffUpstream(doc *inspect.Document, upstream []byte) ([]inspect.Difference, error) {
	var up map[string]json.RawMessage
	if err := json.Unmarshal(upstream, &up); err != nil {
		return nil, fmt.Errorf("upstream view: %w", err)
	}
	dels := make([]inspect.Delegate, len(doc.Delegates))
	for i, d := range doc.Delegates {
		dels[i] = *d
		dels[i].TensorRT = nil
	}
	ours := map[string]any{"file": doc.File, "extended_header": doc.ExtendedHeader, "segments": doc.Segments,
		"delegates": dels, "program": doc.Program}
	theirs := map[string]json.RawMessage{}
	for k := range ours {
		uk := k
		if k == "program" {
			uk = "raw_program"
		}
		if v, ok := up[uk]; ok {
			theirs[k] = v
		}
	}
	return inspect.Diff(ours, theirs)
}
