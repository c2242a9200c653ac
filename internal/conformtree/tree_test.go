package conformtree

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// Names of what Build adds, for tests that check the suite saw them.
const (
	// Refused is the corpus program ExecuTorch refuses at Program::load.
	Refused = "syn__deprecated_constants"
	// External is the corpus program with external data in two methods.
	External = "syn__external_two_methods"
	// CrashedRun is the vectors/ptd run that crashed in External's first
	// method.
	CrashedRun = External + "+syn_w_nolayout"
	// MissingRun is the vectors/ptd run naming a data file the tree lacks.
	MissingRun = External + "+syn_gone"
)

// augmented lists the directories Build makes real (their entries are
// links to the shared ones, and it adds files); every other entry of the
// shared tree is one link.
var augmented = []string{"corpus", "corpus/ref", "vectors", "vectors/ptd", "vectors/pte"}

// Build lays out the tree in a new temporary directory of t and returns
// its path. The shared tree is found as the tests find it (PTEKIT_SHARED or
// ../shared; see testkit.SharedDir).
func Build(t testing.TB) string {
	t.Helper()
	return BuildIn(t, t.TempDir())
}

// BuildIn is Build in the directory root, which must be empty or absent.
func BuildIn(t testing.TB, root string) string {
	t.Helper()
	shared, err := filepath.Abs(testkit.SharedDir(t))
	if err != nil {
		t.Fatal(err)
	}
	b := &builder{t: t, shared: shared, root: root}
	b.mirror("")
	b.corpus()
	b.dataVectors()
	b.programVectors()
	return b.root
}

type builder struct {
	t            testing.TB
	shared, root string
}

// mirror links every entry of shared/dir into root/dir, recursing into the
// augmented directories.
func (b *builder) mirror(dir string) {
	entries, err := os.ReadDir(filepath.Join(b.shared, dir))
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(b.root, dir), 0o755); err != nil {
		b.t.Fatal(err)
	}
	for _, e := range entries {
		rel := filepath.Join(dir, e.Name())
		if slices.Contains(augmented, filepath.ToSlash(rel)) {
			b.mirror(rel)
			continue
		}
		if err := os.Symlink(filepath.Join(b.shared, rel), filepath.Join(b.root, rel)); err != nil {
			b.t.Fatal(err)
		}
	}
}

// write writes data to root/rel, replacing a link to the shared file.
func (b *builder) write(rel string, data []byte) {
	p := filepath.Join(b.root, rel)
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// appendRows writes root/rel as the shared file's rows followed by rows
// (cells in the shared header's column order).
func (b *builder) appendRows(rel string, rows ...map[string]string) {
	data, err := os.ReadFile(filepath.Join(b.shared, rel))
	if err != nil {
		b.t.Fatal(err)
	}
	text := strings.TrimRight(string(data), "\n") + "\n"
	head := strings.Split(strings.SplitN(text, "\n", 2)[0], "\t")
	for _, row := range rows {
		cells := make([]string, len(head))
		for i, h := range head {
			cells[i] = row[h]
		}
		text += strings.Join(cells, "\t") + "\n"
	}
	b.write(rel, []byte(text))
}

// program writes a built program into dir as NAME.pte with its view
// NAME.json (in refDir) and returns the name it was given: name plus the
// first 8 hex digits of its sha256, as the corpus names its files.
func (b *builder) program(dir, refDir, name string, data []byte, hashed bool) string {
	if hashed {
		sum := sha256.Sum256(data)
		name += "__" + hex.EncodeToString(sum[:4])
	}
	b.write(filepath.Join(dir, name+".pte"), data)
	f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		b.t.Fatalf("conformtree: %s: %v", name, err)
	}
	doc, err := inspect.Build(f, &inspect.Options{Hash: true})
	if err != nil {
		b.t.Fatalf("conformtree: %s: %v", name, err)
	}
	view, err := inspect.Marshal(doc)
	if err != nil {
		b.t.Fatal(err)
	}
	// The upstream view names the program "raw_program" and has no
	// findings or TensorRT readings of its own.
	var m map[string]any
	if err := json.Unmarshal(view, &m); err != nil {
		b.t.Fatal(err)
	}
	m["raw_program"] = m["program"]
	delete(m, "program")
	delete(m, "problems")
	for _, d := range m["delegates"].([]any) {
		delete(d.(map[string]any), "tensorrt")
	}
	if view, err = json.MarshalIndent(m, "", " "); err != nil {
		b.t.Fatal(err)
	}
	b.write(filepath.Join(refDir, name+".json"), view)
	return name
}

