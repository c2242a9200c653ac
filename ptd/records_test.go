package ptd_test

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// This file reads the records beside the shared files (TSV verdicts and the
// C++ runtime's JSON lines) and compares a Resolution with them. Every
// expectation comes from the records; no test names a shared file.

// verdict is a parsed verdict column: per data file load results, merge,
// per method results and rc.
type verdict struct {
	data    []string          // "Ok", "InvalidArgument", ...; nil when not recorded
	hasData bool              // a data= field was present
	merge   string            // "" when not recorded
	program string            // program load result; "" when not recorded
	methods map[string]string // method -> "Ok" / code name
	rc      string
}

// parseVerdict parses "data=[a:Ok,b:Error::X] merge=Ok program=Ok forward=Error::Y rc=3"
// and the vectors' "data=Ok,Ok merge=Ok forward=... rc=3".
func parseVerdict(s string) verdict {
	v := verdict{methods: map[string]string{}}
	for _, tok := range strings.Fields(s) {
		k, val, ok := strings.Cut(tok, "=")
		if !ok {
			continue
		}
		val = strings.TrimPrefix(val, "Error::")
		switch k {
		case "data":
			v.hasData = true
			val = strings.TrimSuffix(strings.TrimPrefix(val, "["), "]")
			if val == "" {
				continue
			}
			for _, item := range strings.Split(val, ",") {
				// "name.ptd:Error::X": file names have a dot, results do not.
				if dot := strings.LastIndex(item, "."); dot >= 0 {
					if c := strings.Index(item[dot:], ":"); c >= 0 {
						item = item[dot+c+1:]
					}
				}
				v.data = append(v.data, strings.TrimPrefix(item, "Error::"))
			}
		case "merge":
			v.merge = val
		case "program":
			v.program = val
		case "rc":
			v.rc = val
		default:
			v.methods[k] = val
		}
	}
	return v
}

// openSources opens each data file name relative to dir.
func openSources(t *testing.T, dir string, names []string) []ptd.Source {
	t.Helper()
	var srcs []ptd.Source
	for _, n := range names {
		s := ptd.Load(filepath.Join(dir, n))
		if s.File != nil {
			t.Cleanup(func() { s.File.Close() })
		}
		srcs = append(srcs, s)
	}
	return srcs
}

// checkVerdict compares r with a verdict column.
func checkVerdict(t *testing.T, r *ptd.Resolution, v verdict) {
	t.Helper()
	crashed := strings.HasPrefix(v.rc, "-")
	if v.hasData && len(v.data) == 0 && crashed {
		// The loader crashed on a data file before reporting anything.
		if !r.Crashed {
			t.Errorf("record: the C++ loader crashed loading data files; we report files %v", statuses(r))
		}
		return
	}
	if v.hasData {
		if len(v.data) != len(r.Files) {
			t.Fatalf("record has %d data file results, we have %d", len(v.data), len(r.Files))
		}
		for i, want := range v.data {
			if got := r.Files[i].Load.String(); got != want {
				t.Errorf("data file %d (%s): load %s, record %s (%v)", i, r.Files[i].Name, got, want, r.Files[i].Load.Err)
			}
		}
	}
	if v.merge != "" && r.Merge.String() != v.merge {
		t.Errorf("merge %s, record %s (%v)", r.Merge, v.merge, r.Merge.Err)
	}
	if v.program != "" && v.program != "Ok" {
		// Program::load refused the program: the run stops there and no
		// method has a verdict.
		return
	}
	crashSeen := false
	for _, m := range r.Methods {
		want, ok := v.methods[m.Name]
		switch {
		case !ok && crashed && crashSeen:
			// The runtime died in an earlier method: this one was never
			// loaded.
		case !ok && crashed:
			crashSeen = true
			if !m.Status.Undefined {
				t.Errorf("method %s: %s, record: the C++ runtime crashed loading it", m.Name, m.Status)
			}
		case !ok:
			t.Errorf("method %s has no recorded verdict", m.Name)
		case m.Status.String() != want:
			t.Errorf("method %s: %s, record %s (%v)", m.Name, m.Status, want, m.Status.Err)
		}
	}
}

