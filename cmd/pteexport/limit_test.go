package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/input"
	"github.com/ptekit/ptekit/internal/testprog"
)

// TestFromHeaderClaimBounded: --from refuses a program whose header claims
// a 2 GiB region (a sparse file) under the commands' default limit, naming
// how to raise it, and writes nothing (issue 11 #4).
func TestFromHeaderClaimBounded(t *testing.T) {
	data := append([]byte(nil), testprog.Programs(t)["segment"]...)
	const claim = 1<<31 - 1
	binary.LittleEndian.PutUint64(data[16:], claim)
	binary.LittleEndian.PutUint64(data[24:], claim+1)
	dir := t.TempDir()
	in := filepath.Join(dir, "claim.pte")
	if err := os.WriteFile(in, data, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(in, claim+1+1<<20); err != nil {
		t.Skipf("no sparse files here: %v", err)
	}
	out := filepath.Join(dir, "out.pte")
	r := runCmd("--from", in, "-o", out, "--weight-streaming-budget-per-engine", "1MiB")
	if r.code == 0 || !strings.Contains(r.stderr, input.EnvMaxProgramSize) {
		t.Errorf("exit %d, stderr %q; want a refusal naming %s", r.code, r.stderr, input.EnvMaxProgramSize)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("an output was written")
	}
}
