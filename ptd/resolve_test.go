package ptd_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// Programs and data files built here, for the cases the shared records do
// not cover.

const float32Type = pte.ScalarType(6) // FLOAT

// entry is one key of a built data file.
type entry struct {
	key    string
	layout *ptd.TensorLayout
	data   []byte
}

// layout2x2 is FLOAT [2, 2], contiguous.
func layout2x2() *ptd.TensorLayout {
	return &ptd.TensorLayout{ScalarType: float32Type, Sizes: []int32{2, 2}, DimOrder: []uint8{0, 1}}
}

// build writes a data file with one segment per entry.
func build(t testing.TB, entries ...entry) []byte {
	t.Helper()
	d := &ptd.Data{}
	for i, e := range entries {
		d.NamedData = append(d.NamedData, ptd.NamedData{Key: e.key, SegmentIndex: uint32(i), Layout: e.layout})
		d.Segments = append(d.Segments, io.NewSectionReader(bytes.NewReader(e.data), 0, int64(len(e.data))))
	}
	var buf bytes.Buffer
	if _, err := ptd.Write(&buf, d); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func open(t testing.TB, b []byte) *ptd.File {
	t.Helper()
	f, err := ptd.NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("open built file: %v", err)
	}
	return f
}

func src(t testing.TB, name string, b []byte) ptd.Source {
	t.Helper()
	f, err := ptd.NewFile(bytes.NewReader(b), int64(len(b)))
	return ptd.Source{Name: name, File: f, Err: err}
}

// tensor is an EXTERNAL FLOAT [2, 2] tensor named key; planned gives it
// allocation_info.
func tensor(key string, planned bool) *pte.EValue {
	t := &pte.Tensor{ScalarType: float32Type, Sizes: []int32{2, 2}, DimOrder: []uint8{0, 1},
		ExtraTensorInfo: &pte.ExtraTensorInfo{FullyQualifiedName: key, Location: 1}}
	if planned {
		t.AllocationInfo = &pte.AllocationDetails{MemoryID: 1}
	}
	return &pte.EValue{Val: t}
}

func program(values ...*pte.EValue) *pte.Program {
	return programOf([]*pte.ExecutionPlan{{Name: "forward", Values: values}})
}

var sixteen = bytes.Repeat([]byte{1}, 16)

func wantMethod(t *testing.T, r *ptd.Resolution, want string) {
	t.Helper()
	if got := r.Methods[0].Status.String(); got != want {
		t.Errorf("method: %s, want %s (%v)", got, want, r.Methods[0].Status.Err)
	}
}

// TestResolveRules covers each resolution rule with a built program.
func TestResolveRules(t *testing.T) {
	ab := build(t, entry{"a", layout2x2(), sixteen}, entry{"b", layout2x2(), sixteen})
	cases := []struct {
		name   string
		p      *pte.Program
		files  [][]byte
		method string
	}{
		{"constants found", program(tensor("a", false), tensor("b", false)), [][]byte{ab}, "Ok"},
		{"planned found", program(tensor("a", true)), [][]byte{ab}, "Ok"},
		{"constant without data map", program(tensor("a", false)), nil, "InvalidState"},
		{"planned without data map", program(tensor("a", true)), nil, "InvalidExternalData"},
		{"constants before planned", program(tensor("a", true), tensor("x", false)), nil, "InvalidState"},
		{"unknown key", program(tensor("c", false)), [][]byte{ab}, "NotFound"},
		{"trailing space is another key", program(tensor("a ", false)), [][]byte{ab}, "NotFound"},
		{"keys compare as C strings", program(tensor("a\x00junk", false)), [][]byte{ab}, "Ok"},
		{"no external tensors, no data", program(), nil, "Ok"},
		{"split over two files", program(tensor("a", true), tensor("b", false)),
			[][]byte{build(t, entry{"a", layout2x2(), sixteen}), build(t, entry{"b", layout2x2(), sixteen})}, "Ok"},
		{"scalar type differs", program(tensor("a", false)),
			[][]byte{build(t, entry{"a", &ptd.TensorLayout{ScalarType: 3, Sizes: []int32{2, 2}, DimOrder: []uint8{0, 1}}, sixteen})}, "InvalidExternalData"},
		{"rank differs", program(tensor("a", true)),
			[][]byte{build(t, entry{"a", &ptd.TensorLayout{ScalarType: float32Type, Sizes: []int32{4}, DimOrder: []uint8{0}}, sixteen})}, "InvalidExternalData"},
		{"dim order differs", program(tensor("a", false)),
			[][]byte{build(t, entry{"a", &ptd.TensorLayout{ScalarType: float32Type, Sizes: []int32{2, 2}, DimOrder: []uint8{1, 0}}, sixteen})}, "InvalidExternalData"},
		{"no layout", program(tensor("a", false)), [][]byte{build(t, entry{"a", nil, sixteen})}, "undefined (crash)"},
		{"short segment, constant", program(tensor("a", false)), [][]byte{build(t, entry{"a", layout2x2(), sixteen[:8]})}, "Ok"},
		// The planned copy reads 16 bytes from an 8-byte segment at the end
		// of the file: past the end.
		{"short segment, planned", program(tensor("a", true)), [][]byte{build(t, entry{"a", layout2x2(), sixteen[:8]})}, "InvalidArgument"},
		{"duplicate key across files", program(tensor("a", false)), [][]byte{ab, build(t, entry{"a", layout2x2(), sixteen})}, "InvalidState"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var srcs []ptd.Source
			for i, b := range c.files {
				srcs = append(srcs, src(t, "f"+itoa(i), b))
			}
			wantMethod(t, ptd.Resolve(c.p, srcs), c.method)
		})
	}
}

