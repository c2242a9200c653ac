package ptd_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// addSeeds adds the shared .ptd files when present and two built files
// (fuzzing also works from testdata/fuzz alone).
func addSeeds(f *testing.F) {
	testkit.AddSharedSeeds(f, 4<<10, "corpus/*.ptd", "vectors/ptd/*.ptd")
	f.Add(build(f, entry{"a", layout2x2(), sixteen}, entry{"b", layout2x2(), sixteen}))
	f.Add(buildLegacy(f))
}

// FuzzOpen feeds arbitrary bytes to NewFile and, when it opens, reads every
// key and segment. Nothing may panic, every failure must be a
// *ptd.FormatError, and no payload may claim more bytes than the input has.
func FuzzOpen(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := ptd.NewFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			var fe *ptd.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("NewFile error is not a *ptd.FormatError: %v", err)
			}
			return
		}
		read := func(p *pte.Payload, err error) {
			if err != nil {
				var fe *ptd.FormatError
				if !errors.As(err, &fe) {
					t.Fatalf("untyped error %v", err)
				}
				return
			}
			if p.Size() > int64(len(data)) {
				t.Fatalf("payload of %d bytes from a %d-byte input", p.Size(), len(data))
			}
			if _, err := p.Data(); err != nil {
				t.Fatalf("payload at %d unreadable: %v", p.FileOffset, err)
			}
		}
		for i := range pf.Segments {
			read(pf.Segment(i))
		}
		for _, k := range pf.Keys() {
			read(pf.Data(k))
		}
		for _, fd := range pf.Findings {
			if fd.Err == nil {
				t.Fatal("finding without error")
			}
		}
		if d, err := pf.Contents(); err == nil {
			var buf bytes.Buffer
			if _, err := ptd.Write(&buf, d); err != nil || !bytes.Equal(buf.Bytes(), data) {
				t.Fatalf("verbatim write: %v", err)
			}
		}
	})
}

// FuzzResolve resolves a fixed program (constants and memory-planned
// tensors, and program named data) against the input as a data file, alone
// and merged with a valid file. Nothing may panic and every failing status
// must carry an error.
func FuzzResolve(f *testing.F) {
	addSeeds(f)
	good := build(f, entry{"c", layout2x2(), sixteen})
	p := program(tensor("a", false), tensor("b", true), tensor("c", false))
	p.NamedData = []*pte.NamedData{{Key: "n"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, srcs := range [][]ptd.Source{
			{src(t, "fuzz", data)},
			{src(t, "fuzz", data), src(t, "good", good)},
		} {
			r := ptd.Resolve(p, srcs)
			check := func(what string, s ptd.Status) {
				if !s.OK() && s.Err == nil {
					t.Fatalf("%s: status %v without an error", what, s)
				}
			}
			check("merge", r.Merge)
			for _, fr := range r.Files {
				check(fr.Name, fr.Load)
			}
			for _, m := range r.Methods {
				check(m.Name, m.Status)
				for _, row := range m.Tensors {
					check(row.Key, row.Status)
					if row.Status.OK() && (row.Offset < 0 || row.Offset+row.Size > int64(len(data)) && row.File == 0) {
						t.Fatalf("row %+v resolved outside the input", row)
					}
				}
			}
		}
	})
}

// TestWriteFuzzSeeds regenerates the built seeds in testdata/fuzz when
// PTD_WRITE_SEEDS=1 (they are committed; the fuzz targets also add them).
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("PTD_WRITE_SEEDS") != "1" {
		t.Skip("set PTD_WRITE_SEEDS=1 to regenerate testdata/fuzz seeds")
	}
	seeds := map[string][]byte{
		"built":        build(t, entry{"a", layout2x2(), sixteen}, entry{"b", layout2x2(), sixteen}),
		"older_layout": buildLegacy(t),
	}
	for _, target := range []string{"FuzzOpen", "FuzzResolve", "FuzzRoundTrip"} {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
