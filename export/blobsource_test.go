package export

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/delegate"
)

// aliasedMethod is chainMethod's one-call method with its output binding
// named out, updating the input binding in place.
func aliasedMethod(out string) *Method {
	m := chainMethod("forward", 1)
	c := m.Calls[0]
	c.DeviceID, c.HardwareCompatible = 3, true
	c.Outputs[0].Name = out
	c.AliasedIO = []AliasedIO{{Output: out, Input: "in", Kind: "user"}}
	return m
}

// writeBlob writes blob to a file and returns its path.
func writeBlob(t *testing.T, blob []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "engine.blob")
	require.NoError(t, os.WriteFile(path, blob, 0o644))
	return path
}

// TestPassedThroughBlobReadAsWritten: a blob is passed through when every
// reader gets from its bytes what its metadata says, whatever its key
// order. The exporter's own blob with an aliased output named "device_id"
// (device_id and hardware_compatible written before aliased_io) is one,
// and it is stored byte for byte.
func TestPassedThroughBlobReadAsWritten(t *testing.T) {
	for _, name := range []string{"device_id", "hardware_compatible"} {
		var first bytes.Buffer
		_, err := Write(&first, &Program{Methods: []*Method{aliasedMethod(name)}}, nil)
		require.NoError(t, err, name)
		pl, err := verifyClean(t, first.Bytes()).DelegateData(0, 0)
		require.NoError(t, err)
		blob := make([]byte, pl.Size())
		_, err = pl.ReadAt(blob, 0)
		require.NoError(t, err)

		m := aliasedMethod(name)
		m.Calls[0].Engine = BlobFile(writeBlob(t, blob))
		// The blob's metadata holds these; a call may not restate them.
		m.Calls[0].DeviceID, m.Calls[0].HardwareCompatible, m.Calls[0].AliasedIO = 0, false, nil
		var second bytes.Buffer
		_, err = Write(&second, &Program{Methods: []*Method{m}}, nil)
		require.NoError(t, err, name)
		pl, err = verifyClean(t, second.Bytes()).DelegateData(0, 0)
		require.NoError(t, err)
		stored := make([]byte, pl.Size())
		_, err = pl.ReadAt(stored, 0)
		require.NoError(t, err)
		assert.Equal(t, blob, stored, "%s: the blob is stored unchanged", name)
	}
}

// upstreamBlob returns the blob upstream's Python writer makes for m.
func upstreamBlob(t *testing.T, m *delegate.Metadata) []byte {
	t.Helper()
	var buf bytes.Buffer
	_, err := (&delegate.EncodeOptions{UpstreamCompatible: true}).Encode(&buf, m, strings.NewReader("engine"), 6)
	require.NoError(t, err)
	return buf.Bytes()
}

// TestPassedThroughBlobHazardsRefused: a blob whose bytes the deployed
// reader reads differently from its metadata, or on which
// TensorRTBackend init fails although both readers agree, is refused with
// an error naming the call and each hazard's kind; BlobHazardError lists
// them.
func TestPassedThroughBlobHazardsRefused(t *testing.T) {
	in := delegate.Binding{Name: "in", IsInput: true, Shape: []int64{}}
	out := delegate.Binding{Name: "out", Shape: []int64{}}
	cases := []struct {
		name string
		blob []byte
		// binding names of the call, as the metadata says
		in, out string
		kind    delegate.HazardKind
		msg     string
	}{
		{"non-ASCII name escaped as \\u00e9", upstreamBlob(t, &delegate.Metadata{IOBindings: []delegate.Binding{
			in, {Name: "café", Shape: []int64{}}}}),
			"in", "café", delegate.HazardOutputs, `outputs: outputs differ: the metadata says ["café"], the deployed reader sees ["cafu00e9"]`},
		{"aliased name in upstream's key order", upstreamBlob(t, &delegate.Metadata{DeviceID: 3,
			IOBindings: []delegate.Binding{in, {Name: "device_id", Shape: []int64{}}},
			AliasedIO:  []delegate.AliasedIO{{Output: "device_id", Input: "in", Kind: "user"}}}),
			"in", "device_id", delegate.HazardDeployedRejects, `deployed-rejects: the deployed reader rejects this blob ("device_id" found by text search`},
		{"duplicate name", upstreamBlob(t, &delegate.Metadata{IOBindings: []delegate.Binding{in, out, out}}),
			"in", "out", delegate.HazardDuplicateName, `duplicate-name: binding name "out"`},
		{"aliased_io kind init refuses", upstreamBlob(t, &delegate.Metadata{IOBindings: []delegate.Binding{in, out},
			AliasedIO: []delegate.AliasedIO{{Output: "out", Input: "in", Kind: "bogus"}}}),
			"in", "out", delegate.HazardAliasedIOInvalid, "aliased-io-invalid: "},
		{"negative device id", upstreamBlob(t, &delegate.Metadata{DeviceID: -1, IOBindings: []delegate.Binding{in, out}}),
			"in", "out", delegate.HazardNegativeDeviceID, "negative-device-id: device_id -1 is negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := delegate.Check(bytes.NewReader(c.blob), int64(len(c.blob)))
			require.NoError(t, err)
			require.NoError(t, rep.Err, "the test blob is valid")
			m := &Method{Name: "forward", Inputs: []*Tensor{{Name: "x", DType: Float32, Shape: []int64{2, 2}}}}
			m.Calls = []*EngineCall{{Name: "enc", Engine: BlobFile(writeBlob(t, c.blob)),
				Inputs:  []*Binding{{Name: c.in, Tensor: "x"}},
				Outputs: []*Binding{{Name: c.out, Tensor: "y", DType: Float32, Shape: []int64{2, 2}}}}}
			m.Outputs = []*Tensor{{Name: "y"}}
			// A pinned target_device: nothing else looks at the device id.
			opts := &Options{TargetDevice: "cuda:0"}
			var buf bytes.Buffer
			_, err = Write(&buf, &Program{Methods: []*Method{m}}, opts)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, "forward", e.Method)
			assert.Equal(t, 0, e.CallIndex)
			var he *BlobHazardError
			require.ErrorAs(t, err, &he)
			var kinds []delegate.HazardKind
			for _, h := range he.Hazards {
				kinds = append(kinds, h.Kind)
			}
			assert.Contains(t, kinds, c.kind)
			assert.ErrorContains(t, err, `export: method "forward", engine calls[0] ("enc"): the blob would not load as its metadata says: `)
			assert.ErrorContains(t, err, c.msg)
			assert.Zero(t, buf.Len(), "nothing is written")
		})
	}
}
