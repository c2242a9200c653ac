package inspect

import (
	"github.com/ptekit/ptekit/delegate"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/pte"
)

// setSpec sets key to value in the first delegate's compile specs,
// replacing an entry whose key equals key exactly.
func setSpec(p *pte.Program, key, value string) {
	d := p.Plan(0).Delegates[0]
	for _, s := range d.CompileSpecs {
		if s != nil && s.Key == key {
			s.Value = []byte(value)
			return
		}
	}
	d.CompileSpecs = append(d.CompileSpecs, &pte.CompileSpec{Key: key, Value: []byte(value)})
}

func findProblems(probs []Problem, substr string) []Problem {
	var out []Problem
	for _, p := range probs {
		if strings.Contains(p.Message, substr) {
			out = append(out, p)
		}
	}
	return out
}

// TestCheckTargetDeviceMismatch: a target_device pin naming another device
// than the blob's device_id is a warning naming both; a pin that agrees is
// no finding.
func TestCheckTargetDeviceMismatch(t *testing.T) {
	agree, err := Check(rewriteProgram(t, trtCarrier(t), func(*pte.Program, []*io.SectionReader) {}))
	require.NoError(t, err)
	assert.Empty(t, findProblems(agree, "target_device"))

	for _, pin := range []string{"cuda:1", "cpu"} {
		f := rewriteProgram(t, trtCarrier(t), func(p *pte.Program, _ []*io.SectionReader) {
			setSpec(p, compilespec.KeyTargetDevice, pin)
		})
		probs, err := Check(f)
		require.NoError(t, err)
		got := findProblems(probs, "target_device")
		require.Len(t, got, 1, "%s: %v", pin, probs)
		assert.Equal(t, SeverityWarning, got[0].Severity)
		assert.Equal(t, "forward", got[0].Method)
		assert.Contains(t, got[0].Message, "cuda:0")
		assert.Contains(t, got[0].Message, pin)
		assert.Equal(t, "execution_plan[0].delegates[0].compile_specs", got[0].Path)
	}
}

// TestCheckCStringIDsAndKeys: ExecuTorch compares backend ids and the
// TensorRT delegate compares spec keys as C strings, so an id or key with
// a NUL is read as its prefix: the delegate is a TensorRT one (with a
// tensorrt member), its malformed NUL-suffixed budget is an error, and
// each NUL is a warning.
func TestCheckCStringIDsAndKeys(t *testing.T) {
	f := rewriteProgram(t, trtCarrier(t), func(p *pte.Program, _ []*io.SectionReader) {
		p.Plan(0).Delegates[0].ID = delegate.BackendID + "\x00x"
		setSpec(p, compilespec.KeyWeightStreamingBudget+"\x00x", "lots")
	})
	doc, err := Build(f, nil)
	require.NoError(t, err)
	require.Len(t, doc.Delegates, 1)
	assert.NotNil(t, doc.Delegates[0].TensorRT, "routed to TensorRT by C-string compare")

	probs, err := Check(f)
	require.NoError(t, err)
	nul := findProblems(probs, "holds a NUL")
	require.Len(t, nul, 2, "%v", probs)
	for _, p := range nul {
		assert.Equal(t, SeverityWarning, p.Severity)
	}
	assert.Equal(t, "execution_plan[0].delegates[0].id", nul[0].Path)
	budget := findProblems(probs, "init fails")
	require.NotEmpty(t, budget, "%v", probs)
	assert.Equal(t, SeverityError, budget[0].Severity)

	// Two keys that are equal as C strings are a duplicate.
	f = rewriteProgram(t, trtCarrier(t), func(p *pte.Program, _ []*io.SectionReader) {
		setSpec(p, compilespec.KeyWeightStreamingBudget, "1024")
		setSpec(p, compilespec.KeyWeightStreamingBudget+"\x00", "2048")
	})
	probs, err = Check(f)
	require.NoError(t, err)
	assert.NotEmpty(t, findProblems(probs, "init fails"), "%v", probs)
	assert.True(t, delegate.IsTensorRT(delegate.BackendID))
	assert.False(t, delegate.IsTensorRT("TensorRTBackend2"))
}
