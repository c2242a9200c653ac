package delegate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

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
	dir := testkit.SharedDir(t, "vectors", "trt-blob-read")
	names := caseNames(t, dir, ".expect.json") // fails when there are none
	index := readIndex(t, dir)
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

			pb, perr := DecodePython(r, size)
			checkPythonVerdict(t, pb, perr, py)
			b, err := Decode(r, size)
			checkStrictVerdict(t, b, err, pb, perr, py)

			v, verr := ReadDeployed(r, size)
			if verr != nil {
				t.Fatalf("ReadDeployed: %v", verr)
			}
			checkDeployedAgainstOracle(t, v, cpp)

			rep, cerr := Check(r, size)
			if cerr != nil {
				t.Fatalf("Check: %v", cerr)
			}
			if !sameError(rep.Err, err) || !sameError(rep.PythonErr, perr) {
				t.Errorf("Check errors %v / %v, Decode %v, DecodePython %v", rep.Err, rep.PythonErr, err, perr)
			}
			if !reflect.DeepEqual(rep.Deployed, v) {
				t.Errorf("Check.Deployed = %+v, ReadDeployed = %+v", rep.Deployed, v)
			}
			if (rep.Python == nil) != (pb == nil) || pb != nil && !reflect.DeepEqual(rep.Python.Metadata, pb.Metadata) {
				t.Errorf("Check.Python differs from DecodePython")
			}
			checkHazardVerdict(t, row, rep)
		})
	}
}

func sameError(a, b error) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error())
}