// TestResolveRows checks the per-tensor rows: where each key was found.
func TestResolveRows(t *testing.T) {
	p := program(tensor("a", false), &pte.EValue{Val: &pte.Int{IntVal: 3}}, tensor("b", true), tensor("zz", false))
	r := ptd.Resolve(p, []ptd.Source{
		src(t, "one", build(t, entry{"a", layout2x2(), sixteen})),
		src(t, "two", build(t, entry{"b", layout2x2(), sixteen})),
	})
	rows := r.Methods[0].Tensors
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3: %+v", len(rows), rows)
	}
	want := []struct {
		value  int
		key    string
		file   int
		status string
	}{{0, "a", 0, "Ok"}, {2, "b", 1, "Ok"}, {3, "zz", -1, "NotFound"}}
	for i, w := range want {
		g := rows[i]
		if g.Value != w.value || g.Key != w.key || g.File != w.file || g.Status.String() != w.status {
			t.Errorf("row %d: value %d key %q file %d %s; want %+v", i, g.Value, g.Key, g.File, g.Status, w)
		}
	}
	if rows[0].Offset < 0 || rows[0].Size != 16 || !rows[1].Planned {
		t.Errorf("rows: %+v", rows)
	}
	wantMethod(t, r, "NotFound")
	if strings.Join(r.Keys, ",") != "a,b" || !r.HaveMap {
		t.Errorf("merged keys %q, have map %v", r.Keys, r.HaveMap)
	}
}

// TestResolveMerge covers the merge rules and the load failure cases.
func TestResolveMerge(t *testing.T) {
	ab := build(t, entry{"a", layout2x2(), sixteen}, entry{"b", layout2x2(), sixteen})
	empty := build(t)
	p := program(tensor("a", false))
	dup := ptd.Resolve(p, []ptd.Source{src(t, "x", ab), src(t, "y", ab)})
	if dup.Merge.Code != pte.CodeInvalidArgument || !strings.Contains(dup.Merge.Err.Error(), "duplicate key") || dup.HaveMap {
		t.Errorf("duplicate keys: merge %v (%v)", dup.Merge, dup.Merge.Err)
	}
	none := ptd.Resolve(p, []ptd.Source{src(t, "e", empty)})
	if !none.Files[0].Load.OK() || none.Merge.Code != pte.CodeInvalidArgument {
		t.Errorf("file without keys: load %v merge %v", none.Files[0].Load, none.Merge)
	}
	withEmpty := ptd.Resolve(p, []ptd.Source{src(t, "e", empty), src(t, "ab", ab)})
	if !withEmpty.Merge.OK() || withEmpty.Methods[0].Tensors[0].File != 1 {
		t.Errorf("empty map dropped: merge %v rows %+v", withEmpty.Merge, withEmpty.Methods[0].Tensors)
	}
	missing := ptd.Load(filepath.Join(t.TempDir(), "nope.ptd"))
	r := ptd.Resolve(p, []ptd.Source{missing, src(t, "ab", ab)})
	if r.Files[0].Load.Code != pte.CodeAccessFailed || r.Module.Code != pte.CodeAccessFailed || r.HaveMap {
		t.Errorf("missing file: load %v module %v", r.Files[0].Load, r.Module)
	}
	wantMethod(t, r, "InvalidState")
	// The program's own named data is merged with the external map for
	// delegates: the same key in both fails the method.
	p2 := program(tensor("a", false))
	p2.NamedData = []*pte.NamedData{{Key: "b"}}
	wantMethod(t, ptd.Resolve(p2, []ptd.Source{src(t, "ab", ab)}), "InvalidArgument")
}

