package inspect

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ptekit/ptekit/pte"
)

// FuzzSummarizeDiff summarizes whatever the reader accepts against itself
// and against a built program, both ways: no panic, no error a valid
// program would not give, and a file is bitwise equal to itself.
func FuzzSummarizeDiff(f *testing.F) {
	addSharedSeeds(f)
	other := genPrograms(f)["chain"]
	f.Fuzz(func(t *testing.T, data []byte) {
		open := func(b []byte) *pte.File {
			pf, err := pte.NewFileWith(bytes.NewReader(b), int64(len(b)), &pte.OpenOptions{LazyPlans: true})
			if err != nil {
				return nil
			}
			return pf
		}
		pf := open(data)
		if pf == nil {
			return
		}
		defer pf.Close()
		s, err := SummarizeDiff(pf, pf, nil)
		if err != nil {
			return // a payload outside the file, found by the hashing pass
		}
		if !s.BitwiseEqual || len(s.Methods) != 0 {
			t.Fatalf("a file differs from itself: %+v", s)
		}
		po := open(other)
		defer po.Close()
		for _, pair := range [][2]*pte.File{{pf, po}, {po, pf}} {
			got, err := SummarizeDiff(pair[0], pair[1], nil)
			if err != nil {
				continue
			}
			// The constants compared in the pass are those read again.
			da, db, err := BuildPair(pair[0], pair[1], &Options{Hash: true})
			if err != nil {
				t.Fatalf("BuildPair fails where BuildDiffPair does not: %v", err)
			}
			want, err := SummarizeDiff(pair[0], pair[1], &DiffSummaryOptions{Docs: [2]*Document{da, db}})
			if err != nil {
				continue
			}
			// By their JSON forms, where a NaN equals itself.
			jg, errG := json.Marshal(got)
			jw, errW := json.Marshal(want)
			if errG != nil || errW != nil || !bytes.Equal(jg, jw) {
				t.Fatalf("the pass's comparison differs from reading again:\n%s\n%s", jg, jw)
			}
		}
	})
}
