package ptd_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/ptd"
)

// refView is the upstream Python view of a .ptd (corpus/ref/NAME.ptd.json,
// vectors/ptd/NAME.ptd.json).
type refView struct {
	File struct {
		Size           int64  `json:"size"`
		SHA256         string `json:"sha256"`
		RootOffset     uint32 `json:"root_offset"`
		FileIdentifier string `json:"file_identifier"`
	} `json:"file"`
	Header *struct {
		Magic             string      `json:"magic"`
		Length            uint32      `json:"length"`
		FlatbufferOffset  json.Number `json:"flatbuffer_offset"`
		FlatbufferSize    json.Number `json:"flatbuffer_size"`
		SegmentBaseOffset json.Number `json:"segment_base_offset"`
		SegmentDataSize   json.Number `json:"segment_data_size"`
	} `json:"header"`
	FlatTensor *struct {
		Version      uint32 `json:"version"`
		NumSegments  int    `json:"num_segments"`
		NumNamedData int    `json:"num_named_data"`
	} `json:"flat_tensor"`
	FlatTensorError *string `json:"flat_tensor_error"`
	Segments        []struct {
		Index      int         `json:"index"`
		Offset     json.Number `json:"offset"`
		Size       json.Number `json:"size"`
		FileOffset json.Number `json:"file_offset"`
		EndWithin  bool        `json:"end_within_segment_data"`
		Resolvable bool        `json:"resolvable"`
		SHA256     *string     `json:"sha256"`
		UsedBy     []string    `json:"used_by"`
	} `json:"segments"`
	NamedData []struct {
		Key          string `json:"key"`
		SegmentIndex uint32 `json:"segment_index"`
		TensorLayout *struct {
			ScalarType      string  `json:"scalar_type"`
			ScalarTypeValue int     `json:"scalar_type_value"`
			Sizes           []int32 `json:"sizes"`
			DimOrder        []uint8 `json:"dim_order"`
		} `json:"tensor_layout"`
		Offset     json.Number `json:"offset"`
		Size       json.Number `json:"size"`
		FileOffset json.Number `json:"file_offset"`
		SHA256     *string     `json:"sha256"`
	} `json:"named_data"`
}

func readRef(t *testing.T, path string) *refView {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v refView
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &v
}

// num checks that a JSON number equals an exact (unbounded) integer.
func num(t *testing.T, what string, n json.Number, want *big.Int) {
	t.Helper()
	got, ok := new(big.Int).SetString(n.String(), 10)
	if !ok || got.Cmp(want) != 0 {
		t.Errorf("%s: record %s, ours %s", what, n, want)
	}
}

func u(x uint64) *big.Int { return new(big.Int).SetUint64(x) }

func add(a, b uint64) *big.Int { return new(big.Int).Add(u(a), u(b)) }