// damage is a byte edit of a built file.
type damage struct {
	name string
	edit func(b []byte) []byte
	code pte.Code // error FlatTensorDataMap::load returns; CodeOk: loads
	und  bool     // undefined upstream
}

func put32(off int, v uint32) func([]byte) []byte {
	return func(b []byte) []byte { binary.LittleEndian.PutUint32(b[off:], v); return b }
}

func put64(off int, v uint64) func([]byte) []byte {
	return func(b []byte) []byte { binary.LittleEndian.PutUint64(b[off:], v); return b }
}

// TestDamagedFiles edits a built file and checks typed errors with
// upstream's codes (and no panic).
func TestDamagedFiles(t *testing.T) {
	base := build(t, entry{"a", layout2x2(), sixteen}, entry{"b", layout2x2(), sixteen})
	f := open(t, base)
	fbEnd := int(f.Header.FlatbufferOffset + f.Header.FlatbufferSize)
	cases := []damage{
		{"truncated to 0", func(b []byte) []byte { return b[:0] }, pte.CodeInvalidArgument, false},
		{"truncated below head bytes", func(b []byte) []byte { return b[:ptd.HeadBytes-1] }, pte.CodeInvalidArgument, false},
		{"truncated inside flatbuffer", func(b []byte) []byte { return b[:fbEnd-8] }, pte.CodeInvalidExternal, false},
		{"truncated by one byte", func(b []byte) []byte { return b[:len(b)-1] }, pte.CodeInvalidExternal, false},
		{"bad identifier", func(b []byte) []byte { copy(b[4:], "FT02"); return b }, pte.CodeInvalidExternal, false},
		{"header magic", func(b []byte) []byte { copy(b[8:], "XH01"); return b }, pte.CodeInvalidExternal, false},
		{"header length 39", put32(12, 39), pte.CodeInvalidExternal, false},
		{"header length 4096 (longer is allowed)", put32(12, 4096), pte.CodeOk, false},
		{"flatbuffer size past end", put64(24, 1<<20), pte.CodeInvalidArgument, false},
		{"segment data size past end", put64(40, 1<<20), pte.CodeInvalidExternal, false},
		{"segment base past end", put64(32, 1<<40), pte.CodeInvalidExternal, false},
		{"root offset past flatbuffer", put32(0, 1<<16), pte.CodeInvalidExternal, true},
		{"root offset zero", put32(0, 0), pte.CodeInvalidExternal, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.edit(bytes.Clone(base))
			_, err := ptd.NewFile(bytes.NewReader(b), int64(len(b)))
			if c.code == pte.CodeOk {
				if err != nil {
					t.Fatalf("want it to open: %v", err)
				}
				return
			}
			var fe *ptd.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("err %v, want a *ptd.FormatError", err)
			}
			if fe.Code != c.code || fe.Undefined != c.und {
				t.Errorf("%v: code %v undefined %v, want %v %v", fe, fe.Code, fe.Undefined, c.code, c.und)
			}
		})
	}
}

// TestLookupChecks: segment index out of range and the segment-bound
// quirk (relative end against absolute end).
func TestLookupChecks(t *testing.T) {
	base := build(t, entry{"a", layout2x2(), sixteen}, entry{"b", layout2x2(), sixteen})
	f := open(t, base)
	ndPos := findSegmentIndex(t, base, f, 1)
	bad := bytes.Clone(base)
	binary.LittleEndian.PutUint32(bad[ndPos:], 7)
	g := open(t, bad)
	_, err := g.Lookup("b")
	var fe *ptd.FormatError
	if !errors.As(err, &fe) || fe.Code != pte.CodeInvalidExternal || !strings.Contains(fe.Msg, "segment index 7") {
		t.Fatalf("segment index out of range: %v", err)
	}
	if _, err := g.Data("a"); err != nil {
		t.Fatalf("key a still resolves: %v", err)
	}
	// segment_data_size 16: segment 1 ends past the segment area but inside
	// the file; upstream compares its relative end with the absolute end
	// and accepts it.
	quirk := bytes.Clone(base)
	binary.LittleEndian.PutUint64(quirk[40:], 16)
	q := open(t, quirk)
	if _, err := q.Data("b"); err != nil {
		t.Fatalf("segment past segment_data_size but inside the file: %v", err)
	}
	if _, err := q.Lookup("no such key"); !errors.As(err, &fe) || fe.Code != pte.CodeNotFound {
		t.Fatalf("unknown key: %v", err)
	}
}

