package testkit

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// leaseBreakTime is the system's lease-break-time: how long an open waits
// for the holder of a lease on the file before the kernel breaks it.
const leaseBreakTime = "/proc/sys/fs/lease-break-time"

// leaseBreakLock serializes ShortLeaseBreak across test processes: go test
// runs packages in parallel, and two tests that each saved the value the
// other had just set would put back 1 instead of the system's value.
var leaseBreakLock = filepath.Join(os.TempDir(), "ptekit-lease-break-time.lock")

// ShortLeaseBreak makes the kernel break a file lease one second after an
// open begins to wait for it, instead of 45, and puts the setting back
// when the test ends; it skips the test where it cannot (not root). The
// setting is the system's: only tests of write leases use this, and they
// hold a lock file while they do, so one such test runs at a time across
// every test process and each restores the value it found.
func ShortLeaseBreak(t testing.TB) {
	t.Helper()
	lock, err := os.OpenFile(leaseBreakLock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Skipf("cannot open %s: %v", leaseBreakLock, err)
	}
	for {
		err = unix.Flock(int(lock.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		lock.Close()
		t.Skipf("cannot lock %s: %v", leaseBreakLock, err)
	}
	unlock := func() { lock.Close() } // closing the file releases the lock
	old, err := os.ReadFile(leaseBreakTime)
	if err != nil {
		unlock()
		t.Skipf("cannot read %s: %v", leaseBreakTime, err)
	}
	if err := os.WriteFile(leaseBreakTime, []byte("1\n"), 0); err != nil {
		unlock()
		t.Skipf("cannot set %s (needs root): %v", leaseBreakTime, err)
	}
	t.Cleanup(func() {
		defer unlock()
		if err := os.WriteFile(leaseBreakTime, old, 0); err != nil {
			t.Errorf("restoring %s: %v", leaseBreakTime, err)
		}
	})
}
