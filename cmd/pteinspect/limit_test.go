package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptekit/ptekit/internal/input"
	"github.com/ptekit/ptekit/internal/testprog"
)

// sparseClaim writes a program whose extended header claims a 2 GiB - 1
// flatbuffer region, in a sparse file of that size holding 12 KiB of data.
func sparseClaim(t *testing.T) string {
	t.Helper()
	data := append([]byte(nil), testprog.Programs(t)["segment"]...)
	if string(data[8:12]) != "eh00" {
		t.Fatal("testprog program has no extended header")
	}
	const claim = 1<<31 - 1
	binary.LittleEndian.PutUint64(data[16:], claim)
	binary.LittleEndian.PutUint64(data[24:], claim+1)
	path := filepath.Join(t.TempDir(), "claim.pte")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data[:min(len(data), 12<<10)]); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(claim + 1 + 1<<20); err != nil { // room for the segments
		t.Skipf("no sparse files here: %v", err)
	}
	return path
}

// TestHeaderClaimBounded: a header's claim is not what the commands read
// (issue 11 #4): the default limit refuses the 2 GiB region at once, naming
// the limit and how to raise it, and no hint to run --verify, which the
// limit stops too.
func TestHeaderClaimBounded(t *testing.T) {
	path := sparseClaim(t)
	for _, args := range [][]string{{path}, {"--json", path}, {"--plan", path}, {"--verify", path}} {
		start := time.Now()
		r := runArgs(nil, args...)
		if r.code == exitOK {
			t.Errorf("pteinspect %v: exit 0", args[:len(args)-1])
		}
		if !strings.Contains(r.stdout+r.stderr, input.EnvMaxProgramSize) {
			t.Errorf("pteinspect %v: the message does not say how to raise the limit:\n%s%s", args[:len(args)-1], r.stdout, r.stderr)
		}
		if strings.Contains(r.stderr, "--verify") {
			t.Errorf("pteinspect %v: the hint sends the user to --verify, which cannot open the file either:\n%s", args[:len(args)-1], r.stderr)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("pteinspect %v took %v: it read the claimed region", args[:len(args)-1], d)
		}
	}
}
