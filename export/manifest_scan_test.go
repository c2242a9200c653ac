package export

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

// decoderJSON parses with the json.Decoder-based parser only, into the
// tree scanJSON makes.
func decoderJSON(data []byte) (*mtree, error) {
	p := &jsonParser{data: data, d: json.NewDecoder(bytes.NewReader(data)), t: newTree(data)}
	p.d.UseNumber()
	if _, err := p.value(0); err != nil {
		return nil, err
	}
	if _, err := p.d.Token(); err == nil {
		return nil, &ManifestError{Msg: "trailing data"}
	}
	return p.t, nil
}

// checkScan fails when scanJSON accepts data that the decoder refuses or
// reads differently.
func checkScan(t *testing.T, data []byte) {
	t.Helper()
	got, ok := scanJSON(data)
	if !ok {
		return
	}
	want, err := decoderJSON(data)
	if err != nil {
		t.Fatalf("scanJSON accepts %q, the decoder refuses it: %v", data, err)
	}
	if !reflect.DeepEqual(got.nodes, want.nodes) || !reflect.DeepEqual(got.mems, want.mems) || !reflect.DeepEqual(got.names, want.names) || !reflect.DeepEqual(got.texts, want.texts) {
		t.Fatalf("scanJSON reads %q differently from the decoder", data)
	}
}

// TestScanJSONMatchesDecoder: on manifests and on damaged or unusual JSON
// the fast scanner either gives up or gives the decoder's tree, offsets
// included; on the example manifest it does not give up.
func TestScanJSONMatchesDecoder(t *testing.T) {
	example, err := os.ReadFile(filepath.Join("..", "testdata", "examples", "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := scanJSON(example); !ok {
		t.Error("the example manifest takes the slow path")
	}
	for _, s := range []string{
		string(example), `{}`, `[]`, ` {"a" : [1, -2.5e+3, 0, true, false, null, "x"] } `, `{"a":1,"a":2}`,
		`{"a":"\u00e9\ud83d\ude00\n\"q\""}`, `{"a":"é"}`, "{\"a\":\"\xff\"}", "{\"a\":\"\x01\"}", `{"a":01}`, `{"a":1x}`,
		`{"a":-}`, `{"a":1.}`, `{"a":1e}`, `[1 2]`, `[1,]`, `{"a":1,}`, `{"a"}`, `{"a":1} x`, `"\`, `tru`, `nul`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`, `{"a":"\ud800"}`, `{"a":"\x"}`,
	} {
		checkScan(t, []byte(s))
	}
}

func FuzzScanJSON(f *testing.F) {
	if example, err := os.ReadFile(filepath.Join("..", "testdata", "examples", "model.json")); err == nil {
		f.Add(example)
	}
	f.Add([]byte(`{"a":[1,-2.5e+3,"\u00e9",true,null]}`))
	f.Fuzz(func(t *testing.T, data []byte) { checkScan(t, data) })
}

// bigManifest is the example manifest with its methods repeated under new
// names until it holds n methods: the size at which the scan's speed shows.
func bigManifest(b *testing.B, n int) []byte {
	b.Helper()
	example, err := os.ReadFile(filepath.Join("..", "testdata", "examples", "model.json"))
	if err != nil {
		b.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(example, &m); err != nil {
		b.Fatal(err)
	}
	methods := m["methods"].([]any)
	var out []any
	for i := 0; len(out) < n; i++ {
		for _, x := range methods {
			c := map[string]any{}
			for k, v := range x.(map[string]any) {
				c[k] = v
			}
			c["name"] = c["name"].(string) + "_" + strconv.Itoa(i)
			out = append(out, c)
		}
	}
	m["methods"] = out
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkParseJSON is the manifest's JSON reading alone, at 4096 methods.
func BenchmarkParseJSON(b *testing.B) {
	data := bigManifest(b, 4096)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseJSON(data); err != nil {
			b.Fatal(err)
		}
	}
}