// corpus adds the refused program with its runs and the program with
// external data.
func (b *builder) corpus() {
	progs := testprog.Programs(b.t)
	refused := testprog.Rewrite(b.t, progs["segment"], func(p *pte.Program) {
		// As ExecuTorch wrote programs before September 2024: constants
		// inline, entry 0 an empty placeholder, no constant offsets.
		p.ConstantBuffer = []*pte.Buffer{{Storage: []byte{}}, {Storage: bytes.Repeat([]byte{1}, 16)}}
		p.ConstantSegment = &pte.SubsegmentOffsets{SegmentIndex: 0, Offsets: []uint64{}}
	})
	name := b.program("corpus", "corpus/ref", Refused, refused, true)
	prog := b.open(refused)
	rec := newRecord(prog).head()
	b.write(filepath.Join("corpus", "ref", name+".cpp.jsonl"), rec.refused().bytes())

	// Its runs with data files: a data file of the tree's, a missing one
	// and the program given as data. Module::load loads and merges them
	// first; the harness then loads the program, which fails, and stops.
	type run struct {
		files []string
		kind  string
	}
	runs := []run{{[]string{"does_not_exist.ptd"}, "missing-ptd"}, {[]string{name + ".pte"}, "pte-as-ptd"}}
	if data := b.someDataFile(); data != "" {
		runs = append([]run{{[]string{data}, "pair"}}, runs...)
	}
	var rows []map[string]string
	for _, run := range runs {
		var stems []string
		for _, f := range run.files {
			stems = append(stems, strings.TrimSuffix(strings.TrimSuffix(f, ".ptd"), ".pte"))
		}
		runName := name + "+" + strings.Join(stems, "+")
		rec := newRecord(prog).head()
		verdict := rec.dataFiles(filepath.Join(b.root, "corpus"), run.files)
		rec.refused()
		rc := "1"
		if strings.Contains(verdict, "Error::") {
			rc = "4"
		}
		b.write(filepath.Join("corpus", "ref", runName+".data.cpp.jsonl"), rec.bytes())
		rows = append(rows, map[string]string{"run": runName, "pte": name + ".pte", "data_files": strings.Join(run.files, ","),
			"kind": run.kind, "verdict": verdict + " program=Error::InvalidProgram rc=" + rc})
	}
	b.appendRows("corpus/PAIRS.tsv", rows...)

	// The program with external data, alone: no data map.
	ext := b.program("corpus", "corpus/ref", External, externalProgram(b.t, progs["two_methods"]), true)
	rec = newRecord(b.open(b.read("corpus", ext+".pte"))).head().loaded()
	rec.method(0, "Error::InvalidState").method(1, "Error::InvalidExternalData").done(2)
	b.write(filepath.Join("corpus", "ref", ext+".cpp.jsonl"), rec.bytes())
}

// externalProgram is two_methods with an external constant "w.const" in
// its first method and a memory-planned EXTERNAL tensor "w.planned" in its
// second, both FLOAT [2,2] and used by no instruction.
func externalProgram(t testing.TB, twoMethods []byte) []byte {
	return testprog.Rewrite(t, twoMethods, func(p *pte.Program) {
		for i, key := range []string{"w.const", "w.planned"} {
			tn := &pte.Tensor{ScalarType: pte.ScalarTypeFLOAT, Sizes: []int32{2, 2}, DimOrder: []uint8{0, 1},
				ExtraTensorInfo: &pte.ExtraTensorInfo{FullyQualifiedName: key, Location: pte.TensorDataLocationEXTERNAL}}
			if i == 1 {
				tn.AllocationInfo = &pte.AllocationDetails{MemoryID: 1}
			}
			p.ExecutionPlan[i].Values = append(p.ExecutionPlan[i].Values, &pte.EValue{Val: tn})
		}
	})
}

