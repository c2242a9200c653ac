package export

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, data, 0o644))
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return sha256.Sum256(data)
}

// withoutBudgets returns the compile spec lists of doc (a document of
// documentOf's shape) with every weight_streaming_budget entry removed,
// and the budgets removed, per delegate.
func withoutBudgets(t *testing.T, doc map[string]any) (stripped map[string]any, budgets [][]string) {
	t.Helper()
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(data, &out))
	strip := func(d any) []string {
		dm := d.(map[string]any)
		var kept []any
		var removed []string
		for _, s := range dm["compile_specs"].([]any) {
			sm := s.(map[string]any)
			if k, _ := sm["key"].(string); compilespec.CKeyEqual(k, compilespec.KeyWeightStreamingBudget) {
				if v, ok := sm["value_utf8"].(string); ok {
					removed = append(removed, v)
				} else {
					removed = append(removed, "?")
				}
				continue
			}
			kept = append(kept, s)
		}
		if kept == nil {
			kept = []any{}
		}
		dm["compile_specs"] = kept
		return removed
	}
	for _, d := range out["delegates"].([]any) {
		budgets = append(budgets, strip(d))
	}
	for _, ep := range out["raw_program"].(map[string]any)["execution_plan"].([]any) {
		for _, d := range ep.(map[string]any)["delegates"].([]any) {
			strip(d)
		}
	}
	return out, budgets
}

// TestRebakeUpstreamPrograms re-bakes every upstream-written program with a
// 4 GiB budget and checks against the reference JSON beside it: with the
// budget entries taken out, nothing but the file layout differs; the
// result carries exactly one budget per TensorRT delegate, before
// target_device; every segment keeps its sha256 (part of the documents).
func TestRebakeUpstreamPrograms(t *testing.T) {
	dir, names := vectorCases(t)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			var want map[string]any
			readJSON(t, filepath.Join(dir, name+".json"), &want)
			isTRT := func(d any) bool {
				id, _ := d.(map[string]any)["id"].(string)
				return compilespec.CKeyEqual(id, delegate.BackendID)
			}
			if !slices.ContainsFunc(want["delegates"].([]any), isTRT) {
				t.Logf("%s: no %s delegate to re-bake", name, delegate.BackendID)
				return
			}
			out := filepath.Join(t.TempDir(), "out.pte")
			budget := int64(4 << 30)
			res, err := Rebake(filepath.Join(dir, name+".pte"), out, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)})
			if refusedByRecord(t, dir, name, out, err) {
				return
			}
			if first, bad := verdict(t, filepath.Join(dir, name+".pte")); bad {
				assertRefused(t, err, first, out) // TestRebakeIffVerifyPasses
				return
			}
			require.NoError(t, err)
			require.NotNil(t, res.Budget)
			assert.Equal(t, budget, *res.Budget)
			got := documentOf(t, out)
			wantRest, wantBudgets := withoutBudgets(t, want)
			gotRest, gotBudgets := withoutBudgets(t, got)
			for _, d := range diffExcept(t, gotRest, wantRest, layoutPaths...) {
				t.Error(d)
			}
			assert.Equal(t, len(want["segments"].([]any)), len(got["segments"].([]any)))
			wantDelegates := want["delegates"].([]any)
			for i, d := range got["delegates"].([]any) {
				if !isTRT(d) {
					assert.Equal(t, wantBudgets[i], gotBudgets[i], "delegate %d is not TensorRT's: kept", i)
					assert.Equal(t, specKeys(wantDelegates[i]), specKeys(d), "delegate %d", i)
					continue
				}
				assert.Equal(t, []string{"4294967296"}, gotBudgets[i])
				assert.Equal(t, keysWithBudget(specKeys(wantDelegates[i])), specKeys(d),
					"delegate %d: budget in place of the first, else before target_device, else last", i)
			}

			// Clearing ("auto") removes every budget key of TensorRT
			// delegates and nothing else.
			out2 := filepath.Join(t.TempDir(), "auto.pte")
			res, err = Rebake(out, out2, &RebakeOptions{WeightStreamingBudget: &compilespec.AutoBudget})
			require.NoError(t, err)
			assert.Nil(t, res.Budget)
			assert.False(t, res.MixedBudgets)
			got2 := documentOf(t, out2)
			got2Rest, got2Budgets := withoutBudgets(t, got2)
			for i, b := range got2Budgets {
				if isTRT(got2["delegates"].([]any)[i]) {
					assert.Empty(t, b)
				} else {
					assert.Equal(t, wantBudgets[i], b)
				}
			}
			for _, d := range diffExcept(t, got2Rest, wantRest, layoutPaths...) {
				t.Error(d)
			}
		})
	}
}

