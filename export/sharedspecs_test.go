package export

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/pte"
)

// TestSharedSpecsFollowEachDelegate: the exporter shares one compile spec
// list among neighbouring delegates whose specs would be equal, and the
// summary reuses the last delegate's; a change of device or of a method's
// extra specs between delegates still gives each delegate, in the file and
// in the Result, its own target_device and specs.
func TestSharedSpecsFollowEachDelegate(t *testing.T) {
	devices := [][]int{{0, 0, 1, 1, 0}, {1, 1}, {0}}
	extra := [][]*pte.CompileSpec{
		{{Key: "k", Value: []byte("a")}},
		{{Key: "k", Value: []byte("a")}},
		{{Key: "k", Value: []byte("b")}},
	}
	prog := &Program{}
	for mi, devs := range devices {
		m := &Method{Name: fmt.Sprintf("m%d", mi), Inputs: []*Tensor{{Name: "x", DType: Float32, Shape: []int64{2}}}, CompileSpecs: extra[mi]}
		in := "x"
		for ci, d := range devs {
			out := fmt.Sprintf("y%d", ci)
			m.Calls = append(m.Calls, &EngineCall{
				Engine:   EngineReader(strings.NewReader("engine"), 6),
				DeviceID: d,
				Inputs:   []*Binding{{Name: "in", Tensor: in}},
				Outputs:  []*Binding{{Name: "out", Tensor: out, DType: Float32, Shape: []int64{2}}},
			})
			in = out
		}
		m.Outputs = []*Tensor{{Name: in}}
		prog.Methods = append(prog.Methods, m)
	}
	budget, err := compilespec.BudgetOf(1 << 20)
	require.NoError(t, err)
	var buf bytes.Buffer
	res, err := Write(&buf, prog, &Options{WeightStreamingBudget: budget})
	require.NoError(t, err)
	f := verifyClean(t, buf.Bytes())
	require.Len(t, res.Methods, len(devices))
	for mi, devs := range devices {
		ep := f.Program.Plan(mi)
		require.Len(t, ep.Delegates, len(devs))
		require.Len(t, res.Methods[mi].Engines, len(devs))
		for di, d := range devs {
			specs := ep.Delegates[di].CompileSpecs
			want := fmt.Sprintf("cuda:%d", d)
			v, ok, err := compilespec.Get(specs, compilespec.KeyTargetDevice)
			require.NoError(t, err)
			require.True(t, ok, "m%d delegate %d", mi, di)
			assert.Equal(t, want, string(v), "m%d delegate %d in the file", mi, di)
			v, ok, err = compilespec.Get(specs, "k")
			require.NoError(t, err)
			require.True(t, ok, "m%d delegate %d", mi, di)
			assert.Equal(t, string(extra[mi][0].Value), string(v), "m%d delegate %d's extra spec", mi, di)
			es := res.Methods[mi].Engines[di]
			assert.Equal(t, want, es.TargetDevice, "m%d delegate %d in the Result", mi, di)
			require.NotNil(t, es.Budget)
			assert.Equal(t, int64(1<<20), *es.Budget)
		}
	}
	// Each engine's budget is its own value, not one shared pointer.
	*res.Methods[0].Engines[0].Budget = 7
	assert.Equal(t, int64(1<<20), *res.Methods[0].Engines[1].Budget)
}
