//go:build linux

package pte

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
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

// wrPeakRSS measures the peak resident set size of the benchmark process.
// It counts the whole test binary (runtime, test framework, the program
// being written), not only the bytes Write holds; the page cache that file
// copies go through is not part of it.
type wrPeakRSS struct{ max float64 }

// reset starts a new measurement window: writing 5 to clear_refs resets
// the kernel's high-water mark (VmHWM) of this process.
func (r *wrPeakRSS) reset() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// sample records VmHWM, or the lifetime peak from getrusage when /proc is
// unavailable.
func (r *wrPeakRSS) sample() {
	mib := -1.0
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				mib = kb / 1024
			}
		}
	}
	if mib < 0 {
		var ru syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
			mib = float64(ru.Maxrss) / 1024 // KiB on Linux
		}
	}
	r.max = max(r.max, mib)
}

// wrCpRatio times our write against cp of the same bytes in the same
// benchmark iteration. Fsync policy: both sides end with an fsync of their
// output (WriteFile syncs before its rename; cp is followed by an fsync of
// the copy), so both are measured up to durable bytes on disk. Each side
// starts after sync(2), so neither pays for the other's (or the setup's)
// pending write-back, and the order alternates between iterations.
type wrCpRatio struct {
	cp     time.Duration
	ratios []float64 // per iteration
	rss    wrPeakRSS
}

// iter runs one iteration: ours (writing ourOut) on the benchmark timer,
// cp of src to dst off it. Outputs are removed off the timer.
func (c *wrCpRatio) iter(b *testing.B, i int, ours func() error, ourOut, src, dst string) {
	b.StopTimer()
	var ours1, cp1 time.Duration
	runOurs := func() {
		syscall.Sync()
		c.rss.reset()
		b.StartTimer()
		start := time.Now()
		err := ours()
		ours1 = time.Since(start)
		b.StopTimer()
		c.rss.sample()
		if err != nil {
			b.Fatal(err)
		}
		os.Remove(ourOut)
	}
	runCp := func() {
		syscall.Sync()
		cp1 = wrTimeCp(b, src, dst)
		os.Remove(dst)
	}
	if i%2 == 0 {
		runOurs()
		runCp()
	} else {
		runCp()
		runOurs()
	}
	c.cp += cp1
	c.ratios = append(c.ratios, float64(ours1)/float64(cp1))
	b.StartTimer()
}

// report adds x-cp, the median over iterations of our time / cp's time
// (robust to one iteration hit by disk stalls; each ratio pairs runs that
// were next to each other in time), cp's mean time per op, and the peak RSS.
func (c *wrCpRatio) report(b *testing.B) {
	slices.Sort(c.ratios)
	n := len(c.ratios)
	b.ReportMetric((c.ratios[(n-1)/2]+c.ratios[n/2])/2, "x-cp")
	b.ReportMetric(c.cp.Seconds()/float64(b.N), "cp-s/op")
	b.ReportMetric(c.rss.max, "peak-RSS-MiB")
}

// wrTimeCp copies src to dst with cp, fsyncs dst, and returns the time.
func wrTimeCp(b *testing.B, src, dst string) time.Duration {
	b.Helper()
	start := time.Now()
	if msg, err := exec.Command("cp", src, dst).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v: %s", err, bytes.TrimSpace(msg))
	}
	f, err := os.Open(dst)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// BenchmarkWriteSegments writes a program with 64 segments of 32 MiB
// (2 GiB; 1 MiB each with -short) to disk, and reports the ratio to cp of
// the same bytes (x-cp, see wrCpRatio for the fsync policy) and the peak
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
			var c wrCpRatio
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
				c.iter(b, i, write, out, src, cpOut)
			}
			c.report(b)
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
