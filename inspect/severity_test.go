package inspect

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/pte"
)

// rawBlob lays out a TensorRT blob by hand: the header, meta at byte 32,
// zero padding to 16 bytes, the engine and any trailing bytes.
func rawBlob(magic, meta string, trailing []byte) []byte {
	engine := []byte("ENGINE!!")
	b := make([]byte, 32, 64+len(meta)+len(engine)+len(trailing))
	copy(b, magic)
	b = append(b, meta...)
	for len(b)%16 != 0 {
		b = append(b, 0)
	}
	binary.LittleEndian.PutUint32(b[4:], 32)
	binary.LittleEndian.PutUint32(b[8:], uint32(len(meta)))
	binary.LittleEndian.PutUint32(b[12:], uint32(len(b)))
	binary.LittleEndian.PutUint64(b[16:], uint64(len(engine)))
	b = append(b, engine...)
	return append(b, trailing...)
}

// problemsOf returns the problems of kind (by message prefix).
func problemsOf(probs []Problem, kind delegate.HazardKind) []Problem {
	var out []Problem
	for _, p := range probs {
		if strings.HasPrefix(p.Message, kind.String()+": ") {
			out = append(out, p)
		}
	}
	return out
}

// TestHazardSeverities: each hazard kind becomes a Problem with the
// severity and code docs/json.md gives it.
func TestHazardSeverities(t *testing.T) {
	const io = `{"io_bindings":[{"name":"x","is_input":true},{"name":"y","is_input":false}]`
	for _, c := range []struct {
		blob     []byte
		kind     delegate.HazardKind
		severity string
		code     string
	}{
		{rawBlob("TR01", `{"io_bindings":[{"name":"x","is_input":true},{"name":"x","is_input":false}]}`, nil), delegate.HazardDuplicateName, SeverityError, ""},
		{rawBlob("TR02", io+`,"aliased_io":[{"output":"y","input":"z","kind":"user"}]}`, nil), delegate.HazardAliasedIOInvalid, SeverityError, "InvalidProgram"},
		{rawBlob("TR02", io+`,"aliased_io":[{"output":"y","input":"x","kind":"bogus"}]}`, nil), delegate.HazardAliasedIOInvalid, SeverityError, "InvalidProgram"},
		{rawBlob("TR01", io+`,"device_id":-1}`, nil), delegate.HazardNegativeDeviceID, SeverityError, "InvalidProgram"},
		{rawBlob("TR01", `{"io_bindings":[{"name":"x"}]}`, nil), delegate.HazardInputs, SeverityError, ""},
		{rawBlob("TR01", io+`,"device_id":"1"}`, nil), delegate.HazardTypeConfused, SeverityWarning, ""},
		{rawBlob("TR01", io+`}`, []byte("tail")), delegate.HazardTrailingBytes, SeverityWarning, ""},
		{rawBlob("TR02", io+`}`, nil), delegate.HazardMagic, SeverityWarning, ""},
		{rawBlob("TR01", `{"io_bindings":[]}`, nil), delegate.HazardNoBindings, SeverityWarning, ""},
	} {
		t.Run(c.kind.String(), func(t *testing.T) {
			probs, err := Check(withTRTBlob(t, c.blob))
			require.NoError(t, err)
			got := problemsOf(probs, c.kind)
			require.NotEmpty(t, got, "no %s problem in %v", c.kind, probs)
			for _, p := range got {
				assert.Equal(t, c.severity, p.Severity, p.String())
				assert.Equal(t, c.code, p.Code, p.String())
				assert.Equal(t, "execution_plan[0].delegates[0] (TensorRT blob)", p.Path)
				assert.NotNil(t, p.Offset)
			}
		})
	}
}

// zeroTail reads as head followed by zeros, up to size bytes.
type zeroTail struct {
	head []byte
	size int64
}

func (z zeroTail) ReadAt(p []byte, off int64) (int, error) {
	if off >= z.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), z.size-off))
	clear(p[:n])
	if off < int64(len(z.head)) {
		copy(p[:n], z.head[off:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// TestMetadataUnreadIsAWarning: metadata larger than ptekit reads is not
// read by the deployed-reader emulation either. The deployed reader has not
// rejected the blob, so nothing claims it does: the only finding is the
// metadata-unread warning.
func TestMetadataUnreadIsAWarning(t *testing.T) {
	const mdSize = delegate.MaxMetadataSize + 1
	engOff := (32 + mdSize + 15) &^ 15
	head := make([]byte, 32)
	copy(head, "TR01")
	binary.LittleEndian.PutUint32(head[4:], 32)
	binary.LittleEndian.PutUint32(head[8:], mdSize)
	binary.LittleEndian.PutUint32(head[12:], uint32(engOff))
	binary.LittleEndian.PutUint64(head[16:], 16)
	blob := io.NewSectionReader(zeroTail{head, int64(engOff) + 16}, 0, int64(engOff)+16)

	src := openSource(t, "aliased")
	segs, err := src.SegmentReaders()
	require.NoError(t, err)
	segs[src.Program.Plan(0).Delegates[0].Processed.Index] = blob
	path := filepath.Join(t.TempDir(), "unread.pte")
	out, err := os.Create(path)
	require.NoError(t, err)
	_, err = pte.Write(out, src.Program, segs, nil)
	require.NoError(t, out.Close())
	require.NoError(t, err)
	f, err := pte.Open(path)
	require.NoError(t, err)
	defer f.Close()

	doc, err := Build(f, nil)
	require.NoError(t, err)
	require.Len(t, doc.Problems, 1, "%v", doc.Problems)
	p := doc.Problems[0]
	assert.Equal(t, SeverityWarning, p.Severity)
	assert.True(t, strings.HasPrefix(p.Message, "metadata-unread: "), p.Message)
	trt := doc.Delegates[0].TensorRT
	require.NotNil(t, trt)
	require.Len(t, trt.Hazards, 1, "%q", trt.Hazards)
	assert.NotContains(t, trt.Hazards[0], "rejects")
	assert.NotEmpty(t, trt.Error, "the strict reading still says why it did not read the blob")
}

// TestAliasedIOInvalidComesFromDelegate: the aliased_io check is
// delegate.Hazards', so the document's hazards and the problems are the
// same findings, once each.
func TestAliasedIOInvalidComesFromDelegate(t *testing.T) {
	blob := rawBlob("TR02", `{"io_bindings":[{"name":"x","is_input":true},{"name":"y","is_input":false}],"aliased_io":[{"output":"y","input":"z","kind":"bogus"}]}`, nil)
	rep, err := delegate.Check(bytes.NewReader(blob), int64(len(blob)))
	require.NoError(t, err)
	var want []string
	for _, h := range rep.Hazards {
		want = append(want, h.Msg)
	}
	require.Len(t, want, 2, "%v", rep.Hazards)

	doc, err := Build(withTRTBlob(t, blob), nil)
	require.NoError(t, err)
	assert.Equal(t, want, doc.Delegates[0].TensorRT.Hazards)
	got := problemsOf(doc.Problems, delegate.HazardAliasedIOInvalid)
	require.Len(t, got, 2, "%v", doc.Problems)
	for i, p := range got {
		assert.Equal(t, "aliased-io-invalid: "+want[i], p.Message)
	}
}