// refusedByRecord reports whether the C++ record of vector name shows a
// blob TensorRTBackend's init refuses (its upstream_trt_blob_parse
// failed), and then checks that err, from re-baking it to out, is the
// documented refusal: an *Error naming such a method, "not re-baked", no
// output.
func refusedByRecord(t *testing.T, dir, name, out string, err error) bool {
	t.Helper()
	rec := testkit.ReadDataRecord(t, filepath.Join(dir, name+".cpp.jsonl"))
	if len(rec.BlobRejected) == 0 {
		return false
	}
	var ee *Error
	require.ErrorAs(t, err, &ee, "the C++ blob reader rejects a blob of %v", rec.BlobRejected)
	assert.Contains(t, rec.BlobRejected, ee.Method)
	assert.Contains(t, err.Error(), "not re-baked")
	_, statErr := os.Stat(out)
	assert.True(t, os.IsNotExist(statErr), "no output on refusal")
	return true
}

// specKeys returns the compile spec keys of delegate d of a document.
func specKeys(d any) []string {
	keys := []string{}
	for _, s := range d.(map[string]any)["compile_specs"].([]any) {
		k, _ := s.(map[string]any)["key"].(string)
		keys = append(keys, k)
	}
	return keys
}

// keysWithBudget is the documented placement rule of a re-baked budget,
// applied to a list of keys: in place of the first budget key (later ones
// dropped), else before the first target_device, else at the end. Keys
// compare as C strings.
func keysWithBudget(keys []string) []string {
	const b = compilespec.KeyWeightStreamingBudget
	isB := func(k string) bool { return compilespec.CKeyEqual(k, b) }
	if i := slices.IndexFunc(keys, isB); i >= 0 {
		out := slices.DeleteFunc(slices.Clone(keys), isB)
		return slices.Insert(out, i, b)
	}
	if i := slices.IndexFunc(keys, func(k string) bool { return compilespec.CKeyEqual(k, compilespec.KeyTargetDevice) }); i >= 0 {
		return slices.Insert(slices.Clone(keys), i, b)
	}
	return append(slices.Clone(keys), b)
}

// TestRebakeStripComparisonCatchesOtherSpecs guards the comparison above:
// a changed spec other than the budget is a difference.
func TestRebakeStripComparisonCatchesOtherSpecs(t *testing.T) {
	in := twoEngineProgram(t, 128)
	out := filepath.Join(t.TempDir(), "out.pte")
	_, err := Rebake(in, out, &RebakeOptions{TargetDevice: "cuda:1"})
	require.NoError(t, err)
	wantRest, _ := withoutBudgets(t, documentOf(t, in))
	gotRest, _ := withoutBudgets(t, documentOf(t, out))
	assert.NotEmpty(t, diffExcept(t, gotRest, wantRest, layoutPaths...))
}

func TestRebakeInPlaceAndTargetDevice(t *testing.T) {
	path := twoEngineProgram(t, 128)
	budget := int64(1 << 30)
	res, err := Rebake(path, path, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget), TargetDevice: "cuda:1"})
	require.NoError(t, err)
	assert.Equal(t, 2, res.Delegates)
	kinds := map[WarningKind]bool{}
	for _, w := range res.Warnings {
		kinds[w.Kind] = true
	}
	// The budget applies per engine; the engine calls are not being built,
	// so no warning about them (issue 11 item 9).
	assert.True(t, kinds[WarnBudgetPerEngine], "%v", res.Warnings)
	assert.False(t, kinds[WarnMultipleEngines], "%v", res.Warnings)
	doc := documentOf(t, path)
	for _, d := range doc["delegates"].([]any) {
		specs := d.(map[string]any)["compile_specs"].([]any)
		require.Len(t, specs, 2)
		assert.Equal(t, "1073741824", specs[0].(map[string]any)["value_utf8"])
		assert.Equal(t, "cuda:1", specs[1].(map[string]any)["value_utf8"])
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")
}

