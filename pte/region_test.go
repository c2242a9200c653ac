package pte

import (
	"bytes"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// TestOpenReadsRegionOnce: opening a program reads each byte of its head
// and flatbuffer region once (the head is not read again with the region)
// and no segment byte; Region returns those bytes, for a pass over the
// whole file to take instead of reading them again.
func TestOpenReadsRegionOnce(t *testing.T) {
	p, seg := vlConstProgram()
	for _, opts := range []*OpenOptions{nil, {LazyPlans: true}} {
		data := vlWrite(t, p, seg)
		r := testkit.NewRangeReaderAt(bytes.NewReader(data))
		f, err := NewFileWith(r, int64(len(data)), opts)
		if err != nil {
			t.Fatal(err)
		}
		region := f.Region()
		if f.Header == nil || int64(len(region)) != int64(f.Header.ProgramSize) || !bytes.Equal(region, data[:len(region)]) {
			t.Fatalf("Region is %d bytes, not the file's first %v", len(region), f.Header)
		}
		if n, first := r.Reread(); n != 0 {
			t.Errorf("opening read %d bytes twice, the first %v", n, first)
		}
		if r.Bytes() != int64(len(region)) {
			t.Errorf("opening read %d bytes, want the %d of the region", r.Bytes(), len(region))
		}
	}
}
