package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/check"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// TestVerifyIsCheckProgram: a pipeline that calls the library's verdict,
// check.Program, gets exactly what `pteinspect --verify` prints and its
// exit status, on every program of the shared tree (found at run time) and
// on built hostile ones: a delegate with the budget key twice (which
// pte.File.Verify, looking at the container only, passes) and a TensorRT
// blob whose metadata is not UTF-8 (which the deployed reader accepts).
func TestVerifyIsCheckProgram(t *testing.T) {
	tmp := t.TempDir()
	var paths []string
	progs := testprog.Programs(t)
	notUTF8 := bytes.Clone(progs["segment"])
	i := bytes.Index(notUTF8, []byte(`"name":"`))
	require.GreaterOrEqual(t, i, 0, "the blob's metadata names a binding")
	notUTF8[i+len(`"name":"`)] ^= 0x80
	for name, data := range map[string][]byte{"budget_twice": progs["budget_twice"], "not_utf8": notUTF8, "segment": progs["segment"]} {
		p := filepath.Join(tmp, name+".pte")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		paths = append(paths, p)
	}
	paths = append(paths, testkit.SharedPrograms(t, 0)...)
	failing := 0
	t.Logf("%d programs", len(paths))
	for _, path := range paths {
		r := runArgs(nil, "--verify", "--json", path)
		var v struct {
			Findings []check.Problem `json:"findings"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &v), "%s: %s", path, r.stdout)
		f, err := pte.Open(path)
		if err != nil {
			assert.Equal(t, exitFail, r.code, "%s does not open: --verify fails it", path)
			continue
		}
		probs, err := check.Program(f)
		f.Close()
		require.NoError(t, err, path)
		assert.Equal(t, nonNil(probs), v.Findings, path)
		_, _, bad := check.FirstError(probs)
		if bad {
			failing++
			assert.Equal(t, exitFail, r.code, path)
		} else {
			assert.Equal(t, exitOK, r.code, "%s: %s", path, r.stdout)
		}
	}
	assert.GreaterOrEqual(t, failing, 2, "the hostile programs fail")
}