// failingReaderAt fails once a read reaches limit.
type failingReaderAt struct {
	r     io.ReaderAt
	limit int64
}

var errInjected = errors.New("injected failure")

func (f *failingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.limit {
		n := max(0, int(f.limit-off))
		if n > 0 {
			n, _ = f.r.ReadAt(p[:n], off)
		}
		return n, errInjected
	}
	return f.r.ReadAt(p, off)
}

// TestRebakeInterruptedKeepsInput makes a segment source fail half way
// through the write, with the output being the input itself: the input
// must be byte-for-byte intact and no temporary file left.
func TestRebakeInterruptedKeepsInput(t *testing.T) {
	tmp := t.TempDir()
	path := filepath.Join(tmp, "big.pte")
	copyFile(t, largeProgram(t), path)
	before := fileSum(t, path)
	budget := int64(123)
	wrap := func(segs []*io.SectionReader) []*io.SectionReader {
		out := make([]*io.SectionReader, len(segs))
		for i, s := range segs {
			out[i] = io.NewSectionReader(&failingReaderAt{r: s, limit: s.Size() / 2}, 0, s.Size())
		}
		return out
	}
	_, err := rebake(context.Background(), path, path, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)}, wrap)
	require.Error(t, err)
	assert.ErrorIs(t, err, errInjected)
	assert.Equal(t, before, fileSum(t, path), "input changed")
	assertFiles(t, tmp, 1, "temporary file left behind")

	// The same to a new output: it must not appear.
	out := filepath.Join(tmp, "new.pte")
	_, err = rebake(context.Background(), path, out, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)}, wrap)
	require.Error(t, err)
	_, statErr := os.Stat(out)
	assert.True(t, os.IsNotExist(statErr))
}

func TestRebakeErrors(t *testing.T) {
	in := twoEngineProgram(t, 128)
	dir := t.TempDir()
	out := filepath.Join(t.TempDir(), "o.pte")
	for _, c := range []struct {
		opts *RebakeOptions
		msg  string
	}{
		{&RebakeOptions{}, "nothing to change"},
		{&RebakeOptions{TargetDevice: "tpu:0"}, "target device"},
	} {
		_, err := Rebake(in, out, c.opts)
		assert.ErrorContains(t, err, c.msg)
	}
	_, err := Rebake(filepath.Join(dir, "missing.pte"), out, &RebakeOptions{WeightStreamingBudget: &compilespec.AutoBudget})
	assert.Error(t, err)
	// A non-TensorRT program has nothing to re-bake.
	other := twoEngineProgramEdited(t, 128, func(p *pte.Program) {
		for _, d := range p.Plan(0).Delegates {
			d.ID = "XnnpackBackend"
		}
	})
	_, err = Rebake(other, out, &RebakeOptions{WeightStreamingBudget: &compilespec.AutoBudget})
	assert.ErrorContains(t, err, "no TensorRTBackend delegate")
	_, statErr := os.Stat(out)
	assert.True(t, os.IsNotExist(statErr), fmt.Sprint(statErr))
	assert.False(t, strings.Contains(out, "tmp-"))
}

