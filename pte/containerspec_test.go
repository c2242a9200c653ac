package pte

import (
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

// Every container_meta_type in the real corpus parses, in the form the
// corpus notes say. The input spec's leaves are the method's inputs; the
// output spec may describe fewer values than the method returns (training
// programs append gradients and parameters to the user's outputs).
func TestCorpusContainerSpecs(t *testing.T) {
	dir := testkit.SharedDir(t, "corpus")
	seen := map[ContainerFormat]int{}
	for _, path := range testkit.Glob(t, dir, "*.pte") {
		f, err := Open(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, plan := range f.Program.ExecutionPlan {
			if plan.ContainerMetaType == nil {
				continue
			}
			for _, side := range []struct {
				s     string
				n     int
				exact bool
			}{{plan.ContainerMetaType.EncodedInpStr, len(plan.Inputs), true}, {plan.ContainerMetaType.EncodedOutStr, len(plan.Outputs), false}} {
				spec, format, err := ParseContainerSpec(side.s)
				if err != nil {
					t.Errorf("%s %s: %q: %v", path, plan.Name, side.s, err)
					continue
				}
				seen[format]++
				if spec != nil && (spec.Leaves() > side.n || side.exact && spec.Leaves() != side.n) {
					t.Errorf("%s %s: %q has %d leaves, the method has %d values", path, plan.Name, side.s, spec.Leaves(), side.n)
				}
			}
		}
		f.Close()
	}
	for _, f := range []ContainerFormat{ContainerEmpty, ContainerCompact, ContainerTorchJSON} {
		if seen[f] == 0 {
			t.Errorf("no %v container spec in the corpus; the corpus notes say there are some", f)
		}
	}
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