// checkEvents compares r with a C++ record: data_map_load per file (result
// and keys), data_map_merge (result and keys), load_method per method.
func checkEvents(t *testing.T, r *ptd.Resolution, rec *testkit.DataRecord) {
	t.Helper()
	if len(rec.Files) > len(r.Files) {
		t.Fatalf("record loads %d data files, %d given", len(rec.Files), len(r.Files))
	}
	for i, e := range rec.Files {
		fr := r.Files[i]
		if got := fr.Load.String(); got != e.Code {
			t.Errorf("data file %d: load %s, record %s", i, got, e.Code)
		}
		if e.Code == "Ok" && strings.Join(fr.Keys, "\x00") != strings.Join(e.Keys, "\x00") {
			t.Errorf("data file %d: keys %q, record %q", i, fr.Keys, e.Keys)
		}
	}
	if e := rec.Merge; e != nil {
		if got := r.Merge.String(); got != e.Code {
			t.Errorf("merge %s, record %s", got, e.Code)
		}
		if e.Code == "Ok" && strings.Join(r.Keys, "\x00") != strings.Join(e.Keys, "\x00") {
			t.Errorf("merged keys %q, record %q", r.Keys, e.Keys)
		}
	}
	for _, m := range r.Methods {
		want, ok := rec.Loads[m.Name]
		if !ok {
			continue // a crash; checkVerdict covers it
		}
		if got := m.Status.String(); got != want {
			t.Errorf("method %s: %s, record %s (%v)", m.Name, got, want, m.Status.Err)
		}
	}
}

// checkLazySame fails unless Resolve and ResolveEach of the program
// at path, opened with pte.OpenOptions.LazyPlans, give want (Resolve of the
// program decoded whole) with the sources srcs opens.
func checkLazySame(t *testing.T, path string, want *ptd.Resolution, srcs func() []ptd.Source) {
	t.Helper()
	f, err := pte.OpenWith(path, &pte.OpenOptions{LazyPlans: true})
	if err != nil {
		t.Fatalf("program with LazyPlans: %v", err)
	}
	defer f.Close()
	if got := ptd.Resolve(f.Program, srcs()); !reflect.DeepEqual(got, want) {
		t.Fatalf("Resolve with LazyPlans:\n%+v\nResolve:\n%+v", got, want)
	}
	// One method at a time: the same results, none kept.
	var methods []ptd.MethodResult
	got := ptd.ResolveEach(f.Program, srcs(), func(plan int, m *ptd.MethodResult) {
		if plan != len(methods) {
			t.Fatalf("ResolveEach gave plan %d after %d plans", plan, len(methods))
		}
		methods = append(methods, *m)
	})
	if got.Methods != nil || !reflect.DeepEqual(methods, want.Methods) {
		t.Fatalf("ResolveEach's methods differ from Resolve's (or were kept)")
	}
	got.Methods = want.Methods
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ResolveEach:\n%+v\nResolve:\n%+v", got, want)
	}
}

func statuses(r *ptd.Resolution) []string {
	var s []string
	for _, f := range r.Files {
		s = append(s, f.Load.String())
	}
	return s
}

// TestCorpusPairs resolves every run of corpus/PAIRS.tsv and compares the
// per-file load, merge and per-method verdicts with the verdict column and
// the C++ record ref/RUN.data.cpp.jsonl.
func TestCorpusPairs(t *testing.T) {
	dir := testkit.SharedDir(t, "corpus")
	for _, run := range testkit.Pairs(t, dir) {
		t.Run(run.Run, func(t *testing.T) {
			p, err := pte.Open(run.Program)
			if err != nil {
				t.Fatalf("program: %v", err)
			}
			defer p.Close()
			r := ptd.Resolve(p.Program, openSources(t, "", run.DataFiles))
			checkLazySame(t, run.Program, r, func() []ptd.Source { return openSources(t, "", run.DataFiles) })
			checkVerdict(t, r, parseVerdict(run.Verdict))
			checkEvents(t, r, run.Record)
		})
	}
}

// TestVectors resolves every run of vectors/ptd/VECTORS.tsv (damaged and
// altered data files with a corpus program) against the C++ verdict and
// record.
func TestVectors(t *testing.T) {
	dir := testkit.SharedDir(t, "vectors", "ptd")
	for _, run := range testkit.DataVectors(t, dir, testkit.SharedDir(t, "corpus")) {
		t.Run(run.Run, func(t *testing.T) {
			if run.Missing != "" {
				t.Skipf("data file %s is missing from the tree but the C++ record loaded it", run.Missing)
			}
			p, err := pte.Open(run.Program)
			if err != nil {
				t.Fatalf("program: %v", err)
			}
			defer p.Close()
			names := strings.Split(run.Row["ptd"], ",")
			r := ptd.Resolve(p.Program, openSources(t, dir, names))
			checkLazySame(t, run.Program, r, func() []ptd.Source { return openSources(t, dir, names) })
			checkVerdict(t, r, parseVerdict(run.Row["cpp_verdict"]))
			checkEvents(t, r, run.Record)
		})
	}
}
