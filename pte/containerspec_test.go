package pte

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

func TestParseContainerSpecForms(t *testing.T) {
	cases := []struct {
		in     string
		format ContainerFormat
		leaves int
		render string
	}{
		{"$", ContainerCompact, 1, "*"},
		{"T2#1#0(T1#1($),D0())", ContainerCompact, 1, "((*,), {})"},
		{"T2#2#0(T2#1#1($,$),D0())", ContainerCompact, 2, "((*, *), {})"},
		{"D2#1#2('a':$,7:L2#1#1($,$))", ContainerCompact, 3, `{"a": *, "7": [*, *]}`},
		{"C(Point)2#1#1($,$)", ContainerCompact, 2, "Point(*, *)"},
		{`[1, {"type": "builtins.tuple", "context": "null", "children_spec": [{"type": "builtins.tuple", "context": "null", "children_spec": [{"type": null, "context": null, "children_spec": []}]}, {"type": "builtins.dict", "context": "[]", "children_spec": []}]}]`,
			ContainerTorchJSON, 1, "((*,), {})"},
		{`[1, {"type": "builtins.dict", "context": "[\"k\", \"v\"]", "children_spec": [{"type": null, "context": null, "children_spec": []}, {"type": null, "context": null, "children_spec": []}]}]`,
			ContainerTorchJSON, 2, `{"k": *, "v": *}`},
		{`[1, {"type": "my.Custom", "context": "x", "children_spec": [{"type": null, "context": null, "children_spec": []}]}]`,
			ContainerTorchJSON, 1, "my.Custom(*)"},
	}
	for _, c := range cases {
		spec, format, err := ParseContainerSpec(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if format != c.format || spec.Leaves() != c.leaves || spec.String() != c.render {
			t.Errorf("%q: got %v, %d leaves, %s; want %v, %d, %s", c.in, format, spec.Leaves(), spec, c.format, c.leaves, c.render)
		}
	}
	spec, format, err := ParseContainerSpec("")
	if spec != nil || format != ContainerEmpty || err != nil {
		t.Errorf("empty string: got %v %v %v", spec, format, err)
	}
}

func TestParseContainerSpecRejects(t *testing.T) {
	for _, in := range []string{
		"T", "T1", "T1#1", "T1#1(", "T1#1($", "T1#2($)", "T2#1#1($)", "X", "$$", "D1#1(a:$)",
		"D1#1('a$)", "C(Point2#1#1($,$)", "T99999999999999999999#1($)",
		"[1]", "[2, {}]", `[1, {"type": null, "context": null, "children_spec": [null]}]`, "[1, ",
		strings.Repeat("T1#1(", 300) + "$" + strings.Repeat(")", 300),
	} {
		if _, _, err := ParseContainerSpec(in); err == nil {
			t.Errorf("%.40q: parsed, want an error", in)
		}
	}
}

// TestBadContainerSpecOpens checks that a container spec this package cannot
// parse does not make Open or Verify refuse the program: the runtime never
// reads it.
func TestBadContainerSpecOpens(t *testing.T) {
	p := wrProgram(0)
	p.ExecutionPlan[0].ContainerMetaType = &ContainerMetadata{EncodedInpStr: "T1#2($", EncodedOutStr: "\xff{not a spec"}
	for _, s := range []string{p.ExecutionPlan[0].ContainerMetaType.EncodedInpStr, p.ExecutionPlan[0].ContainerMetaType.EncodedOutStr} {
		if _, _, err := ParseContainerSpec(s); err == nil {
			t.Fatalf("%q parses; the test needs an unparsable spec", s)
		}
	}
	b := vlWrite(t, p, nil)
	f, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("NewFile: %v", err)
	}
	for _, fd := range f.Verify() {
		if fd.Severity == SeverityError {
			t.Errorf("Verify: %v", fd)
		}
	}
}

// Every container_meta_type in the real corpus that this package can parse
// is checked; one it cannot is logged, and Open must not fail because of
// it. An input spec with other than one leaf per input is logged; the
// output spec may describe fewer values than the method returns (training
// programs append gradients and parameters to the user's outputs).
func TestCorpusContainerSpecs(t *testing.T) {
	dir := testkit.SharedDir(t, "corpus")
	seen := map[ContainerFormat]int{}
	for _, path := range testkit.Glob(t, dir, "*.pte") {
		f, err := Open(path)
		if err != nil {
			// Open never parses the container specs, so it must not fail
			// because of them; other refusals are TestCorpusOpen's business.
			var fe *FormatError
			if errors.As(err, &fe) && strings.Contains(fe.Path, "container_meta_type") {
				t.Errorf("%s: Open fails on a container spec: %v", path, err)
			}
			t.Logf("%s: %v", path, err)
			continue
		}
		for _, plan := range f.Program.ExecutionPlan {
			if plan.ContainerMetaType == nil {
				continue
			}
			for _, side := range []struct {
				what, s string
				n       int
			}{{"inputs", plan.ContainerMetaType.EncodedInpStr, len(plan.Inputs)}, {"outputs", plan.ContainerMetaType.EncodedOutStr, len(plan.Outputs)}} {
				spec, format, err := ParseContainerSpec(side.s)
				if err != nil {
					// A spec this package cannot read is not a bad file:
					// the runtime never parses it.
					t.Logf("%s %s %s: %q: %v", path, plan.Name, side.what, side.s, err)
					continue
				}
				seen[format]++
				if spec == nil {
					continue
				}
				if spec.Leaves() > side.n {
					t.Errorf("%s %s: %s spec %q has %d leaves, the method has %d values", path, plan.Name, side.what, side.s, spec.Leaves(), side.n)
				} else if spec.Leaves() != side.n {
					t.Logf("%s %s: %s spec has %d leaves, the method has %d values", path, plan.Name, side.what, spec.Leaves(), side.n)
				}
			}
		}
		f.Close()
	}
	t.Logf("container spec formats seen: %v", seen)
}

func FuzzParseContainerSpec(f *testing.F) {
	for _, s := range []string{"$", "T2#1#0(T1#1($),D0())", "D2#1#2('a':$,7:L2#1#1($,$))", "C(P)1#1($)",
		`[1, {"type": "builtins.tuple", "context": "null", "children_spec": [{"type": null, "context": null, "children_spec": []}]}]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, _, err := ParseContainerSpec(s)
		if err != nil || spec == nil {
			return
		}
		// A parsed compact spec renders and counts without trouble.
		if spec.Leaves() < 0 || spec.String() == "" {
			t.Fatalf("%q: bad result", s)
		}
	})
}
