package delegate

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// caseNames lists the case names in dir: file names ending in suffix,
// with the suffix removed. It fails the test when there are none.
func caseNames(t testing.TB, dir, suffix string) []string {
	t.Helper()
	var names []string
	for _, p := range testkit.Glob(t, dir, "*"+suffix) {
		names = append(names, strings.TrimSuffix(filepath.Base(p), suffix))
	}
	return names
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readJSON decodes a vector file keeping numbers exact.
func readJSON(t testing.TB, path string) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(readFile(t, path)))
	d.UseNumber()
	var v map[string]any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func jsonInt(t testing.TB, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("want a JSON integer, got %T %v", v, v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatalf("want an int64: %v", err)
	}
	return i
}

// vectorMetadata converts a vector's metadata object (all types as the
// writer's) into a Metadata with non-nil empty slices, as Decode gives. It
// fails when a value does not have the writer's type or an integer does not
// fit in an int64 (the vectors allow a Python device_id of any size).
func vectorMetadata(v any) (m *Metadata, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("metadata not in the writer's types: %v", r)
		}
	}()
	i64 := func(v any) int64 {
		n, err := v.(json.Number).Int64()
		if err != nil {
			panic(err)
		}
		return n
	}
	o := v.(map[string]any)
	m = &Metadata{IOBindings: []Binding{}, AliasedIO: []AliasedIO{}}
	for _, e := range o["io_bindings"].([]any) {
		b := e.(map[string]any)
		bb := Binding{Name: b["name"].(string), DType: b["dtype"].(string), Shape: []int64{}, IsInput: b["is_input"].(bool)}
		for _, d := range b["shape"].([]any) {
			bb.Shape = append(bb.Shape, i64(d))
		}
		m.IOBindings = append(m.IOBindings, bb)
	}
	for _, e := range o["aliased_io"].([]any) {
		a := e.(map[string]any)
		m.AliasedIO = append(m.AliasedIO, AliasedIO{Output: a["output"].(string), Input: a["input"].(string), Kind: a["kind"].(string)})
	}
	m.HardwareCompatible = o["hardware_compatible"].(bool)
	m.DeviceID = i64(o["device_id"])
	m.SerializedMetadata = o["serialized_metadata"].(string)
	m.TargetPlatform = o["target_platform"].(string)
	return m, nil
}

// cppNames converts the oracle's name list: strings, or {"hex": HEX} for
// names that are not valid UTF-8.
func cppNames(t testing.TB, v any) []string {
	t.Helper()
	out := []string{}
	for _, e := range v.([]any) {
		switch x := e.(type) {
		case string:
			out = append(out, x)
		case map[string]any:
			b, err := hex.DecodeString(x["hex"].(string))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		default:
			t.Fatalf("unexpected name %T", e)
		}
	}
	return out
}

// checkDeployedAgainstOracle compares a view with a trt_oracle blob report.
func checkDeployedAgainstOracle(t *testing.T, v *DeployedView, want map[string]any) {
	t.Helper()
	ok := want["ok"].(bool)
	if v.OK != ok {
		t.Fatalf("deployed OK = %v (reason %q), oracle ok = %v", v.OK, v.Reason, ok)
	}
	if !ok {
		return
	}
	if got, w := v.Size, jsonInt(t, want["blob_size"]); got != w {
		t.Errorf("blob_size = %d, want %d", got, w)
	}
	for _, f := range []struct {
		name string
		got  int64
	}{{"metadata_offset", int64(v.MetadataOffset)}, {"metadata_size", int64(v.MetadataSize)}, {"engine_offset", int64(v.EngineOffset)}} {
		if w := jsonInt(t, want[f.name]); f.got != w {
			t.Errorf("%s = %d, want %d", f.name, f.got, w)
		}
	}
	if got, w := v.EngineSize, want["engine_size"].(json.Number).String(); strconv.FormatUint(got, 10) != w {
		t.Errorf("engine_size = %d, want %s", got, w)
	}
	if got, w := v.Inputs, cppNames(t, want["inputs"]); !equalStringSlices(got, w) {
		t.Errorf("inputs = %q, want %q", got, w)
	}
	if got, w := v.Outputs, cppNames(t, want["outputs"]); !equalStringSlices(got, w) {
		t.Errorf("outputs = %q, want %q", got, w)
	}
	var wa []AliasedIO
	for _, e := range want["aliased_io"].([]any) {
		a := e.(map[string]any)
		wa = append(wa, AliasedIO{Output: a["output"].(string), Input: a["input"].(string), Kind: a["kind"].(string)})
	}
	if len(wa) != len(v.AliasedIO) {
		t.Errorf("aliased_io = %v, want %v", v.AliasedIO, wa)
	} else {
		for i := range wa {
			if wa[i] != v.AliasedIO[i] {
				t.Errorf("aliased_io[%d] = %v, want %v", i, v.AliasedIO[i], wa[i])
			}
		}
	}
	if got, w := v.HardwareCompatible, want["hardware_compatible"].(bool); got != w {
		t.Errorf("hardware_compatible = %v, want %v", got, w)
	}
	if got, w := int64(v.DeviceID), jsonInt(t, want["device_id"]); got != w {
		t.Errorf("device_id = %d, want %d", got, w)
	}
}

func equalStringSlices(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
