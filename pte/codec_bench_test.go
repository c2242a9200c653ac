package pte_test

import (
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// BenchmarkCodec65536 decodes (opens) and encodes a program whose method
// calls 65,536 engines (16-byte blobs, sparse), the size of the largest
// programs the scale benchmarks build: the cost of the codec, not of the
// segments.
func BenchmarkCodec65536(b *testing.B) {
	path := filepath.Join(b.TempDir(), "engines.pte")
	testprog.WriteEngines(b, path, 65536, 16)
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			f, err := pte.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	f, err := pte.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			if _, err := pte.EncodeForTest(f.Program); err != nil {
				b.Fatal(err)
			}
		}
	})
}
