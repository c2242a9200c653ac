package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// TestRebakeZeroByteBlob: `pteexport --from` on a program whose TensorRT
// delegate has a 0-byte blob (TensorRTBackend init fails) exits 1 with one
// line naming the method and delegate, and writes nothing.
func TestRebakeZeroByteBlob(t *testing.T) {
	data := testprog.Rewrite(t, testprog.Programs(t)["segment"], func(p *pte.Program) {
		p.BackendDelegateData = append(p.BackendDelegateData, &pte.BackendDelegateInlineData{Data: []byte{}})
		p.Plan(0).Delegates[0].Processed = &pte.BackendDelegateDataReference{
			Location: pte.DataLocationINLINE, Index: uint32(len(p.BackendDelegateData) - 1)}
	})
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pte")
	require.NoError(t, os.WriteFile(in, data, 0o644))
	out := filepath.Join(dir, "out.pte")
	r := runCmd("--from", in, "-o", out, "--weight-streaming-budget-per-engine", "1GiB")
	assert.Equal(t, 1, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, `method "forward"`)
	assert.Contains(t, r.stderr, "delegates[0]")
	assert.Contains(t, r.stderr, "not re-baked")
	_, err := os.Stat(out)
	assert.True(t, os.IsNotExist(err))
}
