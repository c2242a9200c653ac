package delegate

import (
	"bytes"
	"encoding/json"
	"errors"
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