func hashOf(t *testing.T, r io.Reader) string {
	t.Helper()
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// checkView compares an open file with the upstream Python view, field by
// field.
func checkView(t *testing.T, path string, f *ptd.File, ref *refView) {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if f.Size != ref.File.Size || f.RootOffset != ref.File.RootOffset || f.Identifier != ref.File.FileIdentifier {
		t.Errorf("file: size %d root %d id %q, record %+v", f.Size, f.RootOffset, f.Identifier, ref.File)
	}
	if h := hashOf(t, fh); h != ref.File.SHA256 {
		t.Errorf("sha256 %s, record %s", h, ref.File.SHA256)
	}
	if ref.Header == nil {
		t.Fatal("record has no header but the file opened")
	}
	h := f.Header
	if ref.Header.Magic != ptd.HeaderMagic || h.Length != ref.Header.Length {
		t.Errorf("header magic/length: ours %q %d, record %q %d", ptd.HeaderMagic, h.Length, ref.Header.Magic, ref.Header.Length)
	}
	num(t, "flatbuffer_offset", ref.Header.FlatbufferOffset, u(h.FlatbufferOffset))
	num(t, "flatbuffer_size", ref.Header.FlatbufferSize, u(h.FlatbufferSize))
	num(t, "segment_base_offset", ref.Header.SegmentBaseOffset, u(h.SegmentBaseOffset))
	num(t, "segment_data_size", ref.Header.SegmentDataSize, u(h.SegmentDataSize))
	if ref.FlatTensor == nil {
		// Upstream's tooling cannot decode it: we must say why.
		if f.Legacy == nil {
			t.Errorf("record: upstream cannot decode the FlatTensor (%v); we read it as the current layout", deref(ref.FlatTensorError))
		}
		return
	}
	if f.Legacy != nil {
		t.Fatalf("we read an older layout; upstream decoded the current one")
	}
	if f.Version != ref.FlatTensor.Version || len(f.Segments) != ref.FlatTensor.NumSegments || len(f.NamedData) != ref.FlatTensor.NumNamedData {
		t.Errorf("flat_tensor: version %d, %d segments, %d named data; record %+v", f.Version, len(f.Segments), len(f.NamedData), *ref.FlatTensor)
	}
	if len(ref.Segments) != len(f.Segments) || len(ref.NamedData) != len(f.NamedData) {
		t.Fatalf("%d segments, %d named data; record lists %d, %d", len(f.Segments), len(f.NamedData), len(ref.Segments), len(ref.NamedData))
	}
	segHash := make([]*string, len(f.Segments))
	for i, s := range f.Segments {
		rs := ref.Segments[i]
		what := "segments[" + itoa(i) + "]"
		if rs.Index != i {
			t.Errorf("%s: record index %d", what, rs.Index)
		}
		num(t, what+".offset", rs.Offset, u(s.Offset))
		num(t, what+".size", rs.Size, u(s.Size))
		start := add(h.SegmentBaseOffset, s.Offset)
		num(t, what+".file_offset", rs.FileOffset, start)
		if within := add(s.Offset, s.Size).Cmp(u(h.SegmentDataSize)) <= 0; within != rs.EndWithin {
			t.Errorf("%s: end within segment data %v, record %v", what, within, rs.EndWithin)
		}
		p, err := f.Segment(i)
		if resolvable := err == nil; resolvable != rs.Resolvable {
			t.Errorf("%s: resolvable %v (%v), record %v", what, resolvable, err, rs.Resolvable)
		}
		if err == nil {
			hs := hashOf(t, p)
			segHash[i] = &hs
			if rs.SHA256 == nil || *rs.SHA256 != hs {
				t.Errorf("%s: sha256 %s, record %v", what, hs, deref(rs.SHA256))
			}
		} else {
			var fe *ptd.FormatError
			if !errors.As(err, &fe) {
				t.Errorf("%s: untyped error %v", what, err)
			}
		}
		var used []string
		for _, nd := range f.NamedData {
			if int(nd.SegmentIndex) == i {
				used = append(used, nd.Key)
			}
		}
		if !slices.Equal(used, rs.UsedBy) && !(len(used) == 0 && len(rs.UsedBy) == 0) {
			t.Errorf("%s: used by %q, record %q", what, used, rs.UsedBy)
		}
	}
	for i, nd := range f.NamedData {
		rn := ref.NamedData[i]
		what := "named_data[" + itoa(i) + "]"
		if nd.Key != rn.Key || nd.SegmentIndex != rn.SegmentIndex {
			t.Errorf("%s: key %q segment %d, record %q %d", what, nd.Key, nd.SegmentIndex, rn.Key, rn.SegmentIndex)
		}
		switch l, rl := nd.Layout, rn.TensorLayout; {
		case (l == nil) != (rl == nil):
			t.Errorf("%s: layout %v, record %v", what, l, rl)
		case l != nil:
			if l.ScalarType.String() != rl.ScalarType || int(l.ScalarType) != rl.ScalarTypeValue ||
				!slices.Equal(l.Sizes, rl.Sizes) || !slices.Equal(l.DimOrder, rl.DimOrder) {
				t.Errorf("%s: layout %v %v %v, record %+v", what, l.ScalarType, l.Sizes, l.DimOrder, *rl)
			}
		}
		if int(nd.SegmentIndex) < len(f.Segments) {
			s := f.Segments[nd.SegmentIndex]
			num(t, what+".offset", rn.Offset, u(s.Offset))
			num(t, what+".size", rn.Size, u(s.Size))
			num(t, what+".file_offset", rn.FileOffset, add(h.SegmentBaseOffset, s.Offset))
			if got := segHash[nd.SegmentIndex]; deref(got) != deref(rn.SHA256) {
				t.Errorf("%s: sha256 %v, record %v", what, deref(got), deref(rn.SHA256))
			}
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func itoa(i int) string { return big.NewInt(int64(i)).String() }

// TestCorpusViews: every corpus .ptd opens (or is recognised as the older
// layout), agrees with ref/NAME.ptd.json field by field, and round-trips
// byte for byte through Write and WriteFile.
func TestCorpusViews(t *testing.T) {
	dir := testkit.SharedDir(t, "corpus")
	for _, path := range testkit.Glob(t, dir, "*.ptd") {
		name := strings.TrimSuffix(filepath.Base(path), ".ptd")
		t.Run(name, func(t *testing.T) {
			ref := readRef(t, filepath.Join(dir, "ref", name+".ptd.json"))
			f, err := ptd.Open(path)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer f.Close()
			checkView(t, path, f, ref)
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			d, err := f.Contents()
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if _, err := ptd.Write(&buf, d); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), orig) {
				t.Fatal("Write of unchanged contents differs from the file")
			}
			out := filepath.Join(t.TempDir(), "out.ptd")
			if _, err := ptd.WriteFile(out, d); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(out); !bytes.Equal(got, orig) {
				t.Fatal("WriteFile of unchanged contents differs from the file")
			}
			if f.Legacy == nil {
				checkReencode(t, f, d)
			}
		})
	}
}

// checkReencode writes a modified copy (a fresh encoding) and checks that
// it reads back with the same keys, layouts and payloads.
func checkReencode(t *testing.T, f *ptd.File, d *ptd.Data) {
	t.Helper()
	fresh := &ptd.Data{Version: d.Version, NamedData: d.NamedData, Segments: d.Segments}
	var buf bytes.Buffer
	info, err := ptd.Write(&buf, fresh)
	if err != nil {
		t.Fatal(err)
	}
	if info.Verbatim || info.Size != int64(buf.Len()) {
		t.Fatalf("fresh encoding: %+v for %d bytes", info, buf.Len())
	}
	g, err := ptd.NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatalf("reopen fresh encoding: %v", err)
	}
	checkSame(t, f, g)
	for _, nd := range f.NamedData {
		a, err1 := f.Data(nd.Key)
		b, err2 := g.Data(nd.Key)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("key %q: %v / %v", nd.Key, err1, err2)
		}
		if err1 == nil && hashOf(t, a) != hashOf(t, b) {
			t.Errorf("key %q: payload differs after re-encoding", nd.Key)
		}
	}
	if len(g.Findings) != 0 {
		t.Errorf("fresh encoding has findings: %v", g.Findings)
	}
}

