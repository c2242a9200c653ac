package compilespec

import (
	"errors"
	"testing"
)

// TestSizeFunctions checks that the size functions library users reach
// through compilespec are internal/size's: a round trip, the error type,
// the approximate and described forms, the saturating sum.
func TestSizeFunctions(t *testing.T) {
	n, auto, err := ParseSize(FormatSize(3 << 29))
	if err != nil || auto || n != 3<<29 {
		t.Errorf("ParseSize(FormatSize(1.5 GiB)) = %d, %v, %v", n, auto, err)
	}
	var se *SizeError
	if _, _, err := ParseSize("8G"); !errors.As(err, &se) || se.Input != "8G" {
		t.Errorf("ParseSize(8G) error %v is not a *SizeError of the input", err)
	}
	if got := FormatSizeApprox(int64(3 << 29)); got != "1.5 GiB" {
		t.Errorf("FormatSizeApprox = %q", got)
	}
	if got := DescribeSize(1 << 30); got != "1073741824 bytes (1 GiB)" {
		t.Errorf("DescribeSize = %q", got)
	}
	if got := AddSizes(1<<62, 1<<62, 1<<62); got != 1<<63-1 {
		t.Errorf("AddSizes does not saturate: %d", got)
	}
}
