package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

const bigEngine = 2 << 30 // engine bytes of the generated program

var (
	bigOnce sync.Once
	bigDir  string
	bigPath string
	bigErr  error
)

// TestMain runs the tests, then removes the large benchmark file. Through
// testscript.Main the test binary is also the commands of the script tests
// (script_test.go).
func TestMain(m *testing.M) {
	testscript.Main(cleanup{m}, scriptCommands)
}

// cleanup removes the large benchmark file after the tests.
type cleanup struct{ m *testing.M }

func (c cleanup) Run() int {
	code := c.m.Run()
	if bigDir != "" {
		os.RemoveAll(bigDir)
	}
	return code
}

// bigProgram returns a TensorRT program whose engine is 2 GiB of zeros,
// written sparse: trtPrograms' "segment" program with its blob rebuilt
// around the big engine.
func bigProgram(tb testing.TB) string {
	src := trtPrograms(tb)["segment"]
	bigOnce.Do(func() { bigPath, bigErr = writeBigProgram(src) })
	require.NoError(tb, bigErr)
	return bigPath
}

func writeBigProgram(src []byte) (string, error) {
	f, err := pte.NewFile(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		return "", err
	}
	defer f.Close()
	segs, err := f.SegmentReaders()
	if err != nil {
		return "", err
	}
	pl, err := f.DelegateData(0, 0)
	if err != nil {
		return "", err
	}
	blob, err := delegate.Decode(pl, pl.Size())
	if err != nil {
		return "", err
	}
	segs[f.Program.Plan(0).Delegates[0].Processed.Index], err = delegate.NewBlobReader(&blob.Metadata, testprog.Zeros{}, bigEngine)
	if err != nil {
		return "", err
	}
	if bigDir, err = os.MkdirTemp("", "pteinspect-big"); err != nil {
		return "", err
	}
	path := filepath.Join(bigDir, "trt_2gib.pte")
	out, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer out.Close()
	sw := &testprog.SparseWriter{F: out}
	if _, err := pte.Write(sw, f.Program, segs, nil); err != nil {
		return "", err
	}
	return path, out.Truncate(sw.Off)
}

// TestBigProgramViewsReadLittle: opening a 2 GiB TensorRT program and
// building both the JSON and the human view reads under 1 MiB.
func TestBigProgramViewsReadLittle(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 2 GiB sparse file")
	}
	path := bigProgram(t)
	cr, size := testkit.OpenCounting(t, path)
	require.Greater(t, size, int64(bigEngine))

	f, err := pte.NewFile(cr, size)
	require.NoError(t, err)
	doc, err := inspect.Build(f, nil)
	require.NoError(t, err)
	require.Len(t, doc.Delegates, 1)
	require.NotNil(t, doc.Delegates[0].TensorRT)
	require.EqualValues(t, bigEngine, *doc.Delegates[0].TensorRT.EngineSize)
	require.Empty(t, doc.Delegates[0].TensorRT.Hazards)
	require.NoError(t, inspect.Encode(io.Discard, doc))
	st, err := inspect.NewStream(f, nil)
	require.NoError(t, err)
	_, err = printHuman(io.Discard, path, f, st, &options{})
	require.NoError(t, err)
	require.Less(t, cr.Bytes(), int64(1<<20), "read %d bytes", cr.Bytes())
}

// BenchmarkJSONProcess runs `pteinspect --json` as a whole process on the
// largest corpus program and on a generated 2 GiB TensorRT program, and
// reports the time of each and their ratio (target: both under 20 ms, the
// 2 GiB case within 1.5x of the small one).
func BenchmarkJSONProcess(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "pteinspect")
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(goCmd, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	corpus := largestCorpusFile(b)
	big := bigProgram(b)
	runOnce := func(path string) time.Duration {
		start := time.Now()
		cmd := exec.Command(bin, "--json", path)
		cmd.Stdout = io.Discard
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s: %v", path, err)
		}
		return time.Since(start)
	}
	runOnce(corpus) // warm the page cache
	runOnce(big)
	var small, large time.Duration
	b.ResetTimer()
	for b.Loop() {
		small += runOnce(corpus)
		large += runOnce(big)
	}
	n := float64(b.N)
	b.ReportMetric(float64(small.Nanoseconds())/n, "corpus-ns/op")
	b.ReportMetric(float64(large.Nanoseconds())/n, "2GiB-ns/op")
	b.ReportMetric(float64(large)/float64(small), "ratio")
}

func largestCorpusFile(tb testing.TB) string {
	var best string
	var size int64 = -1
	for _, p := range testkit.Glob(tb, testkit.SharedDir(tb, "corpus"), "*.pte") {
		if fi, err := os.Stat(p); err == nil && fi.Size() > size {
			best, size = p, fi.Size()
		}
	}
	return best
}