// TestRebakeReportsWhatIsWritten: the Result describes the budgets and
// target devices the output holds, also when the re-bake leaves the budget
// alone.
func TestRebakeReportsWhatIsWritten(t *testing.T) {
	withSpecs := func(specs ...[]*pte.CompileSpec) string {
		return twoEngineProgramEdited(t, 128, func(p *pte.Program) {
			ds := p.Plan(0).Delegates
			for i, d := range ds {
				d.CompileSpecs = specs[min(i, len(specs)-1)]
			}
		})
	}
	spec := func(k, v string) *pte.CompileSpec { return &pte.CompileSpec{Key: k, Value: []byte(v)} }
	dev0 := spec("target_device", "cuda:0")
	out := filepath.Join(t.TempDir(), "o.pte")
	res, err := Rebake(withSpecs([]*pte.CompileSpec{spec("weight_streaming_budget", "1048576"), dev0}), out, &RebakeOptions{TargetDevice: "cuda:1"})
	require.NoError(t, err)
	require.NotNil(t, res.Budget, "the input's budget is kept and reported")
	assert.Equal(t, int64(1048576), *res.Budget)
	assert.False(t, res.MixedBudgets)
	assert.Equal(t, "cuda:1", res.TargetDevice)
	require.Len(t, res.Methods, 1)
	one := EngineSummary{Budget: res.Budget, TargetDevice: "cuda:1"}
	assert.Equal(t, []EngineSummary{one, one}, res.Methods[0].Engines)
	// The blobs were built for device 0.
	var kinds []WarningKind
	for _, w := range res.Warnings {
		if w.Kind == WarnDeviceMismatch {
			assert.Contains(t, w.Msg, fmt.Sprintf("delegates[%d]", len(kinds)))
			kinds = append(kinds, w.Kind)
		}
	}
	assert.Len(t, kinds, 2, "%v", res.Warnings)

	// Different budgets per delegate are kept, and reported as mixed.
	res, err = Rebake(withSpecs([]*pte.CompileSpec{spec("weight_streaming_budget", "1048576"), dev0},
		[]*pte.CompileSpec{spec("weight_streaming_budget", "524288"), dev0}), out, &RebakeOptions{TargetDevice: "cuda:0"})
	require.NoError(t, err)
	assert.Nil(t, res.Budget)
	assert.True(t, res.MixedBudgets)
	var budgets []int64
	for _, e := range res.Methods[0].Engines {
		require.NotNil(t, e.Budget)
		budgets = append(budgets, *e.Budget)
	}
	assert.ElementsMatch(t, []int64{524288, 1048576}, budgets)
	assert.Equal(t, "cuda:0", res.TargetDevice)

	// A budget given twice is an input --verify fails: refused, by a
	// device-only re-bake too.
	_, err = Rebake(withSpecs([]*pte.CompileSpec{spec("weight_streaming_budget", "1"), dev0, spec("weight_streaming_budget", "2")}),
		out, &RebakeOptions{TargetDevice: "cuda:0"})
	assert.ErrorContains(t, err, `key "weight_streaming_budget" occurs 2 times`)
}

// TestRebakeRefusesBrokenPrograms: an input the verifier finds an Error in
// is not re-baked.
func TestRebakeRefusesBrokenPrograms(t *testing.T) {
	paths := testkit.Glob(t, testkit.SharedDir(t, "vectors", "pte-bad"), "*.pte")
	budget := int64(1 << 20)
	checked := 0
	for _, path := range paths {
		name := filepath.Base(path)
		f, err := pte.Open(path)
		if err != nil {
			t.Logf("%s: not opened (%v); re-bake refuses it earlier", name, err)
			continue
		}
		f.Close()
		first, failing := verdict(t, path)
		if !failing {
			t.Logf("%s: the verifier finds no error; not this test's case", name)
			continue
		}
		checked++
		out := filepath.Join(t.TempDir(), "o.pte")
		_, err = Rebake(path, out, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)})
		assertRefused(t, err, first, out)
	}
	assert.NotZero(t, checked, "no vector the verifier refuses")
}

// TestRebakeThroughSymlink: re-baking a symbolic link in place replaces
// the file it points to and keeps the link.
func TestRebakeThroughSymlink(t *testing.T) {
	tmp := t.TempDir()
	target := filepath.Join(tmp, "real.pte")
	copyFile(t, twoEngineProgram(t, 128), target)
	link := filepath.Join(tmp, "link.pte")
	require.NoError(t, os.Symlink("real.pte", link))
	budget := int64(4096)
	_, err := Rebake(link, link, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)})
	require.NoError(t, err)
	st, err := os.Lstat(link)
	require.NoError(t, err)
	assert.True(t, st.Mode()&os.ModeSymlink != 0, "the link is kept")
	_, budgets := withoutBudgets(t, documentOf(t, target))
	assert.Equal(t, [][]string{{"4096"}, {"4096"}}, budgets)
	assertFiles(t, tmp, 2, "no temporary file is left behind")
}

