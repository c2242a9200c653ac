package executor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

// acceptingBackend accepts every delegate, like the fake backends of the
// upstream harness (pte_cpp_check registers one per backend id it needs).
type acceptingBackend struct{}

func (acceptingBackend) IsAvailable() bool { return true }
func (acceptingBackend) Init(*InitContext, *pte.Payload, []*pte.CompileSpec) (Handle, error) {
	return nil, nil
}
func (acceptingBackend) Destroy(Handle) {}

// ourVerdict loads path with pte.NewFile and every method with LoadMethod
// (accepting backends registered under the given ids) and, for methods that
// load, also plans them with PlanProgram: neither may panic.
func ourVerdict(t *testing.T, path string, backends []string, lazy bool) (load string, methods map[string]string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := pte.NewFileWith(strings.NewReader(string(data)), int64(len(data)), &pte.OpenOptions{LazyPlans: lazy})
	if err != nil {
		return CodeOf(err).String(), nil
	}
	reg := &Registry{}
	for _, id := range backends {
		reg.RegisterBackend(id, acceptingBackend{})
	}
	// The harness was built with ET_ENABLE_DEPRECATED_CONSTANT_BUFFER=0.
	prog, err := Load(f, Config{Registry: reg, NoDeprecatedConstantBuffer: true})
	if err != nil {
		if !UsesDeprecatedConstantBuffer(f.Program) {
			t.Fatal(err)
		}
		return CodeOf(err).String(), nil
	}
	methods = map[string]string{}
	for _, name := range prog.MethodNames() {
		m, err := prog.LoadMethod(name, nil)
		if err != nil {
			if m != nil {
				t.Errorf("%s: LoadMethod returned a method with its error", name)
			}
			methods[name] = CodeOf(err).String()
			continue
		}
		methods[name] = "Ok"
		m.Close()
	}
	if _, err := PlanProgram(f, PlanOptions{Streamable: i64(gib), Scratch: i64(mib)}); err != nil {
		t.Errorf("PlanProgram: %v", err)
	}
	return "Ok", methods
}

// TestLoadOutcomeMatchesUpstream loads every malformed vector, its sources
// and every corpus program, and compares the outcome (program load, then
// each method's metadata and load) with what the upstream C++ runtime
// recorded with InternalConsistency verification in NAME.cpp.jsonl. The
// backends the harness registered are accepting fakes here too; operators
// are resolved at execution in this runtime, so the harness's stub kernels
// need no counterpart.
func TestLoadOutcomeMatchesUpstream(t *testing.T) {
	type file struct{ pte, jsonl string }
	var files []file
	for _, dir := range []string{"vectors/pte-bad", "vectors/pte-bad/sources"} {
		ms, _ := filepath.Glob(filepath.Join(testkit.SharedDir(t, dir), "*.pte"))
		for _, m := range ms {
			files = append(files, file{m, strings.TrimSuffix(m, ".pte") + ".cpp.jsonl"})
		}
	}
	corpus := testkit.SharedDir(t, "corpus")
	ms, _ := filepath.Glob(filepath.Join(corpus, "*.pte"))
	for _, m := range ms {
		name := strings.TrimSuffix(filepath.Base(m), ".pte")
		files = append(files, file{m, filepath.Join(corpus, "ref", name+".cpp.jsonl")})
	}
	if len(files) == 0 {
		t.Fatal("no malformed vectors or corpus programs found")
	}
	for _, fl := range files {
		name := strings.TrimSuffix(filepath.Base(fl.pte), ".pte")
		t.Run(name, func(t *testing.T) {
			// Every program has its record: a missing one fails the test.
			rec := testkit.ReadDataRecord(t, fl.jsonl)
			if rec.Program == "" {
				t.Fatal("no program_load event")
			}
			wantLoad, wantMethods, backends := rec.Program, rec.Loads, rec.Backends
			// The file decoded whole and read a plan at a time
			// (pte.OpenOptions.LazyPlans) load alike.
			for _, lazy := range []bool{false, true} {
				gotLoad, gotMethods := ourVerdict(t, fl.pte, backends, lazy)
				if gotLoad != wantLoad {
					t.Fatalf("program load (LazyPlans %v): %s, upstream %s", lazy, gotLoad, wantLoad)
				}
				if gotLoad != "Ok" {
					continue
				}
				if len(gotMethods) != len(wantMethods) {
					t.Errorf("methods (LazyPlans %v) %v, upstream %v", lazy, gotMethods, wantMethods)
				}
				for m, want := range wantMethods {
					if got := gotMethods[m]; got != want {
						t.Errorf("method %s (LazyPlans %v): %s, upstream %s", m, lazy, got, want)
					}
				}
			}
		})
	}
}
