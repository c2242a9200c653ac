// Package progress shows how far a long read or write has come, on one
// line of a terminal, the way ptekit's commands do it: only when the
// stream is a terminal, only after the work has run for a second, at most
// ten times a second, and erased when the work ends, so that output
// redirected to a file or a pipe never holds it.
package progress

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ptekit/ptekit/internal/size"
)

// Delay is how long work runs before its progress is shown; Interval is
// the least time between two updates of the line.
const (
	Delay    = time.Second
	Interval = 100 * time.Millisecond
)

// IsTerminal reports whether w is a terminal (a character device); tests
// replace it.
var IsTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Now is the clock of new Meters; tests of commands replace it to see
// progress without waiting.
var Now = time.Now

// Meter shows the progress of one piece of work on w. The zero value is
// not usable; a nil *Meter accepts every call and shows nothing.
type Meter struct {
	w       io.Writer
	label   string // "pteexport: writing"
	tty     bool
	start   time.Time
	last    time.Time // of the last line shown
	now     func() time.Time
	printed bool
}

// New returns a Meter that writes lines "LABEL  37% (1.1 GiB of 3.0 GiB)"
// to w when w is a terminal.
func New(w io.Writer, label string) *Meter {
	return &Meter{w: w, label: label, tty: IsTerminal(w), start: Now(), now: Now}
}

// Report records that done of total bytes are done. It is cheap when
// nothing is shown, so it can be called for every buffer.
func (m *Meter) Report(done, total int64) {
	if m == nil || !m.tty {
		return
	}
	t := m.now()
	if t.Sub(m.start) < Delay || (m.printed && t.Sub(m.last) < Interval && done < total) {
		return
	}
	fmt.Fprint(m.w, "\r\x1b[K"+m.Line(done, total))
	m.printed, m.last = true, t
}

// Done erases the line, if one was shown.
func (m *Meter) Done() {
	if m != nil && m.printed {
		fmt.Fprint(m.w, "\r\x1b[K")
		m.printed = false
	}
}

// Line formats a report: "LABEL  37% (1.1 GiB of 3.0 GiB)". The total is
// at least what is done.
func (m *Meter) Line(done, total int64) string {
	total = max(total, done)
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	return fmt.Sprintf("%s %3.0f%% (%s of %s)", m.label, pct, size.FormatApprox(done), size.FormatApprox(total))
}

// Reader counts the bytes read through R and reports them to M, of Total.
type Reader struct {
	R     io.Reader
	M     *Meter
	Total int64
	done  int64
}

// Read reads from R and reports progress.
func (r *Reader) Read(p []byte) (int, error) {
	n, err := r.R.Read(p)
	r.done += int64(n)
	r.M.Report(r.done, r.Total)
	return n, err
}
