package testkit

import (
	"os"
	"testing"
)

// leaseBreakTime is the system's lease-break-time: how long an open waits
// for the holder of a lease on the file before the kernel breaks it.
const leaseBreakTime = "/proc/sys/fs/lease-break-time"

// ShortLeaseBreak makes the kernel break a file lease one second after an
// open begins to wait for it, instead of 45, and puts the setting back
// when the test ends; it skips the test where it cannot (not root). The
// setting is the system's: only tests of write leases use this.
func ShortLeaseBreak(t testing.TB) {
	t.Helper()
	old, err := os.ReadFile(leaseBreakTime)
	if err != nil {
		t.Skipf("cannot read %s: %v", leaseBreakTime, err)
	}
	if err := os.WriteFile(leaseBreakTime, []byte("1\n"), 0); err != nil {
		t.Skipf("cannot set %s (needs root): %v", leaseBreakTime, err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(leaseBreakTime, old, 0); err != nil {
			t.Errorf("restoring %s: %v", leaseBreakTime, err)
		}
	})
}
