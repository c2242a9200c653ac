package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPlanShowsFailingBudgetOption: when the load-time budget option is
// what fails, --plan shows the value given, not "none (automatic)".
func TestPlanShowsFailingBudgetOption(t *testing.T) {
	data := seedPrograms(t)["segment"]
	for opt, want := range map[string]string{
		"TensorRTBackend:weight_streaming_budget=lots": `INVALID load option weight_streaming_budget="lots"`,
		"TensorRTBackend:weight_streaming_budget=true": "INVALID load option weight_streaming_budget=true",
		"TensorRTBackend:weight_streaming_budget=-5":   "INVALID load option weight_streaming_budget=-5",
	} {
		r := runArgs(data, "--plan", "--backend-option", opt, "-")
		assert.Equal(t, exitFail, r.code, opt)
		assert.Contains(t, r.stdout, want, opt)
		assert.NotContains(t, r.stdout, "none (automatic)", opt)
	}
	r := runArgs(data, "--plan", "--backend-option", "TensorRTBackend:weight_streaming_budget=4096", "-")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `requested +4096 \(4\.0 KiB\)`, r.stdout)
}