// TestRebakeNoOverwrite: with NoOverwrite an existing output is refused
// with fs.ErrExist, also when it appears only during the write.
func TestRebakeNoOverwrite(t *testing.T) {
	in := twoEngineProgram(t, 128)
	tmp := t.TempDir()
	out := filepath.Join(tmp, "o.pte")
	require.NoError(t, os.WriteFile(out, []byte("keep"), 0o644))
	budget := int64(4096)
	opts := &RebakeOptions{WeightStreamingBudget: budgetPtr(budget), NoOverwrite: true}
	_, err := Rebake(in, out, opts)
	assert.ErrorIs(t, err, fs.ErrExist)
	require.NoError(t, os.Remove(out))

	// The file appears while the program is written.
	opts.Progress = func(written, total int64) {
		if written == 0 {
			os.WriteFile(out, []byte("keep"), 0o644)
		}
	}
	_, err = Rebake(in, out, opts)
	assert.ErrorIs(t, err, fs.ErrExist)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(data))
	assertFiles(t, tmp, 1, "no temporary file is left behind")
}

// TestRebakeCancelled: cancelling the context while the output is being
// written stops the write, leaves nothing behind and leaves the input (here
// also the output) intact.
func TestRebakeCancelled(t *testing.T) {
	tmp := t.TempDir()
	path := filepath.Join(tmp, "m.pte")
	copyFile(t, largeProgram(t), path)
	before := fileSum(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	midWrite := false
	budget := int64(4096)
	_, err := RebakeContext(ctx, path, path, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget),
		Progress: func(written, total int64) {
			midWrite = written < total
			cancel()
		}})
	assert.ErrorIs(t, err, context.Canceled)
	assert.True(t, midWrite, "cancelled while the output was being written")
	assert.Equal(t, before, fileSum(t, path))
	assertFiles(t, tmp, 1, "no temporary file is left behind")
}

// TestRebakeFIFORefused: a FIFO input is refused instead of blocking.
func TestRebakeFIFORefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "in.pte")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	err := noBlock(t, fifo, func() error {
		_, err := Rebake(fifo, filepath.Join(t.TempDir(), "o.pte"), &RebakeOptions{WeightStreamingBudget: &compilespec.AutoBudget})
		return err
	})
	assert.ErrorContains(t, err, "not a regular file")
}

// assertFiles checks that dir holds n entries (no temporary file left).
func assertFiles(t *testing.T, dir string, n int, msg string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, n, msg)
}

// noBlock runs f, failing the test if it blocks on the FIFO (which it then
// unblocks by opening it for writing).
func noBlock(t *testing.T, fifo string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		t.Fatal("blocked on a FIFO")
		return nil
	}
}

// TestRebakeMatchesBackendIDAsCString: ExecuTorch finds a backend by its
// id as a C string, so a delegate whose id has bytes after a NUL runs on
// TensorRT and is re-baked; its target_device key, also read as a C
// string, is replaced in place rather than followed by a second one.
func TestRebakeMatchesBackendIDAsCString(t *testing.T) {
	in := twoEngineProgramEdited(t, 128, func(p *pte.Program) {
		for _, d := range p.Plan(0).Delegates {
			d.ID = delegate.BackendID + "\x00x"
			for _, s := range d.CompileSpecs {
				if s.Key == compilespec.KeyTargetDevice {
					s.Key += "\x00old"
				}
			}
		}
	})
	budget := int64(1 << 20)
	_, out, res := rebakeFile(t, in, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget), TargetDevice: "cuda:0"})
	assert.Equal(t, 2, res.Delegates)
	for _, d := range out.Program.Plan(0).Delegates {
		var keys []string
		for _, s := range d.CompileSpecs {
			keys = append(keys, s.Key)
		}
		assert.Equal(t, []string{compilespec.KeyWeightStreamingBudget, compilespec.KeyTargetDevice}, keys)
	}
}

