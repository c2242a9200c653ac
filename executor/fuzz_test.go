package executor

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

func FuzzParseBackendOption(f *testing.F) {
	for _, s := range []string{"TensorRTBackend:weight_streaming_budget=2048", "T:k=int:-1", "T:k=bool:true",
		`T:k="x"`, "T:k=string:", "T:k=" + strings.Repeat("9", 300), ":k=1", "T:=", "T:k=\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, o, err := ParseBackendOption(s)
		if err != nil {
			if CodeOf(err) != CodeInvalidArgument {
				t.Fatalf("ParseBackendOption(%q): error %v has code %v", s, err, CodeOf(err))
			}
			return
		}
		if err := CheckOption(o); err != nil {
			t.Fatalf("ParseBackendOption(%q) returned an invalid option: %v", s, err)
		}
		if id == "" || !strings.HasPrefix(s, id+":"+o.Key+"=") {
			t.Fatalf("ParseBackendOption(%q) = %q, %q", s, id, o.Key)
		}
		var lo LoadOptions
		if err := lo.Add(id, o); err != nil && len(id) <= MaxBackendIDLen {
			t.Fatalf("Add refused a parsed option: %v", err)
		}
	})
}

// FuzzLoad feeds arbitrary bytes through pte.NewFile, PlanProgram (stand-in
// engine) and LoadMethod (accepting backends): whatever the
// input, nothing panics, every failure is an *Error with a code, and the
// plan agrees with LoadMethod.
func FuzzLoad(f *testing.F) {
	f.Add(writeProgram(f, seedProgram(f, seedMetadata()), seedMetadata()))
	testkit.AddSharedSeeds(f, 64<<10-1, "vectors/pte/*.pte", "vectors/pte-bad/*.pte", "vectors/pte-bad/sources/*.pte")
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		pp, err := PlanProgram(file, PlanOptions{Streamable: i64(gib), Scratch: i64(mib), Automatic: i64(mib)})
		if err != nil {
			t.Fatalf("PlanProgram: %v", err)
		}
		reg := &Registry{}
		reg.RegisterBackend(TensorRTBackendID, NewTensorRTBackend(StandIn{Streamable: i64(gib), Scratch: i64(mib)}))
		for _, ep := range file.Program.Plans() {
			for _, d := range ep.Delegates {
				if d != nil {
					reg.RegisterBackend(d.ID, acceptingBackend{})
				}
			}
		}
		prog, err := Load(file, Config{Registry: reg})
		if err != nil {
			t.Fatal(err)
		}
		for i, name := range prog.MethodNames() {
			m, err := prog.LoadMethod(name, nil)
			if err != nil {
				var re *Error
				if m != nil || !errors.As(err, &re) || re.Code == pte.CodeOk {
					t.Fatalf("LoadMethod(%q) = %v, %#v", name, m, err)
				}
				continue
			}
			if i < len(pp.Methods) && pp.Methods[i].Name == name && !pp.Methods[i].OK &&
				pp.Methods[i].Error.Kind == "not_found" {
				t.Fatalf("plan says %q fails with not_found but it loads", name)
			}
			m.Close()
		}
	})
}
