package pte

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// wrCheckLayout checks the container rules of pte-format.md sections 3 and
// 4.1 on a file this package wrote with the given segment alignment.
func wrCheckLayout(t *testing.T, f *File, info *WriteInfo, align uint64) {
	t.Helper()
	if info.Size != f.Size {
		t.Errorf("WriteInfo.Size %d, file has %d bytes", info.Size, f.Size)
	}
	hasData := refersToSegment(f.Program)
	for _, s := range f.Program.Segments {
		hasData = hasData || s.Size > 0
	}
	h := f.Header
	if !hasData {
		if h != nil {
			t.Errorf("header written without segment bytes: %+v", h)
		}
		if info.Header != nil || info.ProgramSize != f.Size {
			t.Errorf("WriteInfo %+v for a file without header", info)
		}
		return
	}
	if h == nil {
		t.Fatal("segment bytes but no extended header")
	}
	if wrDiff(h, info.Header) != "" {
		t.Errorf("header read %+v, WriteInfo says %+v", h, info.Header)
	}
	if h.Magic != "eh00" || h.Length != 32 {
		t.Errorf("header magic %q length %d", h.Magic, h.Length)
	}
	if h.ProgramSize < 40 || h.ProgramSize%8 != 0 || h.ProgramSize != uint64(info.ProgramSize) {
		t.Errorf("program_size %d", h.ProgramSize)
	}
	if h.SegmentBaseOffset != roundUp(h.ProgramSize, align) || h.SegmentBaseOffset%align != 0 {
		t.Errorf("segment_base_offset %d, program_size %d, alignment %d", h.SegmentBaseOffset, h.ProgramSize, align)
	}
	var end uint64
	for i, s := range f.Program.Segments {
		want := uint64(0)
		if i > 0 {
			prev := f.Program.Segments[i-1]
			want = roundUp(prev.Offset+prev.Size, align)
		}
		if s.Offset != want {
			t.Errorf("segments[%d].offset = %d, want %d", i, s.Offset, want)
		}
		end = s.Offset + s.Size
	}
	if h.SegmentDataSize != end || uint64(f.Size) != h.SegmentBaseOffset+end {
		t.Errorf("segment_data_size %d, last segment end %d, file size %d", h.SegmentDataSize, end, f.Size)
	}
	// Padding between the flatbuffer and the segments, and between
	// segments, is zero.
	gap := make([]byte, h.SegmentBaseOffset-h.ProgramSize)
	if _, err := f.ReaderAt().ReadAt(gap, int64(h.ProgramSize)); err != nil || bytes.Count(gap, []byte{0}) != len(gap) {
		t.Errorf("padding before segment base is not zero (%v)", err)
	}
}

// TestWriteVectorsMatchUpstreamLayout re-writes every program written by
// the upstream serializer in vectors/pte with its own segment payloads and
// checks that the container layout is the one upstream produced.
func TestWriteVectorsMatchUpstreamLayout(t *testing.T) {
	dir := testkit.SharedDir(t, "vectors/pte")
	for _, path := range testkit.Glob(t, dir, "*.pte") {
		name := strings.TrimSuffix(filepath.Base(path), ".pte")
		t.Run(name, func(t *testing.T) {
			var in struct {
				SerializeOptions struct {
					SegmentAlignment uint64 `json:"segment_alignment"`
				} `json:"serialize_options"`
			}
			raw, err := os.ReadFile(filepath.Join(dir, name+".input.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &in); err != nil {
				t.Fatal(err)
			}
			align := in.SerializeOptions.SegmentAlignment
			if align == 0 {
				align = DefaultSegmentAlignment
			}
			orig, srcs := wrOpenSources(t, path)
			var buf bytes.Buffer
			info, err := Write(&buf, orig.Program, srcs, &WriteOptions{SegmentAlignment: in.SerializeOptions.SegmentAlignment})
			if err != nil {
				t.Fatal(err)
			}
			got := wrOpenBytes(t, buf.Bytes())
			if d := wrDiff(orig.Program, got.Program); d != "" {
				t.Errorf("re-read program differs: %s", d)
			}
			wrCheckLayout(t, got, info, align)
			if (orig.Header == nil) != (got.Header == nil) {
				t.Fatalf("header presence changed: upstream %v, ours %v", orig.Header, got.Header)
			}
			if orig.Header != nil {
				if got.Header.SegmentDataSize != orig.Header.SegmentDataSize {
					t.Errorf("segment_data_size %d, upstream %d", got.Header.SegmentDataSize, orig.Header.SegmentDataSize)
				}
				if got.Size-int64(got.Header.SegmentBaseOffset) != orig.Size-int64(orig.Header.SegmentBaseOffset) {
					t.Errorf("segment region size differs from upstream")
				}
			}
			wrComparePayloads(t, orig, got, info.SegmentIndex)
			if d := wrDiff(wrErrorFindings(orig), wrErrorFindings(got)); d != "" {
				t.Errorf("Verify findings changed: %v -> %v", wrErrorFindings(orig), wrErrorFindings(got))
			}
		})
	}
}

// TestCorpusRoundTrip reads every real program, writes it back with its own
// segments and reads the result: the program must be equal (its segment
// table laid out afresh), every payload byte-identical, and Verify must find
// no new errors.
func TestCorpusRoundTrip(t *testing.T) {
	dir := testkit.SharedDir(t, "corpus")
	tmp := t.TempDir()
	opened := 0
	for _, path := range testkit.Glob(t, dir, "*.pte") {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			orig, err := Open(path)
			if err != nil {
				// Every real program must open: one the runtime rejects
				// at method load is still a readable file.
				t.Fatalf("corpus program does not open: %v", err)
			}
			defer orig.Close()
			opened++
			srcs, err := orig.SegmentReaders()
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(tmp, name)
			info, err := WriteFile(out, orig.Program, srcs, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Open(out)
			if err != nil {
				t.Fatalf("re-reading: %v", err)
			}
			defer got.Close()
			if d := wrDiff(wrWithSegments(orig.Program, info.Segments), got.Program); d != "" {
				t.Errorf("program differs after round trip: %s", d)
			}
			for i, s := range orig.Program.Segments {
				if got.Program.Segments[i].Size != s.Size {
					t.Errorf("segments[%d] size %d, was %d", i, got.Program.Segments[i].Size, s.Size)
				}
			}
			wrCheckLayout(t, got, info, DefaultSegmentAlignment)
			wrComparePayloads(t, orig, got, info.SegmentIndex)
			before, after := wrErrorFindings(orig), wrErrorFindings(got)
			for k, n := range after {
				if n > before[k] {
					t.Errorf("new Verify error %s (x%d)", k, n-before[k])
				}
			}
		})
	}
	if opened == 0 {
		t.Error("no corpus program opened")
	}
}
