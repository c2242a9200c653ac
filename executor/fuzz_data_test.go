package executor

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// dataSeeds are a program with an external constant and a memory-planned
// external tensor, and a data file holding both, then variations: the
// file without one key, and a program without external tensors.
func dataSeeds(t testing.TB) map[string][2][]byte {
	prog := func(edit func(p *pte.Program)) []byte {
		p := seedProgram(t, seedMetadata())
		edit(p)
		return writeProgram(t, p, seedMetadata())
	}
	both := prog(func(p *pte.Program) {
		externalTensor(p.Plan(0), "c", false)
		externalTensor(p.Plan(0), "p", true)
	})
	return map[string][2][]byte{
		"resolves":    {both, dataFile(t, "c", "p")},
		"missing_key": {both, dataFile(t, "c")},
		"no_external": {prog(func(*pte.Program) {}), dataFile(t, "c")},
	}
}

// FuzzLoadWithData drives method load with external data: arbitrary
// program bytes and data file bytes, the data file alone and merged with
// a good one. Nothing panics, a data file failure is an *Error wrapping
// ErrDataFiles, every LoadMethod failure is an *Error with a code, a method
// loads only when its external data resolves, and PlanProgram with the
// same files agrees with LoadMethod.
func FuzzLoadWithData(f *testing.F) {
	for _, s := range dataSeeds(f) {
		f.Add(s[0], s[1])
	}
	good := dataFile(f, "c")
	f.Fuzz(func(t *testing.T, program, data []byte) {
		file, err := pte.NewFile(bytes.NewReader(program), int64(len(program)))
		if err != nil {
			return
		}
		for _, srcs := range [][]ptd.Source{
			{dataSource(t, "fuzz", data)},
			{dataSource(t, "good", good), dataSource(t, "fuzz", data)},
		} {
			reg := &Registry{}
			reg.RegisterBackend(TensorRTBackendID, acceptingBackend{})
			prog, err := Load(file, Config{Registry: reg, DataFiles: srcs})
			var re *Error
			if err != nil {
				if !errors.As(err, &re) || !errors.Is(err, ErrDataFiles) {
					t.Fatalf("Load: %v", err)
				}
				continue
			}
			pp, err := PlanProgram(file, PlanOptions{Registry: reg, DataFiles: srcs})
			if err != nil {
				t.Fatalf("PlanProgram: %v", err)
			}
			for i, name := range prog.MethodNames() {
				m, err := prog.LoadMethod(name, nil)
				if err != nil {
					if !errors.As(err, &re) || re.Code == pte.CodeOk {
						t.Fatalf("LoadMethod(%q): %v", name, err)
					}
				} else {
					m.Close()
					for pi, ep := range file.Program.Plans() {
						if ep != nil && ep.Name == name && !prog.Data().Methods[pi].Status.OK() {
							t.Fatalf("method %q loads although its external data does not resolve: %v", name, prog.Data().Methods[pi].Status)
						}
					}
				}
				// PlanProgram stands in for backends the registry lacks
				// (NotModelled) where LoadMethod fails with NotFound, so
				// the two agree only on methods the plan fully models.
				if i < len(pp.Methods) && pp.Methods[i].Name == name && len(pp.Methods[i].NotModelled) == 0 && pp.Methods[i].OK != (err == nil) {
					t.Fatalf("method %q: plan ok %v, LoadMethod %v", name, pp.Methods[i].OK, err)
				}
			}
		}
	})
}

// TestWriteDataFuzzSeeds regenerates testdata/fuzz/FuzzLoadWithData when
// EXECUTOR_WRITE_SEEDS=1 (the seeds are committed; the target adds them
// too).
func TestWriteDataFuzzSeeds(t *testing.T) {
	if os.Getenv("EXECUTOR_WRITE_SEEDS") != "1" {
		t.Skip("set EXECUTOR_WRITE_SEEDS=1 to regenerate testdata/fuzz/FuzzLoadWithData")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzLoadWithData")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, s := range dataSeeds(t) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n[]byte(%q)\n", s[0], s[1])
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
