package delegate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// strictRejects lists the trt-blob-read cases where upstream's Python
// reader accepts a type-confused value (it does no type checking) and our
// strict Decode rejects it, with the field Decode must name. The test
// also confirms each of these is really type-confused in Python's output,
// and that no other accepted case is.
var strictRejects = map[string]string{
	"diff_device_id_1_5":              "metadata.device_id",               // 1.5
	"diff_device_id_1e2":              "metadata.device_id",               // 1e2 (a float in Python)
	"diff_device_id_string_1":         "metadata.device_id",               // "1"
	"json_device_id_true":             "metadata.device_id",               // true
	"diff_hardware_compatible_1":      "metadata.hardware_compatible",     // 1
	"json_hardware_compatible_string": "metadata.hardware_compatible",     // "true"
	"diff_is_input_as_1":              "metadata.io_bindings[0].is_input", // 1
	"json_is_input_string_false":      "metadata.io_bindings[0].is_input", // "false"
	"json_is_input_null":              "metadata.io_bindings[0].is_input", // null
	"json_name_is_number":             "metadata.io_bindings[0].name",     // 5
}

type readIndexRow struct {
	pythonOK, cppOK, agree bool
}

func readIndex(t *testing.T, dir string) map[string]readIndexRow {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "index.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]readIndexRow{}
	sc := bufio.NewScanner(f)
	for first := true; sc.Scan(); first = false {
		c := strings.Split(sc.Text(), "\t")
		if first {
			continue
		}
		if len(c) < 4 {
			t.Fatalf("index.tsv: short row %q", sc.Text())
		}
		rows[c[0]] = readIndexRow{c[1] == "true", c[2] == "true", c[3] == "true"}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestReadVectors(t *testing.T) {
	dir := sharedDir(t, "trt-blob-read")
	names := caseNames(t, dir, ".expect.json")
	if len(names) < 83 {
		t.Fatalf("found %d trt-blob-read cases, want at least 83", len(names))
	}
	index := readIndex(t, dir)
	for name := range strictRejects {
		if !slices.Contains(names, name) {
			t.Errorf("strictRejects names unknown case %s", name)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			blob := readFile(t, filepath.Join(dir, name+".blob"))
			exp := readJSON(t, filepath.Join(dir, name+".expect.json"))
			py := exp["python"].(map[string]any)
			cpp := exp["cpp"].(map[string]any)
			row, ok := index[name]
			if !ok {
				t.Fatalf("%s missing from index.tsv", name)
			}
			if row.pythonOK != py["ok"].(bool) || row.cppOK != cpp["ok"].(bool) {
				t.Fatalf("index.tsv disagrees with expect.json")
			}
			r := bytes.NewReader(blob)
			size := int64(len(blob))

			b, err := Decode(r, size)
			checkStrictVerdict(t, name, b, err, py)

			v, verr := ReadDeployed(r, size)
			if verr != nil {
				t.Fatalf("ReadDeployed: %v", verr)
			}
			checkDeployedAgainstOracle(t, v, cpp)

			rep, cerr := Check(r, size)
			if cerr != nil {
				t.Fatalf("Check: %v", cerr)
			}
			if (rep.Err == nil) != (err == nil) || (err != nil && rep.Err.Error() != err.Error()) {
				t.Errorf("Check.Err = %v, Decode error = %v", rep.Err, err)
			}
			if !reflect.DeepEqual(rep.Deployed, v) {
				t.Errorf("Check.Deployed = %+v, ReadDeployed = %+v", rep.Deployed, v)
			}
			checkHazardVerdict(t, name, row, rep)
		})
	}
}

// checkStrictVerdict: Decode accepts iff Python does, except the listed
// type-confused cases, and then yields Python's values.
func checkStrictVerdict(t *testing.T, name string, b *Blob, err error, py map[string]any) {
	t.Helper()
	if !py["ok"].(bool) {
		if err == nil {
			t.Fatalf("Decode accepted a blob Python rejects (%s)", py["error_type"])
		}
		var be *BlobError
		if !errors.As(err, &be) {
			t.Fatalf("Decode error is not a *BlobError: %v", err)
		}
		switch py["error_type"] {
		case "ValueError": // header checks
			if strings.HasPrefix(be.Field, "metadata.") || be.Field == "metadata" || be.Off < 0 || be.Off > 32 {
				t.Errorf("Python ValueError (header) but Decode blames %s at %d: %v", be.Field, be.Off, err)
			}
		case "JSONDecodeError", "UnicodeDecodeError":
			if be.Field != "metadata" {
				t.Errorf("Python %s but Decode blames %s: %v", py["error_type"], be.Field, err)
			}
		default: // KeyError, TypeError, AttributeError: field extraction
			if !strings.HasPrefix(be.Field, "metadata") {
				t.Errorf("Python %s but Decode blames %s: %v", py["error_type"], be.Field, err)
			}
		}
		return
	}
	confused := pyTypeConfused(py["metadata"].(map[string]any))
	if field, ok := strictRejects[name]; ok {
		if !slices.Equal(confused, []string{field}) {
			t.Fatalf("listed as type-confused at %s, but Python's value is confused at %v", field, confused)
		}
		var be *BlobError
		if !errors.As(err, &be) || be.Field != field {
			t.Fatalf("Decode error = %v, want a *BlobError for %s", err, field)
		}
		if be.Off < 32 {
			t.Errorf("error offset %d is inside the header", be.Off)
		}
		return
	}
	if len(confused) > 0 {
		t.Fatalf("Python accepted type-confused values at %v; add the case to strictRejects or make Decode accept", confused)
	}
	if err != nil {
		t.Fatalf("Decode rejected a blob Python accepts: %v", err)
	}
	if want := vectorMetadata(t, py["metadata"]); !reflect.DeepEqual(&b.Metadata, want) {
		t.Fatalf("Decode metadata\n got %+v\nwant %+v", b.Metadata, *want)
	}
	checkHeaderAgainstPython(t, b, py)
}

// pyTypeConfused lists the members of Python's metadata whose JSON type is
// not the strict one.
func pyTypeConfused(m map[string]any) []string {
	var out []string
	check := func(path string, v any, ok bool) {
		if !ok {
			out = append(out, path)
		}
	}
	isStr := func(v any) bool { _, ok := v.(string); return ok }
	isBool := func(v any) bool { _, ok := v.(bool); return ok }
	isInt := func(v any) bool {
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil
	}
	for i, e := range m["io_bindings"].([]any) {
		b := e.(map[string]any)
		p := fmt.Sprintf("metadata.io_bindings[%d].", i)
		check(p+"name", b["name"], isStr(b["name"]))
		check(p+"dtype", b["dtype"], isStr(b["dtype"]))
		sh, ok := b["shape"].([]any)
		check(p+"shape", b["shape"], ok)
		for j, d := range sh {
			check(fmt.Sprintf("%sshape[%d]", p, j), d, isInt(d))
		}
		check(p+"is_input", b["is_input"], isBool(b["is_input"]))
	}
	for i, e := range m["aliased_io"].([]any) {
		a := e.(map[string]any)
		for _, k := range []string{"output", "input", "kind"} {
			check(fmt.Sprintf("metadata.aliased_io[%d].%s", i, k), a[k], isStr(a[k]))
		}
	}
	check("metadata.hardware_compatible", m["hardware_compatible"], isBool(m["hardware_compatible"]))
	check("metadata.device_id", m["device_id"], isInt(m["device_id"]))
	check("metadata.serialized_metadata", m["serialized_metadata"], isStr(m["serialized_metadata"]))
	check("metadata.target_platform", m["target_platform"], isStr(m["target_platform"]))
	return out
}

// checkHazardVerdict: where the upstream readers disagree, Check reports a
// disagreement hazard, unless our strict reading and the C++ reader both
// reject (the type-confused cases the C++ reader also rejects); where they
// agree, it reports none.
func checkHazardVerdict(t *testing.T, name string, row readIndexRow, rep *Report) {
	t.Helper()
	var dis []Hazard
	for _, h := range rep.Hazards {
		if h.Kind.Disagreement() {
			dis = append(dis, h)
		}
	}
	_, strict := strictRejects[name]
	switch {
	case row.agree && len(dis) > 0:
		t.Errorf("readers agree but Check reports %v", dis)
	case !row.agree && strict && !row.cppOK:
		if len(dis) > 0 {
			t.Errorf("both our strict reading and the C++ reader reject, yet Check reports %v", dis)
		}
	case !row.agree && len(dis) == 0:
		t.Errorf("readers disagree but Check reports no disagreement (hazards %v, err %v, deployed %+v)", rep.Hazards, rep.Err, rep.Deployed)
	}
}
