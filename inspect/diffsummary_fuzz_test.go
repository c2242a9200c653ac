package inspect

import (
	"bytes"
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
		_, _ = SummarizeDiff(pf, po, nil)
		_, _ = SummarizeDiff(po, pf, nil)
	})
}
