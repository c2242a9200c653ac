// Package batch records whether the running program is a batch command
// that asked, from its main, for the process-wide memory tuning the
// libraries may then do on its behalf: the collector's setting and a
// huge-page heap (internal/cli), and a memory limit held while an export
// writes (export). A program that imports the libraries without asking
// gets none of it: a library does not change the settings of the process
// it runs in behind its caller's back.
package batch

import "sync/atomic"

var on atomic.Bool

// Set records whether the process is a batch command's and returns what
// was recorded before. Only a main (and tests) call it.
func Set(batch bool) (was bool) { return on.Swap(batch) }

// Enabled reports whether the process is a batch command's.
func Enabled() bool { return on.Load() }