// findSegmentIndex returns the file offset of named_data[i].segment_index
// in a built file whose value is i (the builder writes it, as i != 0).
func findSegmentIndex(t *testing.T, b []byte, f *ptd.File, i uint32) int {
	t.Helper()
	// Scan the flatbuffer for the u32 value i inside NamedData tables; the
	// only other small u32s are vtable-relative, so check by editing.
	end := int(f.Header.FlatbufferOffset + f.Header.FlatbufferSize)
	for off := 48; off+4 <= end; off += 4 {
		if binary.LittleEndian.Uint32(b[off:]) != i {
			continue
		}
		c := bytes.Clone(b)
		binary.LittleEndian.PutUint32(c[off:], 9)
		g, err := ptd.NewFile(bytes.NewReader(c), int64(len(c)))
		if err == nil && len(g.NamedData) > int(i) && g.NamedData[i].SegmentIndex == 9 {
			return off
		}
	}
	t.Fatal("segment_index not found")
	return 0
}

// TestOlderLayoutFinding builds a file in the pre-2025-06 layout and checks
// that it is recognised, listed with the keys today's loader sees, and that
// lookups fail as upstream's do.
func TestOlderLayoutFinding(t *testing.T) {
	b := buildLegacy(t)
	f := open(t, b)
	if f.Legacy == nil || len(f.Legacy.Tensors) != 1 || f.Legacy.Tensors[0].FullyQualifiedName != "w" {
		t.Fatalf("legacy: %+v", f.Legacy)
	}
	if got := f.Keys(); len(got) != 1 || got[0] != "w" {
		t.Fatalf("keys %q", got)
	}
	if len(f.Findings) == 0 || !strings.Contains(f.Findings[0].Err.Msg, "before 2025-06") {
		t.Fatalf("findings %v", f.Findings)
	}
	r := ptd.Resolve(program(tensor("w", false)), []ptd.Source{{Name: "old", File: f}})
	if !r.Files[0].Load.OK() || !r.Files[0].Legacy {
		t.Errorf("load %v", r.Files[0].Load)
	}
	wantMethod(t, r, "InvalidExternalData")
	var buf bytes.Buffer
	d, err := f.Contents()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ptd.Write(&buf, d); err != nil || !bytes.Equal(buf.Bytes(), b) {
		t.Fatalf("verbatim copy: %v", err)
	}
	d.Version = 9
	if _, err := ptd.Write(io.Discard, d); err == nil {
		t.Fatal("re-encoding an older-layout file succeeded")
	}
}

// TestWriteFileAtomic: WriteFile replaces the file it reads from and keeps
// its mode; a failed write leaves the target untouched.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.ptd")
	orig := build(t, entry{"a", layout2x2(), sixteen})
	if err := os.WriteFile(path, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := ptd.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, _ := f.Contents()
	d.NamedData[0].Key = "renamed"
	if _, err := ptd.WriteFile(path, d); err != nil {
		t.Fatal(err)
	}
	g, err := ptd.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.Keys()[0] != "renamed" {
		t.Errorf("keys %q", g.Keys())
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
	bad := &ptd.Data{NamedData: []ptd.NamedData{{Key: "x", SegmentIndex: 3}}}
	if _, err := ptd.WriteFile(path, bad); err == nil {
		t.Fatal("bad data written")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
}

// TestAbsentKeyCrashes: a named_data entry without a key string makes
// ExecuTorch dereference null when the merge lists keys.
func TestAbsentKeyCrashes(t *testing.T) {
	b := build(t, entry{"", layout2x2(), sixteen})
	d, err := open(t, b).Contents()
	if err != nil {
		t.Fatal(err)
	}
	d.NamedData[0].KeyAbsent = true
	var buf bytes.Buffer
	if _, err := ptd.Write(&buf, d); err != nil {
		t.Fatal(err)
	}
	f := open(t, buf.Bytes())
	if !f.NamedData[0].KeyAbsent {
		t.Fatal("key written present")
	}
	r := ptd.Resolve(program(tensor("a", false)), []ptd.Source{{Name: "x", File: f}})
	if !r.Crashed || !r.Merge.Undefined || !r.Methods[0].Status.Undefined {
		t.Errorf("merge %v crashed %v method %v", r.Merge, r.Crashed, r.Methods[0].Status)
	}
}

// programOf returns a program with just these plans.
func programOf(plans []*pte.ExecutionPlan) *pte.Program {
	p := &pte.Program{}
	p.SetPlans(plans)
	return p
}
