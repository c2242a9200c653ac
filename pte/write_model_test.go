package pte

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// wrModelVerdicts plans the write of p with opts and returns the verdicts
// of the two ways writePlan.check reads the plan back: with the model
// standing for the region's decoding (model) and decoding the region
// (decoded), each as the sorted list of its findings (path, code and
// message; offsets aside, as the model has no positions), "ok" for none.
// eligible is false, with no verdicts, when Write would not take the
// model (see writePlan.model) or refuses p before reading it back.
func wrModelVerdicts(t testing.TB, p *Program, segs []*io.SectionReader, opts *WriteOptions) (model, decoded string, eligible bool) {
	t.Helper()
	p = p.decoded()
	if checkReferences(p, len(segs)) != nil {
		return "", "", false
	}
	pl, err := layoutWrite(p, segs, opts)
	if err != nil {
		return "", "", false
	}
	m := pl.model(p, opts != nil && opts.Dedup)
	if m == nil {
		return "", "", false
	}
	strict := opts != nil && opts.Strict
	verdict := func(err error) string {
		if err == nil {
			return "ok"
		}
		ve, ok := err.(*VerifyError)
		if !ok {
			return "error: " + err.Error()
		}
		var lines []string
		for _, fd := range ve.Findings {
			lines = append(lines, fmt.Sprintf("%s [%s] %s: %s (%v)", fd.Severity, fd.Method, fd.Err.Path, fd.Err.Msg, fd.Err.Code))
		}
		slices.Sort(lines)
		return strings.Join(lines, "\n")
	}
	model = verdict(pl.checkWith(strict, OpenOptions{noPositions: true, model: m}))
	decoded = verdict(pl.checkWith(strict, OpenOptions{}))
	return model, decoded, true
}

// wrWithoutInline is p without its inline constant and delegate data (so
// that Write takes its model), or nil when p has none.
func wrWithoutInline(p *Program) *Program {
	p = p.decoded()
	if len(p.ConstantBuffer) == 0 && len(p.BackendDelegateData) == 0 {
		return nil
	}
	cp := *p
	cp.ConstantBuffer, cp.BackendDelegateData = nil, nil
	return &cp
}

// TestWriteModelCheck: Write's check of the program it encodes gives, with
// the model standing for the region's decoding, the verdict it gives when
// it decodes the region, on programs that load and on each defect the
// check exists to refuse (those of TestWriteRefusesWhatNewFileRefuses and
// TestWriteStrict, and more), strict or not; and the model is taken for
// a program without inline data, as an export's.
func TestWriteModelCheck(t *testing.T) {
	segs := func() []*io.SectionReader {
		return []*io.SectionReader{wrSection(make([]byte, 32)), wrSection([]byte("engine")), wrSection([]byte("named"))}
	}
	for _, c := range []struct {
		name string
		edit func(p *Program)
		want string // a path in both verdicts, "" for a clean program
	}{
		{"clean", func(p *Program) {}, ""},
		{"TensorList item out of range", func(p *Program) {
			ep := p.Plan(0)
			ep.Values = append(ep.Values, &EValue{Val: &TensorList{Items: []int32{0, 99}}})
		}, "execution_plan[0].values[1].val.items[1]"},
		{"tensor without sizes", func(p *Program) { p.Plan(0).Values[0].Val.(*Tensor).Sizes = nil }, "execution_plan[0].values[0].val.sizes"},
		{"no execution plan", func(p *Program) { p.executionPlan = nil }, "execution_plan"},
		{"union type NONE", func(p *Program) { p.Plan(0).Values = append(p.Plan(0).Values, &EValue{}) }, "execution_plan[0].values[1].val"},
		{"no chains", func(p *Program) { p.Plan(0).Chains = []*Chain{} }, "execution_plan[0].chains"},
		{"input out of range", func(p *Program) { p.Plan(0).Inputs = []int32{7} }, "execution_plan[0].inputs"},
		{"delegate without id", func(p *Program) {
			d := p.Plan(0).Delegates[0]
			d.ID, d.Absent = "", []string{"id"}
		}, "execution_plan[0].delegates[0].id"},
		{"delegate call out of range", func(p *Program) {
			p.Plan(0).Chains[0].Instructions[0].Args.(*DelegateCall).DelegateIndex = 5
		}, "execution_plan[0].chains[0].instructions[0]"},
		{"named data without key", func(p *Program) {
			p.NamedData[0].Key, p.NamedData[0].Absent = "", []string{"key"}
		}, "named_data[0].key"},
		{"value of an unknown scalar type", func(p *Program) {
			p.Plan(0).Values[0].Val.(*Tensor).ScalarType = 99
		}, "execution_plan[0].values[0].val.scalar_type"},
	} {
		for _, strict := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/strict=%v", c.name, strict), func(t *testing.T) {
				p := wrProgram(1, 2)
				c.edit(p)
				model, decoded, ok := wrModelVerdicts(t, p, segs(), &WriteOptions{Strict: strict})
				if !ok {
					t.Fatal("Write does not take the model of a program without inline data")
				}
				if model != decoded {
					t.Fatalf("verdict with the model:\n%s\ndecoding the region:\n%s", model, decoded)
				}
				switch {
				case c.want == "" && model != "ok":
					t.Errorf("clean program refused: %s", model)
				case c.want != "" && strict && !strings.Contains(model, c.want):
					t.Errorf("verdict %q does not name %s", model, c.want)
				}
			})
		}
	}
	// The verdicts of the shared programs, as they are and without their
	// inline data.
	t.Run("shared", func(t *testing.T) {
		root := testkit.SharedDir(t)
		files, _ := filepath.Glob(filepath.Join(root, "corpus", "*.pte"))
		vectors, _ := filepath.Glob(filepath.Join(root, "vectors", "pte", "*.pte"))
		files = append(files, vectors...)
		taken := 0
		for _, path := range files {
			f, err := Open(path)
			if err != nil {
				continue
			}
			srcs, err := f.SegmentReaders()
			for _, p := range []*Program{f.Program, wrWithoutInline(f.Program)} {
				for _, strict := range []bool{false, true} {
					if p == nil || err != nil {
						continue
					}
					model, decoded, ok := wrModelVerdicts(t, p, srcs, &WriteOptions{Strict: strict})
					if ok {
						taken++
					}
					if model != decoded {
						t.Errorf("%s (strict %v): verdict with the model:\n%s\ndecoding the region:\n%s", filepath.Base(path), strict, model, decoded)
					}
				}
			}
			f.Close()
		}
		t.Logf("%d programs, %d checks with the model", len(files), taken)
		if taken == 0 {
			t.Errorf("no shared program (of %d) was checked with its model", len(files))
		}
	})
}

// FuzzWriteModelCheck: for any file the reader accepts, Write's check
// gives the same verdict with the model standing for the encoded region's
// decoding as decoding it, strict or not, on the program and on the
// program without its inline data.
func FuzzWriteModelCheck(f *testing.F) {
	testkit.AddSharedSeeds(f, 64<<10, "corpus/*.pte", "vectors/pte/*.pte")
	for _, b := range wrSeedPrograms(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := NewFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		srcs, err := file.SegmentReaders()
		if err != nil {
			return
		}
		for _, p := range []*Program{file.Program, wrWithoutInline(file.Program)} {
			for _, strict := range []bool{false, true} {
				if p == nil {
					continue
				}
				if model, decoded, _ := wrModelVerdicts(t, p, srcs, &WriteOptions{Strict: strict}); model != decoded {
					t.Fatalf("strict %v: verdict with the model:\n%s\ndecoding the region:\n%s", strict, model, decoded)
				}
			}
		}
	})
}
