package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/executor"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// TestExternalDataCodesAgree: without --data, a program whose tensors are
// external still verifies (its tensors are warnings), but every view gives
// the code ExecuTorch returns for them, the one --plan fails the method
// with: InvalidState for external constants, InvalidExternalData for
// memory-planned ones. --verify tagged both NotFound.
func TestExternalDataCodesAgree(t *testing.T) {
	for _, c := range []struct {
		name      string
		planned   []bool
		verify    []string // the codes of --verify's warnings, in value order
		planError pte.Code // the method's error in --plan --json
	}{
		{"constant", []bool{false}, []string{"InvalidState"}, pte.CodeInvalidState},
		{"memory-planned", []bool{true}, []string{"InvalidExternalData"}, pte.CodeInvalidExternal},
		// Upstream parses the external constants first.
		{"both", []bool{true, false}, []string{"InvalidExternalData", "InvalidState"}, pte.CodeInvalidState},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := testprog.Rewrite(t, trtPrograms(t)["segment"], func(p *pte.Program) {
				ep := p.Plan(0)
				for i, planned := range c.planned {
					tn := &pte.Tensor{ScalarType: pte.ScalarTypeFLOAT, Sizes: []int32{2, 2}, DimOrder: []uint8{0, 1},
						ExtraTensorInfo: &pte.ExtraTensorInfo{FullyQualifiedName: "w" + string(rune('0'+i)), Location: pte.TensorDataLocationEXTERNAL}}
					if planned {
						tn.AllocationInfo = &pte.AllocationDetails{MemoryID: 1}
					}
					ep.Values = append(ep.Values, &pte.EValue{Val: tn})
				}
			})
			prog := filepath.Join(t.TempDir(), "external.pte")
			require.NoError(t, os.WriteFile(prog, data, 0o644))

			r := runArgs(nil, "--verify", "--json", prog)
			assert.Equal(t, exitOK, r.code, r.stdout)
			var v struct {
				Findings []struct{ Severity, Path, Code string }
			}
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &v))
			var codes []string
			for _, p := range v.Findings {
				if filepath.Ext(p.Path) == ".extra_tensor_info" {
					assert.Equal(t, "warning", p.Severity)
					codes = append(codes, p.Code)
				}
			}
			assert.Equal(t, c.verify, codes)

			r = runArgs(nil, "--json", prog)
			var doc struct {
				Problems []struct{ Path, Code string }
			}
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
			codes = nil
			for _, p := range doc.Problems {
				if filepath.Ext(p.Path) == ".extra_tensor_info" {
					codes = append(codes, p.Code)
				}
			}
			assert.Equal(t, c.verify, codes, "--json's problems are --verify's")

			r = runArgs(nil, "--plan", "--json", prog)
			assert.Equal(t, exitFail, r.code)
			assert.Contains(t, r.stdout, `"kind": "`+executor.KindOf(c.planError)+`"`)
			assert.Contains(t, c.verify, c.planError.String(), "--plan's error is among --verify's codes")
		})
	}
}
