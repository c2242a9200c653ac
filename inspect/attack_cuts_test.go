package inspect

import (
	"testing"
	"time"

	"github.com/ptekit/ptekit/pte"
)

// TestDiffElementCountsAnyOrder is an attack: each tensor naming a pair
// of buffers asks their one comparison for its element count (want), and
// the counts were kept sorted by inserting each in place, so tensors whose
// counts come in decreasing order cost time quadratic in their number
// (100,000 tensors of one 400 KB buffer: 1.7 s more than in increasing
// order; a program region holds millions). The counts are now sorted once,
// before the comparison is fed; TestDiffManyShapesOneComparison checks the
// statistics of counts asked for in decreasing order.
func TestDiffElementCountsAnyOrder(t *testing.T) {
	const count = 1 << 20
	done := make(chan struct{})
	go func() {
		defer close(done)
		d := newDataCmp(4*count, 4*count, pte.ScalarTypeFLOAT)
		for n := int64(count); n > 0; n-- {
			d.want(n)
		}
		d.feed(make([]byte, 4*count), make([]byte, 4*count))
		d.result(count / 2)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("asking one comparison for %d element counts in decreasing order took over 20 s", count)
	}
}
