package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/export"
)

// TestBudgetReadOnce (issue 22 item 7): the command line's budget and head
// room are read once, when the arguments are checked, into the values the
// export is given; nothing reads the text again (so no error of a second
// reading can be ignored).
func TestBudgetReadOnce(t *testing.T) {
	c, _, err := parseArgs([]string{"--manifest", "m.json", "-o", "o.pte", "--weight-streaming-budget-per-engine", "1.5GiB", "--head-room", "4KiB"})
	require.NoError(t, err)
	want, err := compilespec.BudgetOf(3 << 29)
	require.NoError(t, err)
	assert.Equal(t, want, c.budget)
	assert.Equal(t, int64(4096), c.headRoom)

	c, _, err = parseArgs([]string{"--from", "in.pte", "-o", "o.pte", "--weight-streaming-budget-per-engine", "auto", "--head-room", "0"})
	if err == nil {
		t.Fatal("--head-room with --from accepted")
	}
	c, _, err = parseArgs([]string{"--from", "in.pte", "-o", "o.pte", "--weight-streaming-budget-per-engine", "auto"})
	require.NoError(t, err)
	assert.True(t, c.budget.IsAuto())
	assert.True(t, c.budgetSet)

	c, _, err = parseArgs([]string{"--manifest", "m.json", "-o", "o.pte", "--head-room", "0"})
	require.NoError(t, err)
	assert.Equal(t, int64(export.NoHeadRoom), c.headRoom)

	_, _, err = parseArgs([]string{"--manifest", "m.json", "-o", "o.pte", "--weight-streaming-budget-per-engine", "8G"})
	var ue *usageError
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, ue.msg, "--weight-streaming-budget-per-engine")
}
