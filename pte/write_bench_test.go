package pte

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
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

// BenchmarkWriteSegments writes a program with 64 segments of 32 MiB (2 GiB)
// from a real file to disk and compares the time with /bin/cp copying the
// same source file in the same run, followed by an fsync of the copy as
// WriteFile does (metric x-cp: our time / cp's time). The
// heap-inuse metric shows that payloads are streamed, not held in memory.
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
	srcs := []*io.SectionReader{io.NewSectionReader(in, 0, 0)}
	for i := int64(0); i < nSegs; i++ {
		srcs = append(srcs, io.NewSectionReader(in, i*segSize, segSize))
	}
	out := filepath.Join(dir, "out.pte")

	cpTime := func() time.Duration {
		dst := filepath.Join(dir, "cp.bin")
		start := time.Now()
		if msg, err := exec.Command("/bin/cp", src, dst).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v %s", err, msg)
		}
		// WriteFile makes its output durable; so must the copy, or the
		// comparison is page cache against disk.
		fh, err := os.Open(dst)
		if err != nil {
			b.Fatal(err)
		}
		if err := fh.Sync(); err != nil {
			b.Fatal(err)
		}
		fh.Close()
		d := time.Since(start)
		os.Remove(dst)
		return d
	}

	for _, mode := range []string{"kernel", "buffered"} {
		b.Run(mode, func(b *testing.B) {
			b.SetBytes(nSegs * segSize)
			b.ReportAllocs()
			var ours, cp time.Duration
			var heap uint64
			for range b.N {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				start := time.Now()
				if mode == "kernel" {
					_, err = WriteFile(out, p, srcs, nil)
				} else {
					err = writeHidden(out, p, srcs)
				}
				ours += time.Since(start)
				runtime.ReadMemStats(&after)
				if err != nil {
					b.Fatal(err)
				}
				if after.HeapInuse > before.HeapInuse {
					heap = max(heap, after.HeapInuse-before.HeapInuse)
				}
				os.Remove(out)
				b.StopTimer()
				cp += cpTime()
				b.StartTimer()
			}
			b.ReportMetric(float64(ours)/float64(cp), "x-cp")
			b.ReportMetric(float64(heap)/(1<<20), "MiB-heap-delta")
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