// largeProgram writes a TensorRT program with two 1 MiB engines, in
// segments, and returns its path.
func largeProgram(t *testing.T) string {
	t.Helper()
	m := chainMethod("forward", 2)
	for i := range m.Calls {
		e := bytes.Repeat([]byte{byte('a' + i)}, 1<<20)
		m.Calls[i].Engine = EngineReader(bytes.NewReader(e), int64(len(e)))
	}
	path := filepath.Join(t.TempDir(), "large.pte")
	_, err := WriteFile(path, &Program{Methods: []*Method{m}}, nil)
	require.NoError(t, err)
	return path
}

// TestRebakeRefusesEngineThatCannotInit: a program whose TensorRT
// delegate has a 0-byte blob passes the program verifier, but
// TensorRTBackend init fails on it, so ExecuTorch cannot load the method:
// it is not re-baked, and the error names the method and the delegate.
// Other unreadable blobs (one cut short of its header) are refused alike;
// the intact program re-bakes.
func TestRebakeRefusesEngineThatCannotInit(t *testing.T) {
	budget := int64(1 << 20)
	cases := map[string][]byte{"empty blob": {}, "blob cut in its header": []byte("TR01\x00\x00")}
	for name, blob := range cases {
		t.Run(name, func(t *testing.T) {
			in := twoEngineProgramEdited(t, 128, func(p *pte.Program) {
				p.BackendDelegateData = append(p.BackendDelegateData, &pte.BackendDelegateInlineData{Data: blob})
				p.Plan(0).Delegates[1].Processed = &pte.BackendDelegateDataReference{
					Location: pte.DataLocationINLINE, Index: uint32(len(p.BackendDelegateData) - 1)}
			})
			f, err := pte.Open(in)
			require.NoError(t, err)
			for _, fd := range f.Verify() {
				require.NotEqual(t, pte.SeverityError, fd.Severity, "the program verifier must not be what refuses it: %v", fd.Err)
			}
			f.Close()
			out := filepath.Join(t.TempDir(), "o.pte")
			_, err = Rebake(in, out, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)})
			require.Error(t, err)
			var ee *Error
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, "forward", ee.Method)
			assert.Contains(t, err.Error(), "delegates[1]")
			assert.Contains(t, err.Error(), "not re-baked")
			_, statErr := os.Stat(out)
			assert.True(t, os.IsNotExist(statErr), "no output on refusal")
		})
	}
	in := twoEngineProgram(t, 128)
	_, err := Rebake(in, filepath.Join(t.TempDir(), "o.pte"), &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)})
	require.NoError(t, err)
}

// pinnedReaderAt says whether its reads are pinned to one version of the
// bytes, as an *httprange.Reader does.
type pinnedReaderAt struct {
	*bytes.Reader
	pinned bool
}

func (p pinnedReaderAt) Pinned() bool { return p.pinned }

// TestRebakeFileRefusesUnpinned: RebakeFile refuses a program whose reader
// is not pinned to one version, before writing anything, and re-bakes one
// whose reader is.
func TestRebakeFileRefusesUnpinned(t *testing.T) {
	data, err := os.ReadFile(twoEngineProgram(t, 128))
	require.NoError(t, err)
	budget := int64(4096)
	for _, pinned := range []bool{false, true} {
		f, err := pte.NewFile(pinnedReaderAt{bytes.NewReader(data), pinned}, int64(len(data)))
		require.NoError(t, err)
		out := filepath.Join(t.TempDir(), "o.pte")
		_, err = RebakeFile(context.Background(), f, "http://h/p.pte", out, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)})
		if pinned {
			require.NoError(t, err)
			require.FileExists(t, out)
		} else {
			require.ErrorContains(t, err, "not pinned to one version")
			require.NoFileExists(t, out)
		}
	}
}

// budgetOf is the explicit budget of n bytes (n >= 0).
func budgetOf(n int64) compilespec.Budget {
	b, err := compilespec.BudgetOf(n)
	if err != nil {
		panic(err)
	}
	return b
}

// budgetPtr is a pointer to budgetOf(n), for RebakeOptions.
func budgetPtr(n int64) *compilespec.Budget {
	b := budgetOf(n)
	return &b
}
