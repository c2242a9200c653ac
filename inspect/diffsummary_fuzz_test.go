package inspect

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
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
			checkSameAsReread(t, pair[0], pair[1], got)
		}
	})
}

// checkSameAsReread fails t when got, the summary of a and b that the one
// pass made, differs from the summary of the documents read again
// (BuildDiffPair's documents, without its comparisons), apart from what a comparison by digests cannot know; both by
// their JSON forms, where a NaN equals itself.
func checkSameAsReread(t *testing.T, a, b *pte.File, got *DiffSummary) {
	t.Helper()
	da, db, _, err := BuildDiffPair(a, b, nil)
	if err != nil {
		t.Fatalf("BuildDiffPair fails the second time: %v", err)
	}
	want, err := SummarizeDiff(a, b, &DiffSummaryOptions{Docs: [2]*Document{da, db}})
	if err != nil {
		return
	}
	for mi, m := range got.Methods {
		for ti, td := range m.Tensors {
			if td.Data == nil || td.Data.NotCompared == "" || mi >= len(want.Methods) || ti >= len(want.Methods[mi].Tensors) {
				continue
			}
			if w := want.Methods[mi].Tensors[ti].Data; w != nil {
				*w = DataDiff{Decoded: w.Decoded, Elements: w.Elements, Samples: []ElementDiff{}, NotCompared: notCompared}
			}
		}
	}
	jg, errG := json.Marshal(got)
	jw, errW := json.Marshal(want)
	if errG != nil || errW != nil || !bytes.Equal(jg, jw) {
		t.Fatalf("the pass's comparison differs from reading again:\n%s\n%s", jg, jw)
	}
}

// FuzzDiffPass diffs two programs whatever the reader accepts (seeded with
// programs whose constant buffers pair in crossing order, in a segment or
// inline), holding at most 100 bytes of crossing pairings: the comparisons
// the pass makes (held, handed on as it reads, compared by digests beyond
// that) are those reading again gives, but for the elements of differing
// buffers compared by digests, and when nothing fails no byte of either
// file is read twice, opening included.
func FuzzDiffPass(f *testing.F) {
	defer func(b int64) { heldBudget = b }(heldBudget)
	heldBudget = 100
	progs := genPrograms(f)
	a := withConstantSegment(f, progs["segment"], ramp(40, nil), ramp(30, nil), ramp(50, func(int) float32 { return 1 }))
	f.Add(a, swapLastTensors(f, a))
	f.Add(swapLastTensors(f, a), withInlineConstants(f, progs["segment"], ramp(40, nil), ramp(50, nil), ramp(30, nil)))
	f.Add(a, withConstantSegment(f, progs["chain"], ramp(41, nil), ramp(50, nil), ramp(30, nil)))
	// Tensors of many shapes naming one buffer (one comparison serves
	// them all: TestDiffManyShapesOneComparison).
	f.Add(manyShapes(f, a, 40, 6), manyShapes(f, withInlineConstants(f, progs["segment"], ramp(40, func(i int) float32 { return float32(i % 3) })), 40, 6))
	// A TensorRT blob whose segment a delegate of another backend names
	// first.
	f.Add(testprog.Rewrite(f, progs["chain"], func(p *pte.Program) {
		d := p.Plan(0).Delegates
		d[0].ID, d[0].Processed.Index = "XnnpackBackend", d[1].Processed.Index
	}), progs["chain"])
	f.Fuzz(func(t *testing.T, da, db []byte) {
		var files [2]*pte.File
		var reads [2]*testkit.RangeReaderAt
		for i, data := range [2][]byte{da, db} {
			reads[i] = testkit.NewRangeReaderAt(bytes.NewReader(data))
			pf, err := pte.NewFileWith(reads[i], int64(len(data)), &pte.OpenOptions{LazyPlans: true})
			if err != nil {
				return
			}
			defer pf.Close()
			files[i] = pf
		}
		got, err := SummarizeDiff(files[0], files[1], nil)
		if err != nil {
			return // a payload outside the file, found by the hashing pass
		}
		for i, r := range reads {
			if n, first := r.Reread(); n != 0 {
				t.Fatalf("file %d: %d bytes read twice, the first %v", i, n, first)
			}
		}
		checkSameAsReread(t, files[0], files[1], got)
	})
}