// dataVectors adds the vectors/ptd runs of the program with external data:
// one that crashed in its first method and one naming a missing file.
func (b *builder) dataVectors() {
	ext := b.matching("corpus", External+"__*.pte")
	prog := b.open(b.read("corpus", ext))
	// A key without a tensor layout: ExecuTorch's loader dereferences the
	// missing layout when the first method asks for it, and dies.
	nolayout := ptdFile(b.t, ptd.NamedData{Key: "w.const"})
	b.write(filepath.Join("vectors", "ptd", "syn_w_nolayout.ptd"), nolayout)
	rec := newRecord(prog).head()
	verdict := rec.dataFiles(filepath.Join(b.root, "vectors", "ptd"), []string{"syn_w_nolayout.ptd"})
	rec.loaded().meta(0) // and nothing after: the process died
	b.write(filepath.Join("vectors", "ptd", CrashedRun+".cpp.jsonl"), rec.bytes())

	// A data file the record loaded but the tree lacks.
	gone := newRecord(prog).head()
	gone.event("data_map_load", "file", "syn_gone.ptd", "ok", true, "error", "Ok", "keys", []string{"w.const", "w.planned"})
	gone.event("data_map_merge", "maps", 1, "ok", true, "error", "Ok", "keys", []string{"w.const", "w.planned"})
	gone.loaded().method(0, "Ok").method(1, "Ok").done(0)
	b.write(filepath.Join("vectors", "ptd", MissingRun+".cpp.jsonl"), gone.bytes())

	row := func(run, file, desc, verdict string) map[string]string {
		return map[string]string{"run": run, "ptd": file, "pte": ext, "kind": "ser", "base": "conformtree",
			"description": desc, "pte_py_deserialize": "ok", "cpp_verdict": verdict}
	}
	b.appendRows("vectors/ptd/VECTORS.tsv",
		row(CrashedRun, "syn_w_nolayout.ptd", "key w.const: no tensor_layout", strings.Replace(verdict, "data=[syn_w_nolayout.ptd:Ok]", "data=Ok", 1)+"  rc=-11 (signal 11)"),
		row(MissingRun, "syn_gone.ptd", "a data file this tree lacks", "data=Ok merge=Ok prefill=Ok decode=Ok rc=0"))
}

// ptdFile writes a .ptd with the entries, each with 16 bytes of its own.
func ptdFile(t testing.TB, entries ...ptd.NamedData) []byte {
	d := &ptd.Data{}
	for i, e := range entries {
		e.SegmentIndex = uint32(i)
		d.NamedData = append(d.NamedData, e)
		d.Segments = append(d.Segments, io.NewSectionReader(bytes.NewReader(bytes.Repeat([]byte{byte(i + 1)}, 16)), 0, 16))
	}
	var out bytes.Buffer
	if _, err := ptd.Write(&out, d); err != nil {
		t.Fatalf("conformtree: %v", err)
	}
	return out.Bytes()
}

// someDataFile returns the name of the first corpus .ptd that loads with
// keys, "" when the tree has none (its .ptd files are optional).
func (b *builder) someDataFile() string {
	paths, _ := filepath.Glob(filepath.Join(b.root, "corpus", "*.ptd"))
	for _, p := range paths {
		if s := ptd.Load(p); s.File != nil {
			keys := s.File.Keys()
			s.File.Close()
			if len(keys) > 0 {
				return filepath.Base(p)
			}
		}
	}
	return ""
}

// matching returns the name of the one file of root/dir matching pattern.
func (b *builder) matching(dir, pattern string) string {
	m, _ := filepath.Glob(filepath.Join(b.root, dir, pattern))
	if len(m) != 1 {
		b.t.Fatalf("conformtree: %d files match %s in %s", len(m), pattern, dir)
	}
	return filepath.Base(m[0])
}

func (b *builder) read(dir, name string) []byte {
	data, err := os.ReadFile(filepath.Join(b.root, dir, name))
	if err != nil {
		b.t.Fatal(err)
	}
	return data
}

// open decodes a built program.
func (b *builder) open(data []byte) *pte.Program {
	f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		b.t.Fatalf("conformtree: %v", err)
	}
	defer f.Close()
	return f.Program
}

// record is a C++ harness record being written, event by event.
type record struct {
	p   *pte.Program
	buf bytes.Buffer
}

func newRecord(p *pte.Program) *record { return &record{p: p} }

