package pte

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// addFuzzSeeds adds every program of the shared corpus and vectors when they
// are present (fuzzing also works from testdata/fuzz alone). Large files
// are left out: they slow minimization down without adding structure.
func addFuzzSeeds(f *testing.F) {
	root := filepath.Join("..", "..", "shared")
	for _, pattern := range []string{"corpus/*.pte", "corpus/*.ptd", "vectors/pte/*.pte", "vectors/pte-bad/*.pte"} {
		files, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil && len(b) <= 4<<10 {
				f.Add(b)
			}
		}
	}
}

// FuzzOpen feeds arbitrary bytes to NewFile and, when it opens, exercises
// Verify and every payload accessor. Nothing may panic, and every failure
// must be a *FormatError or an I/O error.
func FuzzOpen(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := NewFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("NewFile error is not a *FormatError: %v", err)
			}
			return
		}
		for _, fd := range pf.Verify() {
			if fd.Err == nil || (fd.Severity != Error && fd.Severity != Warning) {
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
