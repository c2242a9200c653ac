package progress

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ptekit/ptekit/internal/size"
)

// TestMeter: the line uses human units, rewrites itself in place, appears
// only on a terminal after a second, at most every Interval (the last
// report always), and is erased.
func TestMeter(t *testing.T) {
	m := &Meter{label: "pteexport: writing"}
	assert.Equal(t, "pteexport: writing  37% (1.1 GiB of 3.0 GiB)", m.Line(1181116006, 3<<30+512))
	assert.Equal(t, "pteexport: writing 100% (512 B of 512 B)", m.Line(512, 100), "total is at least what is done")
	assert.Equal(t, "pteexport: writing 100% (0 B of 0 B)", m.Line(0, 0))
	assert.Equal(t, "1.5 KiB", size.FormatApprox(1536))
	assert.Equal(t, "1023 B", size.FormatApprox(1023))
	assert.Equal(t, "8.0 EiB", size.FormatApprox(int64(1<<63-1)))
	assert.Equal(t, "16.0 EiB", size.FormatApprox(uint64(1<<64-1)))

	saved := IsTerminal
	defer func() { IsTerminal = saved }()
	for _, tty := range []bool{false, true} {
		IsTerminal = func(w io.Writer) bool { return tty }
		var buf strings.Builder
		m := New(&buf, "pteexport: writing")
		clock := m.start
		m.now = func() time.Time { return clock }
		m.Report(1, 10) // under a second: nothing
		clock = clock.Add(1500 * time.Millisecond)
		m.Report(5, 10)
		m.Report(6, 10) // throttled
		clock = clock.Add(Interval)
		m.Report(7, 10)
		m.Report(10, 10) // the end is always shown
		m.Done()
		if !tty {
			assert.Empty(t, buf.String())
			continue
		}
		assert.Equal(t, "\r\x1b[Kpteexport: writing  50% (5 B of 10 B)\r\x1b[Kpteexport: writing  70% (7 B of 10 B)"+
			"\r\x1b[Kpteexport: writing 100% (10 B of 10 B)\r\x1b[K", buf.String())
	}
	var buf strings.Builder
	New(&buf, "x").Done()
	assert.Empty(t, buf.String(), "nothing to erase")
	var nilMeter *Meter
	nilMeter.Report(1, 2)
	nilMeter.Done()
}
