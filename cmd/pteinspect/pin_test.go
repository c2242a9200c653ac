package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// TestTargetDeviceMismatchShown: a program whose target_device pin names
// another device than its engine's (pteexport --target-device cuda:1 over
// a cuda:0 engine) gets a warning in the default view and --verify, and
// --plan shows the pin next to the device.
func TestTargetDeviceMismatchShown(t *testing.T) {
	data := testprog.Rewrite(t, seedPrograms(t)["two_methods"], func(p *pte.Program) {
		for _, s := range p.Plan(0).Delegates[0].CompileSpecs {
			if s.Key == compilespec.KeyTargetDevice {
				s.Value = []byte("cuda:1")
			}
		}
	})
	r := runArgs(data, "--long", "-")
	require.Equal(t, exitOK, r.code, r.stderr) // a warning
	assert.Contains(t, r.stdout, "warning(s)")
	assert.Regexp(t, `warning: \[prefill\] .*target_device "cuda:1" .*cuda:0`, r.stdout)
	assert.Contains(t, r.stdout, "pinned target_device cuda:1: MISMATCH")

	r = runArgs(data, "--verify", "-")
	assert.Equal(t, exitOK, r.code)
	assert.Regexp(t, `warning: \[prefill\] .*target_device`, r.stdout)

	r = runArgs(data, "--plan", "-")
	assert.Contains(t, r.stdout, "device cuda:0, pinned target_device cuda:1: MISMATCH")
	assert.Contains(t, r.stdout, "device cuda:0, pinned target_device cuda:0\n", "the agreeing method")
}
