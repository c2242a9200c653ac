package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// TestHugeValuesQuotedShort: a 16.8 MB budget compile spec and a 1 MiB
// load option are quoted in part, so --json and --plan --json stay small
// (issue 11 #6).
func TestHugeValuesQuotedShort(t *testing.T) {
	huge := bytes.Repeat([]byte("9x"), 8_400_000)
	data := testprog.Rewrite(t, testprog.Programs(t)["no_budget"], func(p *pte.Program) {
		testprog.SetSpec(p.Plan(0).Delegates[0], compilespec.KeyWeightStreamingBudget, huge)
	})
	path := filepath.Join(t.TempDir(), "huge.pte")
	if err := os.WriteFile(path, data, 0o666); err != nil {
		t.Fatal(err)
	}
	option := "TensorRTBackend:weight_streaming_budget=" + strings.Repeat("7y", 1<<19)
	if dir := os.Getenv("PTEKIT_KEEP_HUGE"); dir != "" {
		os.WriteFile(filepath.Join(dir, "huge.pte"), data, 0o666)
	}
	for _, args := range [][]string{
		{"--json", path},
		{"--plan", "--json", path},
		{"--plan", path},
		{"--plan", "--json", "--backend-option", option, path},
	} {
		var out, errb bytes.Buffer
		run(args, strings.NewReader(""), &out, &errb)
		if n := out.Len() + errb.Len(); n > 64<<10 {
			t.Errorf("pteinspect %s printed %d bytes", args[:2], n)
		}
		if args[0] == "--json" && !strings.Contains(out.String(), "... (16800000 bytes)") {
			t.Errorf("pteinspect %s: no shortened quote in the output", args[:2])
		}
	}
}
