package pte_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// TestEncodeGolden pins the encoder's bytes: the digest of the flatbuffer
// it makes of every shared corpus program (read eagerly and with lazy
// plans), of the sample program, and of every program internal/testprog
// builds (whole files, written through Write with its segment layout),
// against testdata/encode.golden, made by this test with -update from the
// encoder written by hand before the codec was generated. A change of the
// encoder that changes one byte of one program fails it.
func TestEncodeGolden(t *testing.T) {
	var lines []string
	add := func(name string, b []byte) {
		lines = append(lines, fmt.Sprintf("%x %s", sha256.Sum256(b), name))
	}
	encode := func(name string, p *pte.Program) {
		b, err := pte.EncodeForTest(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		add(name, b)
	}
	for _, path := range testkit.Glob(t, testkit.SharedDir(t, "corpus"), "*.pte") {
		name := filepath.Base(path)
		for _, lazy := range []bool{false, true} {
			f, err := pte.OpenWith(path, &pte.OpenOptions{LazyPlans: lazy})
			if err != nil {
				t.Fatalf("%s: %v", name, err) // every real program must read
			}
			encode(fmt.Sprintf("corpus/%s lazy=%v", name, lazy), f.Program)
			f.Close()
		}
	}
	encode("sample", pte.SampleProgramForTest())
	progs, err := testprog.Build()
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range progs {
		add("testprog/"+name+" file", data)
		f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		encode("testprog/"+name, f.Program)
	}
	slices.Sort(lines)
	testkit.Golden(t, filepath.Join("testdata", "encode.golden"), []byte(strings.Join(lines, "\n")+"\n"))
}
