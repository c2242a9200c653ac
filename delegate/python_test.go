package delegate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestDecodePython: Python's json.loads and field extraction, case by case
// where the vectors do not reach.
func TestDecodePython(t *testing.T) {
	const x = `{"name":"x"}`
	for _, c := range []struct {
		name, meta string
		ok         bool   // Python accepts
		refused    string // first strict refusal ("" = none), by field
		check      func(t *testing.T, m *PyMetadata)
	}{
		{"empty object as io_bindings", `{"io_bindings":{}}`, true, "metadata.io_bindings", nil},
		{"empty string as aliased_io", `{"aliased_io":""}`, true, "metadata.aliased_io", nil},
		{"object with keys as io_bindings", `{"io_bindings":{"a":1}}`, false, "", nil},
		{"null io_bindings", `{"io_bindings":null}`, false, "", nil},
		{"number aliased_io", `{"aliased_io":3}`, false, "", nil},
		{"aliased entry a list", `{"aliased_io":[["o","i"]]}`, false, "", nil},
		{"aliased output a list", `{"aliased_io":[{"output":["o"],"input":"i"}]}`, false, "", nil},
		{"binding without name", `{"io_bindings":[{"is_input":true}]}`, false, "", nil},
		{"NaN device id", `{"device_id":NaN}`, true, "metadata", func(t *testing.T, m *PyMetadata) {
			if m.DeviceID != json.Number("NaN") {
				t.Errorf("device_id = %v", m.DeviceID)
			}
		}},
		{"-Infinity in an unknown key", `{"x":[-Infinity]}`, true, "metadata", nil},
		{"lone surrogate", `{"io_bindings":[{"name":"a\ud800"}]}`, true, "metadata", func(t *testing.T, m *PyMetadata) {
			if m.IOBindings[0].Name != "a\uFFFD" {
				t.Errorf("name = %q", m.IOBindings[0].Name)
			}
		}},
		{"int too long for Python", `{"device_id":` + strings.Repeat("9", 4301) + `}`, false, "", nil},
		{"int as long as Python reads", `{"device_id":` + strings.Repeat("9", 4300) + `}`, true, "metadata.device_id", nil},
		{"is_input string false", `{"io_bindings":[{"name":"x","is_input":"false"}]}`, true, "metadata.io_bindings[0].is_input", func(t *testing.T, m *PyMetadata) {
			if !m.IOBindings[0].Input() {
				t.Error(`is_input "false" is truthy: an input`)
			}
		}},
		{"is_input null", `{"io_bindings":[{"name":"x","is_input":null}]}`, true, "metadata.io_bindings[0].is_input", func(t *testing.T, m *PyMetadata) {
			if m.IOBindings[0].Input() {
				t.Error("is_input null is falsy: an output")
			}
		}},
		{"aliased outputs one dict key", `{"io_bindings":[` + x + `],"aliased_io":[{"output":1,"input":"a"},{"output":"z","input":"b"},{"output":1.0,"input":"c","kind":"user"},{"output":true,"input":"d"}]}`,
			true, "metadata.aliased_io[0].output", func(t *testing.T, m *PyMetadata) {
				// 1, 1.0 and true are one key: the first keeps its place and
				// the last entry's input and kind.
				if len(m.AliasedIO) != 2 || m.AliasedIO[0].Output != json.Number("1") || m.AliasedIO[0].Input != "d" ||
					m.AliasedIO[0].Kind != KindKVCacheUpdate || m.AliasedIO[1].Input != "b" {
					t.Errorf("aliased_io = %+v", m.AliasedIO)
				}
			}},
		{"defaults", `{}`, true, "", func(t *testing.T, m *PyMetadata) {
			if m.DeviceID != json.Number("0") || m.HardwareCompatible != false || m.TargetPlatform != "" || len(m.IOBindings) != 0 {
				t.Errorf("defaults = %+v", m)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := handBlob("TR01", c.meta, []byte("E"), nil)
			pb, err := DecodePython(bytes.NewReader(b), int64(len(b)))
			if (err == nil) != c.ok {
				t.Fatalf("DecodePython: %v, want ok = %v", err, c.ok)
			}
			_, serr := Decode(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				var be *BlobError
				if !errors.As(err, &be) || !sameError(serr, err) {
					t.Errorf("errors: python %v, strict %v", err, serr)
				}
				return
			}
			if got := pb.Metadata.Refused; c.refused == "" && len(got) > 0 || c.refused != "" && (len(got) == 0 || got[0].Field != c.refused) {
				t.Fatalf("refused = %v, want first %q", got, c.refused)
			}
			if (serr == nil) != (c.refused == "") {
				t.Errorf("Decode: %v", serr)
			}
			if c.check != nil {
				c.check(t, &pb.Metadata)
			}
		})
	}
}

// TestDecodePythonKeepsNoTree: decodePyMetadata parses into pooled memory
// that the next blob's metadata reuses, so what it returns must hold
// nothing of the tree. Each result is written down as it is returned and
// again after many other metadata texts have been decoded.
func TestDecodePythonKeepsNoTree(t *testing.T) {
	texts := []string{
		`{"io_bindings":[{"name":"x","dtype":"float16","shape":[1,4096],"is_input":true},{"name":"y","dtype":"float16","shape":[1,4096],"is_input":false}],"aliased_io":[{"output":"y","input":"x","kind":"kv"}],"hardware_compatible":false,"device_id":0,"serialized_metadata":"","target_platform":""}`,
		`{"io_bindings":[{"name":"a","shape":[7,[8],{"k":[9]}]}],"device_id":{"nested":[1,2]},"extra":{"deep":[[],[{}]]}}`,
		`{"aliased_io":[{"output":1,"input":"p"},{"output":true,"input":"q"}],"serialized_metadata":"blob"}`,
		`{"io_bindings":[]}`,
	}
	var got []*PyMetadata
	var first []string
	for _, text := range texts {
		m, err := decodePyMetadata([]byte(text), 32)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		got, first = append(got, m), append(first, snapshot(t, m))
	}
	for range 3 { // reuse the memory with other shapes
		for i := len(texts) - 1; i >= 0; i-- {
			if _, err := decodePyMetadata([]byte(texts[i]), 32); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, m := range got {
		if now := snapshot(t, m); now != first[i] {
			t.Fatalf("decode of %s changed after later decodes:\n%s\nwas %s", texts[i], now, first[i])
		}
	}
}

// snapshot writes m down deeply: its Go syntax (slice and pointer
// identities) and its JSON (what any pointer leads to).
func snapshot(t *testing.T, m *PyMetadata) string {
	j, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%#v\n%s", *m, j)
}
