package testkit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The records beside the shared files (corpus/PAIRS.tsv and the C++
// runtime's JSON lines) are read here once, so that every package's
// conformance test takes its expectations from the same reading of the
// tree it is given, never from a file's name.

// TSV reads a tab-separated file whose first line names the columns; each
// row maps column name to cell. It fails the test when the file has no
// rows.
func TSV(t testing.TB, path string) []map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	head := strings.Split(lines[0], "\t")
	var rows []map[string]string
	for _, l := range lines[1:] {
		if l == "" {
			continue
		}
		cells := strings.Split(l, "\t")
		row := map[string]string{}
		for i, h := range head {
			if i < len(cells) {
				row[h] = cells[i]
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		t.Fatalf("%s has no rows", path)
	}
	return rows
}

// PairRun is one run of corpus/PAIRS.tsv: a program loaded with zero or
// more data files.
type PairRun struct {
	// Run names the run; its C++ record is ref/RUN.data.cpp.jsonl.
	Run string
	// Program and DataFiles are paths in the corpus directory (a data file
	// may be absent on purpose).
	Program   string
	DataFiles []string
	// Kind and Verdict are the row's columns as written.
	Kind, Verdict string
	// Record is the C++ record of the run.
	Record *DataRecord
}

// Pairs reads dir/PAIRS.tsv (dir is the corpus directory) with each run's
// C++ record; a run without its record fails the test.
func Pairs(t testing.TB, dir string) []PairRun {
	t.Helper()
	var out []PairRun
	for _, row := range TSV(t, filepath.Join(dir, "PAIRS.tsv")) {
		r := PairRun{Run: row["run"], Program: filepath.Join(dir, row["pte"]), Kind: row["kind"], Verdict: row["verdict"]}
		if d := row["data_files"]; d != "" && d != "-" {
			for _, n := range strings.Split(d, ",") {
				r.DataFiles = append(r.DataFiles, filepath.Join(dir, n))
			}
		}
		r.Record = ReadDataRecord(t, filepath.Join(dir, "ref", r.Run+".data.cpp.jsonl"))
		out = append(out, r)
	}
	return out
}

// Outcome is one step of a C++ record: a data file load, the merge or a
// method load.
type Outcome struct {
	// Name is the data file as the record names it, or the method name.
	Name string
	// Code is "Ok" or the ExecuTorch error name without "Error::".
	Code string
	// Keys are the keys the loaded map or the merged map lists.
	Keys []string
}

// DataRecord is what the C++ runtime printed for a run with data files
// (RUN.data.cpp.jsonl) or for a program alone (NAME.cpp.jsonl).
type DataRecord struct {
	// Backends are the backend ids the harness registered.
	Backends []string
	// Files are the data_map_load events, in order.
	Files []Outcome
	// Merge is the data_map_merge event, nil when none was recorded.
	Merge *Outcome
	// Program is program_load's code, "" when not recorded.
	Program string
	// Methods lists the method names the program reported, in order.
	Methods []string
	// Loads maps a method name to its load_method code (or method_meta's
	// when that failed); a method without an entry was not reached.
	Loads map[string]string
	// BlobRejected lists the methods (once each, in record order) with a
	// backend_init whose upstream_trt_blob_parse failed: the recording
	// harness's fake backend accepted the delegate, but the real
	// TensorRTBackend's init refuses such a blob (InvalidProgram).
	BlobRejected []string
	// BudgetRejected lists the methods (once each, in record order) with a
	// backend_init whose weight_streaming_budget compile spec is given
	// twice (keys compared as C strings) or does not parse upstream:
	// TensorRTBackend's init refuses those too (InvalidProgram).
	BudgetRejected []string
	// Crashed is set when the record stops without its "done" event
	// although the program loaded (or its load was never reported): the
	// runtime died (undefined behaviour upstream). A record that stops
	// right after a failed program_load is not a crash: the runtime stops
	// there, with no method events.
	Crashed bool
}

// ProgramRefused reports whether the record shows Program::load failing
// (program_load with an error): the run ends there and no method has a
// verdict.
func (r *DataRecord) ProgramRefused() bool {
	return r.Program != "" && r.Program != "Ok"
}

// InitRefused reports whether the real TensorRTBackend refuses a delegate
// the record's fake backend accepted (BlobRejected, BudgetRejected), or
// the record shows the program or a method failing to load.
func (r *DataRecord) InitRefused() bool {
	if r.ProgramRefused() || len(r.BlobRejected) > 0 || len(r.BudgetRejected) > 0 {
		return true
	}
	for _, c := range r.Loads {
		if c != "Ok" {
			return true
		}
	}
	return false
}

// ModuleCode is what Module::load returns for the record: the first failed
// data file load, else the failed merge, else a failed program_load; "Ok"
// when all of them succeeded (or were not recorded).
func (r *DataRecord) ModuleCode() string {
	if c := r.DataCode(); c != "Ok" || !r.ProgramRefused() {
		return c
	}
	return r.Program
}

// DataCode is the part of ModuleCode the data files decide: the first
// failed data file load, else the failed merge, else "Ok".
func (r *DataRecord) DataCode() string {
	for _, f := range r.Files {
		if f.Code != "Ok" {
			return f.Code
		}
	}
	if r.Merge != nil && r.Merge.Code != "Ok" {
		return r.Merge.Code
	}
	return "Ok"
}

// Unreached returns the methods the record lists with no verdict after
// the first such one: when the runtime crashed loading a method, the ones
// after it were never loaded, and a test must not demand anything of them.
func (r *DataRecord) Unreached() map[string]bool {
	out := map[string]bool{}
	first := true
	for _, m := range r.Methods {
		if _, ok := r.Loads[m]; !ok {
			if !first {
				out[m] = true
			}
			first = false
		}
	}
	return out
}

// ReadDataRecord reads a C++ record.
func ReadDataRecord(t testing.TB, path string) *DataRecord {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	rec := &DataRecord{Loads: map[string]string{}}
	done := false
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var e struct {
			Event string   `json:"event"`
			File  string   `json:"file"`
			Name  string   `json:"name"`
			Names []string `json:"names"`
			Error string   `json:"error"`
			Keys  []string `json:"keys"`
			Blob  *struct {
				OK bool `json:"ok"`
			} `json:"upstream_trt_blob_parse"`
			Method string `json:"method"`
			Specs  []struct {
				Key   string `json:"key"`
				Parse *struct {
					Valid bool `json:"valid"`
				} `json:"upstream_parse_weight_streaming_budget"`
			} `json:"compile_specs"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		code := strings.TrimPrefix(e.Error, "Error::")
		switch e.Event {
		case "register_backend":
			rec.Backends = append(rec.Backends, e.Name)
		case "data_map_load":
			rec.Files = append(rec.Files, Outcome{Name: e.File, Code: code, Keys: e.Keys})
		case "data_map_merge":
			rec.Merge = &Outcome{Code: code, Keys: e.Keys}
		case "program_load":
			rec.Program = code
		case "methods":
			rec.Methods = e.Names
		case "method_meta":
			if e.Error != "" {
				rec.Loads[e.Name] = code
			}
		case "load_method":
			if _, failed := rec.Loads[e.Name]; !failed {
				rec.Loads[e.Name] = code
			}
		case "backend_init":
			if e.Blob != nil && !e.Blob.OK && !slices.Contains(rec.BlobRejected, e.Method) {
				rec.BlobRejected = append(rec.BlobRejected, e.Method)
			}
			budgets, bad := 0, false
			for _, s := range e.Specs {
				if k, _, _ := strings.Cut(s.Key, "\x00"); k == "weight_streaming_budget" {
					budgets++
					bad = bad || s.Parse != nil && !s.Parse.Valid
				}
			}
			if (bad || budgets > 1) && !slices.Contains(rec.BudgetRejected, e.Method) {
				rec.BudgetRejected = append(rec.BudgetRejected, e.Method)
			}
		case "done":
			done = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	rec.Crashed = !done && !rec.ProgramRefused()
	return rec
}

// DataVectorRun is one run of vectors/ptd/VECTORS.tsv: a corpus program
// with damaged or altered data files, and what the C++ runtime did.
type DataVectorRun struct {
	PairRun
	// Row is the VECTORS.tsv row as written (its verdict columns).
	Row map[string]string
	// Missing names a data file the tree lacks although the C++ record
	// loaded it: a defect of the tree, so the run cannot be judged ("" when
	// every file is there). Unlike PAIRS.tsv, no vector run leaves a file
	// out on purpose.
	Missing string
}

// DataVectors reads dir/VECTORS.tsv (dir is vectors/ptd; programs come
// from corpus) with each run's C++ record.
func DataVectors(t testing.TB, dir, corpus string) []DataVectorRun {
	t.Helper()
	var out []DataVectorRun
	for _, row := range TSV(t, filepath.Join(dir, "VECTORS.tsv")) {
		r := DataVectorRun{Row: row, PairRun: PairRun{Run: row["run"], Program: filepath.Join(corpus, row["pte"]),
			Record: ReadDataRecord(t, filepath.Join(dir, row["run"]+".cpp.jsonl"))}}
		for _, n := range strings.Split(row["ptd"], ",") {
			path := filepath.Join(dir, n)
			loaded := slices.ContainsFunc(r.Record.Files, func(e Outcome) bool { return filepath.Base(e.Name) == filepath.Base(n) && e.Code == "Ok" })
			if _, err := os.Stat(path); err != nil && r.Missing == "" && loaded {
				r.Missing = n
			}
			r.DataFiles = append(r.DataFiles, path)
		}
		out = append(out, r)
	}
	return out
}