// checkPythonVerdict: DecodePython accepts exactly when upstream's Python
// reader does, with its values, and otherwise blames the part Python's
// exception points at.
func checkPythonVerdict(t *testing.T, b *PyBlob, err error, py map[string]any) {
	t.Helper()
	if !py["ok"].(bool) {
		if err == nil {
			t.Fatalf("DecodePython accepted a blob Python rejects (%s)", py["error_type"])
		}
		var be *BlobError
		if !errors.As(err, &be) {
			t.Fatalf("DecodePython error is not a *BlobError: %v", err)
		}
		switch py["error_type"] {
		case "ValueError": // header checks
			if strings.HasPrefix(be.Field, "metadata.") || be.Field == "metadata" || be.Off < 0 || be.Off > 32 {
				t.Errorf("Python ValueError (header) but DecodePython blames %s at %d: %v", be.Field, be.Off, err)
			}
		case "JSONDecodeError", "UnicodeDecodeError":
			if be.Field != "metadata" {
				t.Errorf("Python %s but DecodePython blames %s: %v", py["error_type"], be.Field, err)
			}
		default: // KeyError, TypeError, AttributeError: field extraction
			if !strings.HasPrefix(be.Field, "metadata") || be.Off < 32 {
				t.Errorf("Python %s but DecodePython blames %s at %d: %v", py["error_type"], be.Field, be.Off, err)
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("DecodePython rejected a blob Python accepts: %v", err)
	}
	if got, want := pyMetadataMap(&b.Metadata), py["metadata"]; !pyEqual(got, want) {
		t.Fatalf("DecodePython metadata\n got %v\nwant %v", got, want)
	}
	checkHeaderAgainstPython(t, &b.Header, b.Engine(), py)
}

// checkStrictVerdict: Decode accepts exactly when Python accepts and the
// Python reading has no refusals, and then yields Python's values. Values
// of a JSON type the writer does not use (found here independently, from
// Python's output) must be among the refusals.
func checkStrictVerdict(t *testing.T, b *Blob, err error, pb *PyBlob, perr error, py map[string]any) {
	t.Helper()
	if !py["ok"].(bool) {
		if !sameError(err, perr) {
			t.Fatalf("Decode error %v, want the Python reading's %v", err, perr)
		}
		return
	}
	refused := pb.Metadata.Refused
	for _, path := range pyTypeConfused(py["metadata"].(map[string]any)) {
		if !slices.ContainsFunc(refused, func(e *BlobError) bool { return e.Field == path }) {
			t.Errorf("Python's value at %s has the wrong type, but it is not refused (refused: %v)", path, refused)
		}
	}
	if len(refused) > 0 {
		if !sameError(err, refused[0]) {
			t.Fatalf("Decode error = %v, want the first refusal %v", err, refused[0])
		}
		if refused[0].Off < 32 {
			t.Errorf("refusal offset %d is inside the header", refused[0].Off)
		}
		return
	}
	if err != nil {
		t.Fatalf("Decode rejected a blob Python accepts with nothing refused: %v", err)
	}
	want, verr := vectorMetadata(py["metadata"])
	if verr != nil {
		t.Fatalf("Decode accepted metadata that is not strict: %v", verr)
	}
	if !reflect.DeepEqual(&b.Metadata, want) {
		t.Fatalf("Decode metadata\n got %+v\nwant %+v", b.Metadata, *want)
	}
	checkHeaderAgainstPython(t, &b.Header, b.Engine(), py)
}

// pyTypeConfused lists the members of Python's metadata whose JSON type is
// not the strict one.
func pyTypeConfused(m map[string]any) []string {
	var out []string
	check := func(path string, ok bool) {
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
		check(p+"name", isStr(b["name"]))
		check(p+"dtype", isStr(b["dtype"]))
		sh, ok := b["shape"].([]any)
		check(p+"shape", ok)
		for j, d := range sh {
			check(fmt.Sprintf("%sshape[%d]", p, j), isInt(d))
		}
		check(p+"is_input", isBool(b["is_input"]))
	}
	for i, e := range m["aliased_io"].([]any) {
		a := e.(map[string]any)
		for _, k := range []string{"output", "input", "kind"} {
			check(fmt.Sprintf("metadata.aliased_io[%d].%s", i, k), isStr(a[k]))
		}
	}
	check("metadata.hardware_compatible", isBool(m["hardware_compatible"]))
	check("metadata.device_id", isInt(m["device_id"]))
	check("metadata.serialized_metadata", isStr(m["serialized_metadata"]))
	check("metadata.target_platform", isStr(m["target_platform"]))
	return out
}

// pyMetadataMap shapes PyMetadata like the oracle's metadata object.
func pyMetadataMap(m *PyMetadata) map[string]any {
	bs := []any{}
	for _, b := range m.IOBindings {
		bs = append(bs, map[string]any{"name": b.Name, "dtype": b.DType, "shape": b.Shape, "is_input": b.IsInput})
	}
	as := []any{}
	for _, a := range m.AliasedIO {
		as = append(as, map[string]any{"output": a.Output, "input": a.Input, "kind": a.Kind})
	}
	return map[string]any{"io_bindings": bs, "aliased_io": as, "hardware_compatible": m.HardwareCompatible,
		"device_id": m.DeviceID, "serialized_metadata": m.SerializedMetadata, "target_platform": m.TargetPlatform}
}

// pyEqual compares JSON values as decoded with UseNumber, numbers by value
// as Python holds them: a literal with a fraction or exponent is a float,
// any other an exact integer.
func pyEqual(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		xf, yf := strings.ContainsAny(string(x), ".eEIN"), strings.ContainsAny(string(y), ".eEIN")
		if xf != yf {
			return false
		}
		if xf {
			p, _ := strconv.ParseFloat(string(x), 64)
			q, _ := strconv.ParseFloat(string(y), 64)
			return p == q || p != p && q != q
		}
		p, ok1 := new(big.Int).SetString(string(x), 10)
		q, ok2 := new(big.Int).SetString(string(y), 10)
		return ok1 && ok2 && p.Cmp(q) == 0
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !pyEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !pyEqual(v, w) {
				return false
			}
		}
		return true
	}
	return a == b
}

// checkHazardVerdict: where the upstream readers agree, Check reports no
// disagreement with the deployed reader; where they disagree, it reports
// one, or (when the strict reading refuses what Python accepts and the C++
// reader rejects too) a type-confused hazard. Python accepting what the
// strict reading refuses is always reported.
func checkHazardVerdict(t *testing.T, row readIndexRow, rep *Report) {
	t.Helper()
	var dis []Hazard
	for _, h := range rep.Hazards {
		if h.Kind.Disagreement() {
			dis = append(dis, h)
		}
	}
	confused := row.pythonOK && rep.Err != nil
	if confused != hasHazard(rep.Hazards, HazardTypeConfused) {
		t.Errorf("Python accepts, strict refuses = %v, but hazards are %v", confused, rep.Hazards)
	}
	switch {
	case row.agree && len(dis) > 0:
		t.Errorf("readers agree but Check reports %v", dis)
	case !row.agree && confused && !row.cppOK:
		if len(dis) > 0 {
			t.Errorf("both our strict reading and the C++ reader reject, yet Check reports %v", dis)
		}
	case !row.agree && len(dis) == 0:
		t.Errorf("readers disagree but Check reports no disagreement (hazards %v, err %v, deployed %+v)", rep.Hazards, rep.Err, rep.Deployed)
	}
}
