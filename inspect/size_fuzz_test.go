package inspect

import (
	"bytes"
	"testing"

	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// FuzzSize opens arbitrary bytes as a program (and as a data file) and,
// when the reader accepts them, breaks their size down: Size must not
// panic or fail, its items must sum to the file size, read whole or a plan
// at a time, and its treemap must place every block inside the map.
func FuzzSize(f *testing.F) {
	addSharedSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		size := int64(len(data))
		if pf, err := ptd.NewFile(bytes.NewReader(data), size); err == nil {
			r, err := SizePTD(pf)
			if err != nil {
				t.Fatalf("SizePTD: %v", err)
			}
			checkSizeReport(t, r, size)
		}
		var reports []*SizeReport
		for _, lazy := range []bool{false, true} {
			pf, err := pte.NewFileWith(bytes.NewReader(data), size, &pte.OpenOptions{Truncated: true, LazyPlans: lazy})
			if err != nil {
				return
			}
			r, err := Size(pf, nil)
			if err != nil {
				t.Fatalf("Size (lazy %v): %v", lazy, err)
			}
			checkSizeReport(t, r, size)
			reports = append(reports, r)
		}
		if a, b := reports[0], reports[1]; a.Total() != b.Total() || len(a.Items) != len(b.Items) || a.DedupSaved != b.DedupSaved {
			t.Fatalf("read whole and lazily, the reports differ:\n%+v\n%+v", a, b)
		}
	})
}

// checkSizeReport checks what holds of every report: positive items summing
// to the file size, and a treemap inside its area whose groups cover the
// file.
func checkSizeReport(t *testing.T, r *SizeReport, size int64) {
	t.Helper()
	if r.Size != size || r.Total() != size {
		t.Fatalf("report of a %d-byte file sums to %d (size %d)", size, r.Total(), r.Size)
	}
	for _, it := range r.Items {
		if it.Size <= 0 {
			t.Fatalf("item of size %d: %+v", it.Size, it)
		}
	}
	var groups int64
	for _, b := range Treemap(r, nil) {
		if b.X < -1e-6 || b.Y < -1e-6 || b.X+b.W > 1200+1e-6 || b.Y+b.H > 800+1e-6 || b.W < 0 || b.H < 0 {
			t.Fatalf("block outside the map: %+v", b)
		}
		if !b.Leaf {
			groups += b.Size
		}
	}
	if groups != size {
		t.Fatalf("treemap groups hold %d bytes of %d", groups, size)
	}
}
