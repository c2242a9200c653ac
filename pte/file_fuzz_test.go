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

// openAndVerify runs NewFileWith (opts may be nil) and, when it succeeds, Verify on data, and
// returns the bytes allocated meanwhile (runtime.MemStats.TotalAlloc).
func openAndVerify(data []byte, opts *OpenOptions) (f *File, findings []Finding, alloc uint64, err error) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, err = NewFileWith(bytes.NewReader(data), int64(len(data)), opts)
	if err == nil {
		findings = f.Verify()
	}
	runtime.ReadMemStats(&after)
	return f, findings, after.TotalAlloc - before.TotalAlloc, err
}

// FuzzOpen feeds arbitrary bytes to NewFile and, when it opens, exercises
// Verify and every payload accessor. Nothing may panic, every failure must
// be a *FormatError, and NewFile plus Verify may allocate no more than
// openAllocBound. The same holds with OpenOptions.Truncated, which must
// accept what NewFile accepts (File.Truncated nil) and, besides, only files
// NewFile refuses with a *TruncatedError (File.Truncated set to it). And
// OpenOptions.LazyPlans must read exactly what NewFile reads, within the
// same allocation bound.
func FuzzOpen(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := fuzzOpenWith(t, data, nil)
		fuzzOpenWith(t, data, &OpenOptions{LazyPlans: true}) // within the same bound
		checkLazySame(t, data)
		tf, terr := fuzzOpenWith(t, data, &OpenOptions{Truncated: true})
		var te *TruncatedError
		truncated := errors.As(err, &te)
		switch { // a program region cut short stays refused either way
		case err == nil && (terr != nil || tf.Truncated != nil):
			t.Fatalf("opens whole but not with Truncated: %v", terr)
		case err != nil && terr == nil && (!truncated || tf.Truncated == nil || tf.Truncated.Error() != err.Error()):
			t.Fatalf("refused (%v) but opened with Truncated (File.Truncated: %v)", err, tf.Truncated)
		}
	})
}

// fuzzOpenWith opens data with opts, checks the allocation bound, the error
// type and the findings, and reads every payload the file gives.
func fuzzOpenWith(t *testing.T, data []byte, opts *OpenOptions) (*File, error) {
	t.Helper()
	pf, findings, alloc, err := openAndVerify(data, opts)
	if alloc > openAllocBound(len(data)) {
		t.Fatalf("NewFileWith and Verify allocated %d bytes for a %d-byte input (bound %d)", alloc, len(data), openAllocBound(len(data)))
	}
	if err != nil {
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("NewFileWith error is not a *FormatError: %v", err)
		}
		return nil, err
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
	for i := range pf.Program.NumPlans() {
		for j := range pf.Program.PlanDelegates(i) {
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
	return pf, nil
}