// event writes one event: its name, then the fields in the order given.
func (r *record) event(name string, kv ...any) *record {
	r.buf.WriteString(`{"event":`)
	r.value(name)
	for i := 0; i+1 < len(kv); i += 2 {
		r.buf.WriteString(",")
		r.value(kv[i])
		r.buf.WriteString(":")
		r.value(kv[i+1])
	}
	r.buf.WriteString("}\n")
	return r
}

func (r *record) value(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only the values written here
	}
	r.buf.Write(b)
}

func (r *record) bytes() []byte { return r.buf.Bytes() }

// head is what the harness prints before loading anything.
func (r *record) head() *record {
	ops := 0
	for _, ep := range r.p.ExecutionPlan {
		ops += len(ep.Operators)
	}
	return r.event("register_backend", "name", "TensorRTBackend", "error", "Error::Ok").
		event("check_header", "status", "CompatibleVersion").
		event("register_stub_kernels", "count", ops, "error", "Error::Ok")
}

// refused is a program_load that fails with InvalidProgram: the last line.
func (r *record) refused() *record {
	return r.event("program_load", "verification", "InternalConsistency", "ok", false, "error", "Error::InvalidProgram")
}

// loaded is a program_load that succeeds and the methods event.
func (r *record) loaded() *record {
	var names []string
	for _, ep := range r.p.ExecutionPlan {
		names = append(names, ep.Name)
	}
	return r.event("program_load", "verification", "InternalConsistency", "ok", true, "error", "Ok").
		event("methods", "count", len(names), "names", names)
}

// meta is method i's method_meta event.
func (r *record) meta(i int) *record {
	ep := r.p.ExecutionPlan[i]
	instructions := 0
	for _, c := range ep.Chains {
		instructions += len(c.Instructions)
	}
	backends := []string{}
	for _, d := range ep.Delegates {
		if !slices.Contains(backends, d.ID) {
			backends = append(backends, d.ID)
		}
	}
	planned := []int64{}
	if len(ep.NonConstBufferSizes) > 1 {
		planned = ep.NonConstBufferSizes[1:]
	}
	return r.event("method_meta", "name", ep.Name, "num_inputs", len(ep.Inputs), "num_outputs", len(ep.Outputs),
		"num_instructions", instructions, "memory_planned_buffers", planned, "backends", backends)
}

// method is method i's method_meta and load_method with code ("Ok" or
// "Error::NAME").
func (r *record) method(i int, code string) *record {
	return r.meta(i).event("load_method", "name", r.p.ExecutionPlan[i].Name, "ok", code == "Ok", "error", code, "planned_ok", true)
}

// done is the last line of a run that did not die.
func (r *record) done(failures int) *record { return r.event("done", "failures", failures) }

// dataFiles writes the data_map_load events of files (names in dir) and
// the data_map_merge, as ExecuTorch's loader reports them (ptd.Resolve
// follows it), and returns the PAIRS.tsv verdict's "data=[...] merge=..."
// part.
func (r *record) dataFiles(dir string, files []string) string {
	var srcs []ptd.Source
	for _, n := range files {
		s := ptd.Load(filepath.Join(dir, n))
		if s.File != nil {
			defer s.File.Close()
		}
		srcs = append(srcs, s)
	}
	res := ptd.Resolve(r.p, srcs)
	code := func(s ptd.Status) string {
		if s.OK() {
			return "Ok"
		}
		return "Error::" + s.Code.String()
	}
	var items []string
	maps := 0
	for i, fr := range res.Files {
		keys := fr.Keys
		if keys == nil || !fr.Load.OK() {
			keys = []string{}
		}
		if fr.Load.OK() {
			maps++
		}
		r.event("data_map_load", "file", files[i], "ok", fr.Load.OK(), "error", code(fr.Load), "keys", keys)
		items = append(items, files[i]+":"+code(fr.Load))
	}
	merged := res.Keys
	if merged == nil || !res.Merge.OK() {
		merged = []string{}
	}
	r.event("data_map_merge", "maps", maps, "ok", res.Merge.OK(), "error", code(res.Merge), "keys", merged)
	return fmt.Sprintf("data=[%s] merge=%s", strings.Join(items, ","), code(res.Merge))
}