// TestVectorViews: every vectors/ptd file either opens and agrees with its
// Python view, or is refused with a *ptd.FormatError (TestVectors checks
// that the refusal is the C++ one).
func TestVectorViews(t *testing.T) {
	dir := testkit.SharedDir(t, "vectors", "ptd")
	for _, path := range testkit.Glob(t, dir, "*.ptd") {
		name := strings.TrimSuffix(filepath.Base(path), ".ptd")
		t.Run(name, func(t *testing.T) {
			f, err := ptd.Open(path)
			if err != nil {
				var fe *ptd.FormatError
				if !errors.As(err, &fe) {
					t.Fatalf("untyped error: %v", err)
				}
				return
			}
			defer f.Close()
			refPath := filepath.Join(dir, name+".ptd.json")
			if _, err := os.Stat(refPath); err != nil {
				t.Skipf("no Python view: %v", err)
			}
			checkView(t, path, f, readRef(t, refPath))
		})
	}
}

// TestReadsOnlyHeadAndFlatbuffer: opening reads the head and the
// flatbuffer region, never segment bytes.
func TestReadsOnlyHeadAndFlatbuffer(t *testing.T) {
	b := build(t, entry{"a", layout2x2(), bytes.Repeat([]byte{7}, 1<<16)})
	c := testkit.NewCountingReaderAt(bytes.NewReader(b))
	f, err := ptd.NewFile(c, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if max := int64(ptd.HeadBytes) + int64(f.Header.FlatbufferOffset+f.Header.FlatbufferSize); c.Bytes() > max {
		t.Fatalf("read %d bytes opening a %d-byte file, want at most %d", c.Bytes(), len(b), max)
	}
}

// TestContentsLayoutEditedInPlace: a layout of the Data that Contents
// returned, edited in place, is written, not dropped by a verbatim copy.
func TestContentsLayoutEditedInPlace(t *testing.T) {
	var src bytes.Buffer
	if _, err := ptd.Write(&src, &ptd.Data{
		NamedData: []ptd.NamedData{{Key: "w", Layout: &ptd.TensorLayout{ScalarType: 6, Sizes: []int32{2, 2}, DimOrder: []uint8{0, 1}}}},
		Segments:  []*io.SectionReader{io.NewSectionReader(bytes.NewReader(make([]byte, 16)), 0, 16)},
	}); err != nil {
		t.Fatal(err)
	}
	for _, edit := range []struct {
		name string
		do   func(l *ptd.TensorLayout)
	}{
		{"sizes", func(l *ptd.TensorLayout) { l.Sizes[0] = 4; l.Sizes[1] = 1 }},
		{"dim order", func(l *ptd.TensorLayout) { l.DimOrder[0], l.DimOrder[1] = 1, 0 }},
		{"scalar type", func(l *ptd.TensorLayout) { l.ScalarType = 3 }},
	} {
		t.Run(edit.name, func(t *testing.T) {
			f, err := ptd.NewFile(bytes.NewReader(src.Bytes()), int64(src.Len()))
			if err != nil {
				t.Fatal(err)
			}
			d, err := f.Contents()
			if err != nil {
				t.Fatal(err)
			}
			edit.do(d.NamedData[0].Layout)
			want := *d.NamedData[0].Layout
			var out bytes.Buffer
			info, err := ptd.Write(&out, d)
			if err != nil {
				t.Fatal(err)
			}
			if info.Verbatim {
				t.Fatal("the edited layout was dropped: Write copied the source verbatim")
			}
			g, err := ptd.NewFile(bytes.NewReader(out.Bytes()), int64(out.Len()))
			if err != nil {
				t.Fatal(err)
			}
			got := g.NamedData[0].Layout
			if got.ScalarType != want.ScalarType || !slices.Equal(got.Sizes, want.Sizes) || !slices.Equal(got.DimOrder, want.DimOrder) {
				t.Errorf("written layout %+v, want %+v", *got, want)
			}
			if l := f.NamedData[0].Layout; !slices.Equal(l.Sizes, []int32{2, 2}) || !slices.Equal(l.DimOrder, []uint8{0, 1}) || l.ScalarType != 6 {
				t.Errorf("the source file's view changed: %+v", *l)
			}
		})
	}
}
