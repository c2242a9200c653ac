package pte

import (
	"bytes"
	"errors"
	"runtime"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// addFuzzSeeds adds every program of the shared corpus and vectors when they
// are present (fuzzing also works from testdata/fuzz alone). Large files
// are left out: they slow minimization down without adding structure.
func addFuzzSeeds(f *testing.F) {
	testkit.AddSharedSeeds(f, 4<<10, "corpus/*.pte", "corpus/*.ptd", "vectors/pte/*.pte", "vectors/pte-bad/*.pte")
}

// openAllocBound is the most NewFile plus Verify may allocate for an
// input of n bytes: 64 bytes per input byte (the region copy, the decoded
// model, position maps and findings all grow linearly) plus 1 MiB of fixed
// cost and slack for allocations by other goroutines of the test binary.
func openAllocBound(n int) uint64 { return 64*uint64(n) + 1<<20 }

// openAndVerify runs NewFile and, when it succeeds, Verify on data, and
// returns the bytes allocated meanwhile (runtime.MemStats.TotalAlloc).
func openAndVerify(data []byte) (f *File, findings []Finding, alloc uint64, err error) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, err = NewFile(bytes.NewReader(data), int64(len(data)))
	if err == nil {
		findings = f.Verify()
	}
	runtime.ReadMemStats(&after)
	return f, findings, after.TotalAlloc - before.TotalAlloc, err
}

// FuzzOpen feeds arbitrary bytes to NewFile and, when it opens, exercises
// Verify and every payload accessor. Nothing may panic, every failure must
// be a *FormatError or an I/O error, and NewFile plus Verify may allocate
// no more than openAllocBound.
func FuzzOpen(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, findings, alloc, err := openAndVerify(data)
		if alloc > openAllocBound(len(data)) {
			t.Fatalf("NewFile and Verify allocated %d bytes for a %d-byte input (bound %d)", alloc, len(data), openAllocBound(len(data)))
		}
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("NewFile error is not a *FormatError: %v", err)
			}
			return
		}
		for _, fd := range findings {
			if fd.Err == nil || (fd.Severity != SeverityError && fd.Severity != SeverityWarning) {
				t.Fatalf("malformed finding %+v", fd)
			}
		}
		readAll := func(p *Payload, err error) {
			if err != nil {
				return
			}
			if p.Size() > int64(len(data)) {
				t.Fatalf("payload of %d bytes from a %d-byte input", p.Size(), len(data))
			}
			if _, err := p.Data(); err != nil {
				t.Fatalf("payload at %d unreadable: %v", p.FileOffset, err)
			}
		}
		for i := range pf.Program.Segments {
			readAll(pf.Segment(i))
		}
		for i, ep := range pf.Program.ExecutionPlan {
			for j := range ep.Delegates {
				readAll(pf.DelegateData(i, j))
			}
		}
		n := len(pf.Program.ConstantBuffer)
		if cs := pf.Program.ConstantSegment; cs != nil {
			n = max(n, len(cs.Offsets))
		}
		for i := 0; i < n; i++ {
			readAll(pf.ConstantData(i))
		}
		for _, nd := range pf.Program.NamedData {
			readAll(pf.NamedData(nd.Key))
		}
	})
}
