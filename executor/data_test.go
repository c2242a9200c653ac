package executor

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// TestDataPairs loads every run of corpus/PAIRS.tsv (a program with zero or
// more data files) and compares, with the C++ record of the run: Load's
// result with Module::load's (the first failed data file, else the merge),
// and each method's LoadMethod result with load_method's. When the data
// files cannot be used, the record goes on without them, and so do we.
func TestDataPairs(t *testing.T) {
	dir := testkit.SharedDir(t, "corpus")
	for _, run := range testkit.Pairs(t, dir) {
		t.Run(run.Run, func(t *testing.T) { checkLoadRun(t, run.Program, run.DataFiles, run.Record) })
	}
}

// TestDataVectors does the same for the runs of vectors/ptd (damaged and
// altered data files with a corpus program).
func TestDataVectors(t *testing.T) {
	dir := testkit.SharedDir(t, "vectors", "ptd")
	for _, run := range testkit.DataVectors(t, dir, testkit.SharedDir(t, "corpus")) {
		t.Run(run.Run, func(t *testing.T) {
			if run.Missing != "" {
				t.Skipf("data file %s is missing but the C++ record loaded it", run.Missing)
			}
			checkLoadRun(t, run.Program, run.DataFiles, run.Record)
		})
	}
}

// checkLoadRun loads program with dataFiles and compares with the C++
// record: Load's result with Module::load's (the first failed data file,
// else the merge), and each method's LoadMethod result with load_method's.
// When the data files cannot be used, the record goes on without them, and
// so do we; where the C++ runtime crashed, we must refuse.
func checkLoadRun(t *testing.T, program string, dataFiles []string, rec *testkit.DataRecord) {
	t.Helper()
	f, err := pte.Open(program)
	if err != nil {
		// Only a program the record shows refused may fail to open, with
		// the record's code (a missing program is no refusal).
		if got := CodeOf(err).String(); errors.Is(err, fs.ErrNotExist) || got != rec.Program {
			t.Fatalf("program: %v [%s]; record's program_load %q", err, got, rec.Program)
		}
		return
	}
	defer f.Close()
	var srcs []ptd.Source
	for _, n := range dataFiles {
		s := ptd.Load(n)
		if s.File != nil {
			defer s.File.Close()
		}
		srcs = append(srcs, s)
	}
	reg := &Registry{}
	for _, id := range rec.Backends {
		reg.RegisterBackend(id, acceptingBackend{})
	}
	cfg := Config{Registry: reg, NoDeprecatedConstantBuffer: true, DataFiles: srcs}
	prog, err := Load(f, cfg)
	// Module::load answers the first failure of the data files, the merge
	// and Program::load, in that order.
	want := rec.ModuleCode()
	crashedEarly := rec.Crashed && len(rec.Files) < len(srcs)
	switch got := CodeOf(err).String(); {
	case crashedEarly:
		if !errors.Is(err, ErrDataFiles) {
			t.Fatalf("Load: %v; the C++ loader crashed on a data file", err)
		}
		return
	case got != want:
		t.Fatalf("Load with %d data files: %s (%v), record %s", len(srcs), got, err, want)
	}
	switch {
	case errors.Is(err, ErrDataFiles):
		// The record goes on without the data files, and so do we.
		cfg.DataFiles = nil
		prog, err = Load(f, cfg)
	case err != nil && !rec.ProgramRefused():
		t.Fatalf("data file failure does not wrap ErrDataFiles: %v", err)
	}
	if rec.ProgramRefused() {
		// Program::load refused it: the record stops there, with no
		// method verdict to compare.
		if got := CodeOf(err).String(); got != rec.Program {
			t.Fatalf("Load: %s (%v), record's program_load %s", got, err, rec.Program)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Methods) == 0 {
		t.Fatal("the record lists no methods")
	}
	unreached := rec.Unreached()
	for _, name := range rec.Methods {
		if unreached[name] {
			continue // the C++ runtime died before loading it
		}
		m, err := prog.LoadMethod(name, nil)
		if err == nil {
			m.Close()
		}
		want, ok := rec.Loads[name]
		if !ok {
			// The C++ runtime crashed loading it: we must refuse.
			if err == nil {
				t.Errorf("method %s loads; the C++ runtime crashed", name)
			}
			continue
		}
		if got := CodeOf(err).String(); got != want {
			t.Errorf("method %s: %s (%v), record %s", name, got, err, want)
		}
	}
}

// dataFile writes a .ptd file with one FLOAT [2,2] key per name.
func dataFile(t testing.TB, keys ...string) []byte {
	t.Helper()
	d := &ptd.Data{}
	for i, k := range keys {
		d.NamedData = append(d.NamedData, ptd.NamedData{Key: k, SegmentIndex: uint32(i),
			Layout: &ptd.TensorLayout{ScalarType: pte.ScalarTypeFLOAT, Sizes: []int32{2, 2}, DimOrder: []uint8{0, 1}}})
		d.Segments = append(d.Segments, io.NewSectionReader(bytes.NewReader(make([]byte, 16)), 0, 16))
	}
	var b bytes.Buffer
	if _, err := ptd.Write(&b, d); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func dataSource(t testing.TB, name string, b []byte) ptd.Source {
	f, err := ptd.NewFile(bytes.NewReader(b), int64(len(b)))
	return ptd.Source{Name: name, File: f, Err: err}
}

// externalTensor makes values[i] of the seed program an EXTERNAL FLOAT
// [2,2] tensor named key, memory-planned when planned is set.
func externalTensor(ep *pte.ExecutionPlan, key string, planned bool) {
	tensor := &pte.Tensor{ScalarType: pte.ScalarTypeFLOAT, Sizes: []int32{2, 2}, DimOrder: []uint8{0, 1},
		ExtraTensorInfo: &pte.ExtraTensorInfo{FullyQualifiedName: key, Location: pte.TensorDataLocationEXTERNAL}}
	if planned {
		tensor.AllocationInfo = &pte.AllocationDetails{MemoryID: 1}
	}
	ep.Values = append(ep.Values, &pte.EValue{Val: tensor})
}

// TestDataLoadMethod covers method load with external data on a program
// built here: the verdicts of issue 10 (a memory-planned EXTERNAL tensor
// without data files is InvalidExternalData, an external constant
// InvalidState) and the order of the steps.
func TestDataLoadMethod(t *testing.T) {
	cases := []struct {
		name        string
		edit        func(p *pte.Program)
		files       [][]byte
		load, first string // Load's code, LoadMethod's code
		errSub      string
	}{
		{"planned without data", func(p *pte.Program) { externalTensor(p.Plan(0), "w", true) }, nil, "Ok", "InvalidExternalData", `"w"`},
		{"constant without data", func(p *pte.Program) { externalTensor(p.Plan(0), "w", false) }, nil, "Ok", "InvalidState", `tensor "w" is an external constant`},
		{"constants before planned", func(p *pte.Program) {
			externalTensor(p.Plan(0), "p", true)
			externalTensor(p.Plan(0), "c", false)
		}, nil, "Ok", "InvalidState", `"c"`},
		{"both found", func(p *pte.Program) {
			externalTensor(p.Plan(0), "p", true)
			externalTensor(p.Plan(0), "c", false)
		}, [][]byte{dataFile(t, "p"), dataFile(t, "c")}, "Ok", "Ok", ""},
		{"key missing", func(p *pte.Program) { externalTensor(p.Plan(0), "w", false) }, [][]byte{dataFile(t, "x")}, "Ok", "NotFound", `"w"`},
		{"planned key missing", func(p *pte.Program) { externalTensor(p.Plan(0), "w", true) }, [][]byte{dataFile(t, "x")}, "Ok", "NotFound", `"w"`},
		{"duplicate key across files", func(p *pte.Program) { externalTensor(p.Plan(0), "w", false) },
			[][]byte{dataFile(t, "w"), dataFile(t, "w")}, "InvalidArgument", "", "duplicate key"},
		{"not a data file", func(p *pte.Program) {}, [][]byte{[]byte(strings.Repeat("x", 100))}, "InvalidExternalData", "", "data file"},
		{"program named data shared with a data file", func(p *pte.Program) {
			p.NamedData = append(p.NamedData, &pte.NamedData{Key: "k"})
		}, [][]byte{dataFile(t, "k")}, "Ok", "InvalidArgument", `"k"`},
		{"structural check of the tensor first", func(p *pte.Program) {
			externalTensor(p.Plan(0), "w", true)
			ep := p.Plan(0)
			ep.Values[len(ep.Values)-1].Val.(*pte.Tensor).DimOrder = []uint8{0}
		}, nil, "Ok", "InvalidProgram", "dim_order"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := openBytes(t, writeProgram(t, seedProgram(t, seedMetadata()), seedMetadata()))
			c.edit(f.Program)
			var srcs []ptd.Source
			for i, b := range c.files {
				srcs = append(srcs, dataSource(t, "file"+string(rune('A'+i)), b))
			}
			reg := &Registry{}
			reg.RegisterBackend(TensorRTBackendID, acceptingBackend{})
			prog, err := Load(f, Config{Registry: reg, DataFiles: srcs})
			if got := CodeOf(err).String(); got != c.load {
				t.Fatalf("Load: %s (%v), want %s", got, err, c.load)
			}
			if err != nil {
				if !errors.Is(err, ErrDataFiles) || !strings.Contains(err.Error(), c.errSub) {
					t.Errorf("Load error %v: want ErrDataFiles and %q", err, c.errSub)
				}
				return
			}
			m, err := prog.LoadMethod("forward", nil)
			if got := CodeOf(err).String(); got != c.first {
				t.Fatalf("LoadMethod: %s (%v), want %s", got, err, c.first)
			}
			if err == nil {
				m.Close()
			} else if !strings.Contains(err.Error(), c.errSub) {
				t.Errorf("error %v does not say %q", err, c.errSub)
			}
		})
	}
}
