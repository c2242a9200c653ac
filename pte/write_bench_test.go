//go:build linux

package pte

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// wrBenchSource writes a file of n bytes with non-zero, non-repeating-page
// content (so no file system can store it sparsely) and returns its path.
func wrBenchSource(b *testing.B, dir string, n int64) string {
	b.Helper()
	path := filepath.Join(dir, "source.bin")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	var x uint64 = 0x9e3779b97f4a7c15
	for off := int64(0); off < n; off += int64(len(chunk)) {
		for i := 0; i < len(chunk); i += 8 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			for k := 0; k < 8; k++ {
				chunk[i+k] = byte(x >> (8 * k))
			}
		}
		if _, err := f.Write(chunk[:min(int64(len(chunk)), n-off)]); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	return path
}

// hiddenFile hides *os.File from Write, forcing the buffered copy path.
type hiddenFile struct{ w io.Writer }

func (h hiddenFile) Write(p []byte) (int, error) { return h.w.Write(p) }

// BenchmarkWriteSegments writes a program with 64 segments of 32 MiB
// (2 GiB; 1 MiB each with -short) to disk, and reports the ratio to cp of
// the same bytes (x-cp, see testkit.CopyBaseline for the fsync policy) and the peak
// RSS (target: well under 64 MiB, whatever the segment size). Sources:
//
//   - file: sections of one real file (copy_file_range);
//   - blob: Composite sources, a 256-byte in-memory header followed by a
//     file range, as the exporter's TensorRT blobs are (the header is
//     written, the range copied by the kernel);
//   - buffered: file sections written through a plain io.Writer (a 1 MiB
//     user-space buffer).
//
// Disk use peaks at 4 GiB (source + one output) and is cleaned up.
func BenchmarkWriteSegments(b *testing.B) {
	const nSegs = 64
	segSize := int64(32 << 20)
	if testing.Short() {
		segSize = 1 << 20
	}
	dir := b.TempDir()
	src := wrBenchSource(b, dir, nSegs*segSize)
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	p := wrProgram(nSegs)
	head := bytes.Repeat([]byte{0xA5}, 256)
	fileSrcs := []*io.SectionReader{io.NewSectionReader(in, 0, 0)}
	blobSrcs := []*io.SectionReader{io.NewSectionReader(in, 0, 0)}
	for i := int64(0); i < nSegs; i++ {
		fileSrcs = append(fileSrcs, io.NewSectionReader(in, i*segSize, segSize))
		// The blob variant copies the same number of bytes as cp does.
		body := io.NewSectionReader(in, i*segSize+int64(len(head)), segSize-int64(len(head)))
		blob := &cpComposite{parts: []*io.SectionReader{wrSection(head), body}}
		blobSrcs = append(blobSrcs, io.NewSectionReader(blob, 0, segSize))
	}
	out := filepath.Join(dir, "out.pte")
	cpOut := filepath.Join(dir, "cp.bin")

	for _, mode := range []string{"file", "blob", "buffered"} {
		b.Run(mode, func(b *testing.B) {
			b.SetBytes(nSegs * segSize)
			b.ReportAllocs()
			var c testkit.CopyBaseline
			write := func() error {
				switch mode {
				case "file":
					_, err := WriteFile(out, p, fileSrcs, nil)
					return err
				case "blob":
					_, err := WriteFile(out, p, blobSrcs, nil)
					return err
				}
				return writeHidden(out, p, fileSrcs)
			}
			for i := range b.N {
				c.Iter(b, i, write, out, cpOut, src)
			}
			c.Report(b)
		})
	}
}

// writeHidden writes through a plain io.Writer, the path non-file
// destinations take.
func writeHidden(path string, p *Program, srcs []*io.SectionReader) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := Write(hiddenFile{f}, p, srcs, nil); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
