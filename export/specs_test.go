package export

import (
	"testing"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEngineCountWarnings: the per-engine budget warning says what the
// budgets add up to in sizes, not "3 times the value" of a budget of 0
// (which adds up to nothing: no warning); a re-bake, which builds no engine
// calls, does not warn about them (issue 11 item 9).
func TestEngineCountWarnings(t *testing.T) {
	b := func(n int64) compilespec.Budget {
		v, err := compilespec.BudgetOf(n)
		require.NoError(t, err)
		return v
	}
	ws := engineCountWarnings("forward", 3, b(536870912), true)
	require.Len(t, ws, 2)
	assert.Equal(t, WarnMultipleEngines, ws[0].Kind)
	assert.Contains(t, ws[1].Msg, "resident weights can reach 1.5 GiB (3 × 512 MiB)")

	ws = engineCountWarnings("forward", 3, b(0), true)
	require.Len(t, ws, 1)
	assert.Equal(t, WarnMultipleEngines, ws[0].Kind)

	ws = engineCountWarnings("forward", 3, b(536870912), false)
	require.Len(t, ws, 1)
	assert.Equal(t, WarnBudgetPerEngine, ws[0].Kind)
	assert.Empty(t, engineCountWarnings("forward", 1, b(1), true))
	assert.Empty(t, engineCountWarnings("forward", 3, compilespec.AutoBudget, false), "no budget, nothing to add up")
}
