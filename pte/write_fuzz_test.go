package pte

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// wrSeedPrograms are the programs whose written bytes seed FuzzRoundTrip:
// each exercises one writer rule (header or not, shared offsets, trailing
// empty segment, named data, odd alignment).
func wrSeedPrograms(t testing.TB) map[string][]byte {
	t.Helper()
	type seed struct {
		p    *Program
		segs [][]byte
		opts *WriteOptions
	}
	seeds := map[string]seed{
		"no_header":     {wrProgram(0), [][]byte{{}}, nil},
		"one_engine":    {wrProgram(1), [][]byte{{}, []byte("TR01 engine bytes")}, nil},
		"named_trailer": {wrProgram(1, 2, 3), [][]byte{{}, []byte("engine"), []byte("named"), {}}, &WriteOptions{SegmentAlignment: 12}},
		"dedup":         {wrProgram(2, 1), [][]byte{{}, []byte("same"), []byte("same")}, &WriteOptions{Dedup: true}},
	}
	out := map[string][]byte{}
	for name, s := range seeds {
		srcs := make([]*io.SectionReader, len(s.segs))
		for i, b := range s.segs {
			srcs[i] = wrSection(b)
		}
		var buf bytes.Buffer
		if _, err := Write(&buf, s.p, srcs, s.opts); err != nil {
			t.Fatalf("seed %s: %v", name, err)
		}
		out[name] = buf.Bytes()
	}
	return out
}

// TestWriteFuzzSeeds checks that the committed FuzzRoundTrip seeds are what
// the writer produces today; -update rewrites them.
func TestWriteFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzRoundTrip")
	for name, data := range wrSeedPrograms(t) {
		testkit.Golden(t, filepath.Join(dir, "write_"+name), testkit.FuzzCorpusFile(data))
	}
}

// FuzzRoundTrip: any file the reader accepts is re-written with its own
// segments and must read back to the same program and segment bytes.
func FuzzRoundTrip(f *testing.F) {
	testkit.AddSharedSeeds(f, 64<<10, "corpus/*.pte", "vectors/pte/*.pte")
	f.Fuzz(func(t *testing.T, data []byte) {
		orig, err := NewFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		srcs, err := orig.SegmentReaders()
		if err != nil {
			return
		}
		var buf bytes.Buffer
		info, err := Write(&buf, orig.Program, srcs, nil)
		if err != nil {
			var ve *VerifyError
			if errors.As(err, &ve) {
				// NewFile accepted this program; its re-encoding must
				// read back too.
				t.Fatalf("write refused its own output: %v", err)
			}
			var fe *FormatError
			if errors.As(err, &fe) {
				// Open accepts some programs Write refuses: a delegate that
				// refers to a segment or inline entry that does not exist
				// (Verify reports it; Write will not write the dangling
				// reference).
				return
			}
			t.Fatalf("write: %v", err)
		}
		if info.Size != int64(buf.Len()) {
			t.Fatalf("WriteInfo.Size %d, wrote %d", info.Size, buf.Len())
		}
		got, err := NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatalf("re-reading: %v", err)
		}
		if d := wrDiff(wrWithSegments(orig.Program, info.Segments), got.Program); d != "" {
			t.Fatalf("program differs: %s", d)
		}
		wrComparePayloads(t, orig, got, info.SegmentIndex)

		// Writing adds no method-level error: a program Verify finds clean
		// passes Strict.
		if len(wrErrorFindings(orig)) == 0 {
			if _, err := Write(io.Discard, orig.Program, srcs, &WriteOptions{Strict: true}); err != nil {
				t.Fatalf("Strict refused a program Verify accepts: %v", err)
			}
		}

		// With Dedup the segment table shrinks and references move, but
		// every payload must still resolve to the same bytes.
		buf.Reset()
		if info, err = Write(&buf, orig.Program, srcs, &WriteOptions{Dedup: true}); err != nil {
			var ve *VerifyError
			if errors.As(err, &ve) {
				t.Fatalf("write with Dedup refused its own output: %v", err)
			}
			var fe *FormatError
			if errors.As(err, &fe) {
				return // e.g. a reference to a segment that does not exist
			}
			t.Fatalf("write with Dedup: %v", err)
		}
		got, err = NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatalf("re-reading deduplicated file: %v", err)
		}
		wrComparePayloads(t, orig, got, info.SegmentIndex)
	})
}
