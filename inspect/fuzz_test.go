package inspect

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

// addSharedSeeds adds the small programs of the shared corpus, vectors and
// damaged vectors as seeds, when they are there.
func addSharedSeeds(f *testing.F) {
	testkit.AddSharedSeeds(f, maxSeedSize, "corpus/*.pte", "vectors/pte/*.pte", "vectors/pte-bad/*.pte")
}

// FuzzBuild opens arbitrary bytes as a program and, when the reader accepts
// them, builds and encodes the JSON form with hashing on. Whatever the
// references in the program say, Build must not panic, and the document
// must compare equal to itself, and Summarize must agree with it; read a
// plan at a time (pte.OpenOptions.LazyPlans) the file gives the same.
func FuzzBuild(f *testing.F) {
	addSharedSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := pte.NewFileWith(bytes.NewReader(data), int64(len(data)), &pte.OpenOptions{Truncated: true})
		if err != nil {
			return
		}
		doc, err := Build(pf, &Options{Hash: true})
		if _, ok := errors.AsType[*OverlapError](err); ok {
			return // hashing would read the overlapping bytes once for each
		}
		if err != nil {
			t.Fatalf("Build failed on an in-memory file: %v", err)
		}
		// The default view's value: no panic, every method.
		n := 0
		for _, ep := range doc.Program.Plans() {
			if ep != nil {
				n++
			}
		}
		s := newSummary(doc)
		if len(s.Methods) != n {
			t.Fatalf("summary has %d methods, document %d", len(s.Methods), n)
		}
		// The method-by-method views read what Build reads.
		requireSameSummary(t, pf, &Options{Hash: true}, s, doc)
		b, err := Marshal(doc)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		if !json.Valid(b) {
			t.Fatalf("invalid JSON")
		}
		diffs, err := Diff(json.RawMessage(b), doc)
		if err != nil || len(diffs) != 0 {
			t.Fatalf("document differs from itself: %v %v", err, diffs)
		}
		// Read a plan at a time, the file gives the same document and
		// summary (and the human views' stream).
		lf, err := pte.NewFileWith(bytes.NewReader(data), int64(len(data)), &pte.OpenOptions{Truncated: true, LazyPlans: true})
		if err != nil {
			t.Fatalf("opens whole but not with LazyPlans: %v", err)
		}
		ldoc, err := Build(lf, &Options{Hash: true})
		if err != nil {
			t.Fatalf("Build with LazyPlans: %v", err)
		}
		if lb, err := Marshal(ldoc); err != nil || !bytes.Equal(lb, b) {
			t.Fatalf("the document differs with LazyPlans (%v)", err)
		}
		requireSameSummary(t, lf, &Options{Hash: true}, s, doc)
		// The compile spec rows read a method at a time are those of the
		// program read whole.
		want := slices.Collect(CompileSpecRows(pf.Program, "", ""))
		if got := slices.Collect(CompileSpecRows(lf.Program, "", "")); !reflect.DeepEqual(got, want) {
			t.Fatalf("CompileSpecRows with LazyPlans gives %d rows, without %d (or others)", len(got), len(want))
		}
		// Written a method at a time, from either File, the same bytes.
		for _, f := range []*pte.File{pf, lf} {
			var w bytes.Buffer
			if _, err := WriteJSON(&w, f, &Options{Hash: true}); err != nil || !bytes.Equal(w.Bytes(), b) {
				t.Fatalf("WriteJSON differs from Marshal(Build) (%v)", err)
			}
		}
	})
}

// FuzzDiff feeds arbitrary text to the JSON reader of Diff: no panic, and a
// valid document equals itself.
func FuzzDiff(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":null}],"c":"d","e":1.5e300,"f":true}`), []byte(`{"a":[1]}`))
	f.Add([]byte(`[[[[[]]]]]`), []byte(`"x"`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		_, _ = Diff(json.RawMessage(a), json.RawMessage(b))
		if !json.Valid(a) {
			return
		}
		d, err := Diff(json.RawMessage(a), json.RawMessage(a))
		if err == nil && len(d) != 0 {
			t.Fatalf("%q differs from itself: %v", a, d)
		}
	})
}
