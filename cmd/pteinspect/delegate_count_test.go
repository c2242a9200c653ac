package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// TestLongDelegateCount: `--long --delegate ID` prints the count of ID's
// delegates before them (the view prints each as it reads it), and that
// count is the number of delegates it then prints, of every backend of a
// method that mixes backends.
func TestLongDelegateCount(t *testing.T) {
	other := map[int]bool{1: true, 2: true, 5: true, 63: true}
	data := testprog.Rewrite(t, testprog.Programs(t)["engines_64"], func(p *pte.Program) {
		for i := range other {
			p.Plan(0).Delegates[i].ID = "OtherBackend"
		}
	})
	path := filepath.Join(t.TempDir(), "mixed.pte")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	total := len(f.Program.Plan(0).Delegates)
	for _, id := range []string{"TensorRTBackend", "OtherBackend"} {
		r := runArgs(nil, "--long", "--delegate", id, path)
		require.Contains(t, []int{0, 1}, r.code, r.stderr)
		head := regexp.MustCompile(fmt.Sprintf(`(?m)^  delegates \((\d+) of (\d+), backend %s\)$`, id)).FindStringSubmatch(r.stdout)
		require.NotNil(t, head, r.stdout)
		printed := regexp.MustCompile(`(?m)^    \[(\d+)\] (\S+) `).FindAllStringSubmatch(r.stdout, -1)
		for _, p := range printed {
			i, err := strconv.Atoi(p[1])
			require.NoError(t, err)
			require.Equal(t, id, p[2])
			require.Equal(t, id == "OtherBackend", other[i], "delegate %d", i)
		}
		require.Equal(t, strconv.Itoa(len(printed)), head[1], id)
		require.Equal(t, strconv.Itoa(total), head[2], id)
	}
}
