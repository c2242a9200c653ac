package inspect

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/pte"
)

// withTRTBlob returns trtCarrier with its TensorRT payload replaced by
// blob, opened.
func withTRTBlob(t *testing.T, blob []byte) *pte.File {
	t.Helper()
	return rewriteProgram(t, trtCarrier(t), func(p *pte.Program, segs []*io.SectionReader) {
		segs[p.ExecutionPlan[0].Delegates[0].Processed.Index] = io.NewSectionReader(bytes.NewReader(blob), 0, int64(len(blob)))
	})
}

func encodeBlob(t *testing.T, m *delegate.Metadata) []byte {
	t.Helper()
	engine := bytes.Repeat([]byte{0xee}, 64)
	var b bytes.Buffer
	_, err := (&delegate.EncodeOptions{UpstreamCompatible: true}).Encode(&b, m, bytes.NewReader(engine), int64(len(engine)))
	require.NoError(t, err)
	return b.Bytes()
}

// TestCheckAliasedIOThatInitRefuses: both readers accept an aliased_io
// entry with an unknown kind or a name that is not a binding, but
// TensorRTBackend init fails on it (trt-delegate.md section 4.1 step 10), so
// it is an error and a hazard.
func TestCheckAliasedIOThatInitRefuses(t *testing.T) {
	m := &delegate.Metadata{
		IOBindings: []delegate.Binding{{Name: "k_cache", IsInput: true}, {Name: "k_cache_out"}},
		AliasedIO:  []delegate.AliasedIO{{Output: "k_cache_out", Input: "no_such_input", Kind: "bogus"}},
	}
	f := withTRTBlob(t, encodeBlob(t, m))
	probs, err := Check(f)
	require.NoError(t, err)
	var msgs []string
	for _, p := range probs {
		if p.IsError() {
			assert.Equal(t, "InvalidProgram", p.Code, p.String())
			assert.Equal(t, "forward", p.Method)
			assert.Equal(t, "execution_plan[0].delegates[0] (TensorRT blob)", p.Path)
			require.NotNil(t, p.Offset)
			msgs = append(msgs, p.Message)
		}
	}
	all := strings.Join(msgs, "\n")
	assert.Contains(t, all, `has kind "bogus"`)
	assert.Contains(t, all, `input "no_such_input" is not an input binding`)
	assert.NotContains(t, all, `output "k_cache_out"`, "the output is a binding")

	doc, err := Build(f, nil)
	require.NoError(t, err)
	assert.Len(t, doc.Delegates[0].TensorRT.Hazards, 2, "%q", doc.Delegates[0].TensorRT.Hazards)
	assert.Equal(t, probs, doc.Problems)

	// The exporter's own aliases are fine.
	m.AliasedIO = []delegate.AliasedIO{{Output: "k_cache_out", Input: "k_cache", Kind: delegate.KindUser}}
	probs, err = Check(withTRTBlob(t, encodeBlob(t, m)))
	require.NoError(t, err)
	assert.Empty(t, probs)
}

// TestBothReadersRejectIsAHazard: a blob that the strict reader and the
// deployed reader both reject has no disagreement to report, but the
// runtime fails, and the hazards say so.
func TestBothReadersRejectIsAHazard(t *testing.T) {
	blobs := map[string][]byte{
		"diff_is_input_as_1":  rawBlob("TR01", `{"io_bindings":[{"name":"x","is_input":1}]}`, nil),
		"json_device_id_true": rawBlob("TR01", `{"io_bindings":[{"name":"x","is_input":true}],"device_id":true}`, nil),
	}
	for name, blob := range blobs {
		t.Run(name, func(t *testing.T) {
			doc, err := Build(withTRTBlob(t, blob), nil)
			require.NoError(t, err)
			trt := doc.Delegates[0].TensorRT
			require.False(t, trt.Deployed.OK)
			require.NotEmpty(t, trt.Error)
			assert.Contains(t, strings.Join(trt.Hazards, "\n"), "the deployed C++ reader rejects this blob")
			assert.Contains(t, strings.Join(trt.Hazards, "\n"), "upstream's Python reader accepts", "the type confusion is explained")
			require.NotEmpty(t, doc.Problems)
			assert.True(t, doc.Problems[0].IsError())

			// metadata is what upstream's Python reader sees, types and all.
			require.NotNil(t, trt.Metadata)
			switch name {
			case "diff_is_input_as_1":
				assert.Equal(t, json.Number("1"), trt.Metadata.IOBindings[0].IsInput)
				assert.True(t, trt.Metadata.IOBindings[0].Input(), "1 is truthy")
			case "json_device_id_true":
				assert.Equal(t, true, trt.Metadata.DeviceID)
			}
		})
	}
}

// TestTRTMetadataNonFiniteNumbers: Python reads NaN and Infinity, which
// JSON cannot carry: they are written as the program member writes them.
func TestTRTMetadataNonFiniteNumbers(t *testing.T) {
	m := trtMetadata(&delegate.PyMetadata{
		IOBindings: []delegate.PyBinding{{Name: "x", DType: "", Shape: []any{json.Number("Infinity")}, IsInput: json.Number("NaN")}},
		DeviceID:   json.Number("-Infinity"),
	})
	b, err := Marshal(m)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"shape": [`+"\n"+`        "inf"`)
	assert.Contains(t, string(b), `"is_input": "nan"`)
	assert.Contains(t, string(b), `"device_id": "-inf"`)
}
