package executor

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// inlineConstants returns the built program shape rewritten the way
// ExecuTorch wrote programs before September 2024: constants in the inline
// constant_buffer (entry 0 an empty placeholder), no constant segment.
func inlineConstants(t *testing.T, shape []testMethod) *pte.File {
	t.Helper()
	f := buildProgram(t, shape...)
	p := *f.Program
	data, err := f.ConstantData(1)
	if err != nil {
		t.Fatal(err)
	}
	constant, err := data.Data()
	if err != nil {
		t.Fatal(err)
	}
	p.ConstantBuffer = []*pte.Buffer{{Storage: []byte{}}, {Storage: constant}}
	p.ConstantSegment = nil
	segs := []*io.SectionReader{io.NewSectionReader(bytes.NewReader(nil), 0, 0)}
	for i := 1; i < len(p.Segments); i++ {
		s, err := f.Segment(i)
		if err != nil {
			t.Fatal(err)
		}
		segs = append(segs, s.SectionReader)
	}
	return openWritten(t, &p, segs)
}

func TestDeprecatedConstantBuffer(t *testing.T) {
	if UsesDeprecatedConstantBuffer(buildProgram(t, progKernelBetween...).Program) {
		t.Fatal("a program with a constant segment reported as using the deprecated constant_buffer")
	}
	f := inlineConstants(t, progKernelBetween)
	if !UsesDeprecatedConstantBuffer(f.Program) {
		t.Fatal("inline constants not detected")
	}

	// The default build loads it and warns.
	log, records := newCapture()
	if _, err := Load(f, Config{Logger: log}); err != nil {
		t.Fatalf("default build: %v", err)
	}
	warned := false
	for _, r := range records() {
		warned = warned || strings.Contains(r.Msg, "deprecated inline constant_buffer")
	}
	if !warned {
		t.Error("default build did not log the deprecation")
	}

	// A build with ET_ENABLE_DEPRECATED_CONSTANT_BUFFER=0 refuses it.
	_, err := Load(f, Config{NoDeprecatedConstantBuffer: true})
	var re *Error
	if !errors.As(err, &re) || re.Code != CodeInvalidProgram || !strings.Contains(err.Error(), "ET_ENABLE_DEPRECATED_CONSTANT_BUFFER=0") {
		t.Errorf("compiled-out build: %v; want InvalidProgram naming the build flag", err)
	}

	// The planner notes it for the default build and fails for the other.
	pp, err := PlanProgram(f, PlanOptions{})
	if err != nil || len(pp.Notes) != 1 || !strings.Contains(pp.Notes[0], "deprecated inline constant_buffer") {
		t.Errorf("plan = %+v, %v; want one deprecation note", pp, err)
	}
	if _, err := PlanProgram(f, PlanOptions{NoDeprecatedConstantBuffer: true}); CodeOf(err) != CodeInvalidProgram {
		t.Errorf("plan for a compiled-out build: %v; want InvalidProgram", err)
	}
	if pp, err := PlanProgram(buildProgram(t, progKernelBetween...), PlanOptions{NoDeprecatedConstantBuffer: true}); err != nil || len(pp.Notes) != 0 {
		t.Errorf("modern program plan = %+v, %v", pp, err)
	}
}

// TestDeprecatedConstantBufferDataFirst: Module::load loads the data files
// and merges them before Program::load, so for a program a build without
// the deprecated constant_buffer refuses, a data file that cannot be used
// answers first (AccessFailed for a missing file, InvalidExternalData for
// a program given as data), and only usable data files let the program's
// InvalidProgram through.
func TestDeprecatedConstantBufferDataFirst(t *testing.T) {
	f := inlineConstants(t, progKernelBetween)
	prog := writeProgram(t, seedProgram(t, seedMetadata()), seedMetadata())
	for _, c := range []struct {
		name string
		src  ptd.Source
		want pte.Code
	}{
		{"missing", ptd.Load(filepath.Join(t.TempDir(), "does_not_exist.ptd")), pte.CodeAccessFailed},
		{"pte-as-ptd", dataSource(t, "program.pte", prog), pte.CodeInvalidExternal},
		{"usable", dataSource(t, "w.ptd", dataFile(t, "w")), CodeInvalidProgram},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(f, Config{NoDeprecatedConstantBuffer: true, DataFiles: []ptd.Source{c.src}})
			if got := CodeOf(err); got != c.want {
				t.Fatalf("Load: %v (%v), want %v", got, err, c.want)
			}
			if dataErr := errors.Is(err, ErrDataFiles); dataErr != (c.want != CodeInvalidProgram) {
				t.Errorf("errors.Is(ErrDataFiles) = %v for %v", dataErr, err)
			}
			// The planner answers alike: the data error is kept and the
			// program is then refused.
			pp, err := PlanProgram(f, PlanOptions{NoDeprecatedConstantBuffer: true, DataFiles: []ptd.Source{c.src}})
			if CodeOf(err) != CodeInvalidProgram || pp != nil {
				t.Errorf("plan: %+v, %v; want InvalidProgram", pp, err)
			}
		})
	}
}
