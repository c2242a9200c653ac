package export

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/inplace"
	"github.com/ptekit/ptekit/internal/undorecord"
	"github.com/ptekit/ptekit/pte"
)

// The child process of the in-place tests: the test binary run again with
// these variables set.
const (
	envChild = "PTEKIT_TEST_INPLACE_CHILD" // the file to re-bake in place
	envStep  = "PTEKIT_TEST_INPLACE_STEP"  // the step to die at (SIGKILL)
	envHold  = "PTEKIT_TEST_INPLACE_HOLD"  // "open" or "mmap": hold the file
	envStop  = "PTEKIT_TEST_INPLACE_STOP"  // the step to stop at (SIGSTOP)
)

// TestInPlaceChild is not a test: it is the child process of
// TestRebakeInPlaceKilledAtEveryStep, TestRebakeInPlaceRefusedWhileOpen
// and TestRebakeInPlaceStoppedWriter.
func TestInPlaceChild(t *testing.T) {
	path := os.Getenv(envChild)
	if path == "" {
		t.Skip("child process only")
	}
	if hold := os.Getenv(envHold); hold != "" {
		holdFile(path, hold)
		return
	}
	step, stop := inplace.Step(os.Getenv(envStep)), inplace.Step(os.Getenv(envStop))
	inplace.Hook = func(s inplace.Step) {
		switch s {
		case step:
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		case stop:
			stopThisThread() // until SIGCONT
		}
	}
	budget := int64(7 << 20)
	res, err := Rebake(path, path, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget), InPlace: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	if !res.InPlace {
		fmt.Fprintln(os.Stderr, "not in place")
		os.Exit(4)
	}
}

// holdFile opens path (and with "mmap" maps it and closes the descriptor,
// as a program that maps a .pte does), says "ready" and waits for stdin
// to close.
func holdFile(path, how string) {
	f, err := os.Open(path)
	if err != nil {
		os.Exit(5)
	}
	if how == "mmap" {
		st, _ := f.Stat()
		if _, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED); err != nil {
			os.Exit(6)
		}
		f.Close()
	}
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
}

func childCmd(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestInPlaceChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// inPlaceProgram is a two-engine program whose head has room for a budget:
// 4096-byte alignment leaves kilobytes between the tables and the segments.
func inPlaceProgram(t *testing.T) string {
	t.Helper()
	path := twoEngineProgram(t, 4096)
	f, err := pte.Open(path)
	require.NoError(t, err)
	defer f.Close()
	require.NotNil(t, f.Header)
	require.Greater(t, f.Header.SegmentBaseOffset-f.Header.ProgramSize, uint64(512), "the test needs head room")
	return path
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func TestRebakeInPlace(t *testing.T) {
	skipWithoutLeases(t)
	path := inPlaceProgram(t)
	old := readFile(t, path)
	budget := int64(7 << 20)
	res, err := Rebake(path, path, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget), InPlace: true})
	require.NoError(t, err)
	assert.True(t, res.InPlace)
	assert.Positive(t, res.Rewritten)
	assert.Equal(t, int64(len(old)), res.Size)
	got := readFile(t, path)
	require.Len(t, got, len(old), "an in-place re-bake keeps the size")

	f, err := pte.Open(path)
	require.NoError(t, err)
	base := f.Header.SegmentBaseOffset
	assert.Equal(t, old[base:], got[base:], "segment data untouched")
	assert.LessOrEqual(t, res.Rewritten, int64(base))
	for _, d := range f.Program.Plan(0).Delegates {
		var v []byte
		for _, s := range d.CompileSpecs {
			if s.Key == "weight_streaming_budget" {
				v = s.Value
			}
		}
		assert.Equal(t, strconv.FormatInt(budget, 10), string(v))
	}
	require.NoError(t, f.Close())
	for _, e := range mustReadDir(t, filepath.Dir(path)) {
		assert.Equal(t, filepath.Base(path), e, "nothing else is left in the directory")
	}

	// The same program re-baked whole reads the same: the documents
	// differ only in layout (a whole re-bake may move the base).
	whole := filepath.Join(t.TempDir(), "whole.pte")
	copyBytes(t, old, whole)
	_, err = Rebake(whole, whole, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)})
	require.NoError(t, err)
	gotDoc, _ := withoutBudgets(t, documentOf(t, path))
	wantDoc, _ := withoutBudgets(t, documentOf(t, whole))
	assert.Empty(t, diffExcept(t, gotDoc, wantDoc, layoutPaths...))

	// Again with the same budget: nothing to write.
	res, err = Rebake(path, "", &RebakeOptions{WeightStreamingBudget: budgetPtr(budget), InPlace: true})
	require.NoError(t, err)
	assert.True(t, res.InPlace)
	assert.Zero(t, res.Rewritten)
	assert.Equal(t, got, readFile(t, path))
}

func TestRebakeInPlaceFallsBackWhenTheHeadGrows(t *testing.T) {
	skipWithoutLeases(t)
	path := twoEngineProgram(t, 128)
	f, err := pte.Open(path)
	require.NoError(t, err)
	room := f.Header.SegmentBaseOffset - f.Header.ProgramSize
	f.Close()
	// A budget and a target device on both delegates take more than the
	// padding that 128-byte alignment leaves.
	budget := int64(1 << 40)
	res, err := Rebake(path, path, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget), TargetDevice: "cuda:1", InPlace: true})
	require.NoError(t, err)
	if res.InPlace {
		t.Skipf("the re-baked head fit into %d bytes of room; nothing to fall back from", room)
	}
	var kinds []WarningKind
	for _, w := range res.Warnings {
		kinds = append(kinds, w.Kind)
	}
	assert.Contains(t, kinds, WarnInPlace)
	f, err = pte.Open(path)
	require.NoError(t, err)
	f.Close()
}

func TestRebakeInPlaceOptions(t *testing.T) {
	path := inPlaceProgram(t)
	budget := int64(1)
	_, err := Rebake(path, path+".other", &RebakeOptions{WeightStreamingBudget: budgetPtr(budget), InPlace: true})
	assert.ErrorContains(t, err, "cannot be another file")
	_, err = Rebake(path, path, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget), InPlace: true, SegmentAlignment: 64})
	assert.ErrorContains(t, err, "segment alignment")
}

// TestRebakeInPlaceKilledAtEveryStep kills the writer (SIGKILL, in a
// child process) at each step of the edit; after recovery (automatic on
// the next in-place re-bake, or pteexport --recover's RecoverInPlace) the file is
// byte for byte the old program or the new one.
func TestRebakeInPlaceKilledAtEveryStep(t *testing.T) {
	skipWithoutLeases(t)
	src := inPlaceProgram(t)
	old := readFile(t, src)
	newPath := filepath.Join(t.TempDir(), "new.pte")
	copyBytes(t, old, newPath)
	run := childCmd(t, envChild+"="+newPath, envStep+"=none")
	out, err := run.CombinedOutput()
	require.NoError(t, err, "%s", out)
	want := readFile(t, newPath)
	require.NotEqual(t, old, want)

	steps := []inplace.Step{inplace.StepUndoWritten, inplace.StepPartial, inplace.StepWritten, inplace.StepSynced, inplace.StepUndoRemoved}
	for i, step := range steps {
		for _, how := range []string{"recover", "rebake"} {
			t.Run(string(step)+"/"+how, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "p.pte")
				copyBytes(t, old, path)
				cmd := childCmd(t, envChild+"="+path, envStep+"="+string(step))
				out, err := cmd.CombinedOutput()
				var ee *exec.ExitError
				require.ErrorAs(t, err, &ee, "%s", out)
				ws, ok := ee.Sys().(syscall.WaitStatus)
				require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "child not killed: %v %s", err, out)

				_, recErr := os.Stat(undorecord.Path(path))
				last := i == len(steps)-1
				assert.Equal(t, last, errors.Is(recErr, os.ErrNotExist), "undo record present iff the edit was not over")
				if step == inplace.StepPartial {
					cur := readFile(t, path)
					assert.False(t, bytes.Equal(cur, old) || bytes.Equal(cur, want), "killed mid-write: the file is torn before recovery")
				}

				wantAfter := old
				if last {
					wantAfter = want
				}
				switch how {
				case "recover":
					did, err := RecoverInPlace(path)
					require.NoError(t, err)
					assert.Equal(t, !last, did)
					assert.Equal(t, wantAfter, readFile(t, path), "after recovery the file is the old or the new program")
				case "rebake":
					// The next in-place re-bake recovers first, then
					// re-bakes: the result is the new program.
					budget := int64(7 << 20)
					_, err := Rebake(path, path, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget), InPlace: true})
					require.NoError(t, err)
					assert.Equal(t, want, readFile(t, path))
				}
				_, recErr = os.Stat(undorecord.Path(path))
				assert.ErrorIs(t, recErr, os.ErrNotExist, "the record is gone")
			})
		}
	}
}

// TestRebakeInPlaceRefusedWhileOpen has a second process hold the file
// open (or only mapped): the in-place re-bake is refused with ErrBusy and
// leaves the file alone; once that process is gone it goes through.
func TestRebakeInPlaceRefusedWhileOpen(t *testing.T) {
	skipWithoutLeases(t)
	for _, how := range []string{"open", "mmap"} {
		t.Run(how, func(t *testing.T) {
			path := inPlaceProgram(t)
			old := readFile(t, path)
			cmd := childCmd(t, envChild+"="+path, envHold+"="+how)
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			line, err := bufio.NewReader(stdout).ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "ready\n", line)

			budget := int64(7 << 20)
			_, err = Rebake(path, path, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget), InPlace: true})
			require.ErrorIs(t, err, inplace.ErrBusy)
			assert.ErrorContains(t, err, "open or mapped by another process")
			assert.Equal(t, old, readFile(t, path))

			stdin.Close()
			require.NoError(t, cmd.Wait())
			res, err := Rebake(path, path, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget), InPlace: true})
			require.NoError(t, err)
			assert.True(t, res.InPlace)
		})
	}
}

// skipWithoutLeases skips where write leases do not exist (not Linux).
func skipWithoutLeases(t *testing.T) {
	t.Helper()
	if !inplace.Supported() {
		t.Skip("in-place edits need write leases (Linux)")
	}
}

func copyBytes(t *testing.T, b []byte, path string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func mustReadDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestRebakeReportsUndoRecord (issue 21): a re-bake that is not in place
// never applies an undo record beside its input, even one --recover would
// apply; it reads the input as it is and warns (WarnUndoRecord). The
// input and the record are left alone.
func TestRebakeReportsUndoRecord(t *testing.T) {
	skipWithoutLeases(t)
	path := inPlaceProgram(t)
	old := readFile(t, path)
	undo := undorecord.Path(path)
	rec := undorecord.Encode(int64(len(old)), 0, []byte("EVILEVIL"), old[:8])
	require.NoError(t, os.WriteFile(undo, rec, 0o600))
	budget := int64(7 << 20)
	out := filepath.Join(t.TempDir(), "out.pte")
	res, err := Rebake(path, out, &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)})
	require.NoError(t, err)
	var kinds []WarningKind
	for _, w := range res.Warnings {
		kinds = append(kinds, w.Kind)
		if w.Kind == WarnUndoRecord {
			assert.Contains(t, w.Msg, "pteexport --recover "+path)
		}
	}
	assert.Contains(t, kinds, WarnUndoRecord)
	assert.Equal(t, old, readFile(t, path), "the input is read as it is")
	assert.Equal(t, rec, readFile(t, undo), "the record stays")

	// A re-bake that fails says what lies beside its input.
	require.NoError(t, os.WriteFile(path, old[:len(old)/2], 0o644))
	_, err = Rebake(path, filepath.Join(t.TempDir(), "out2.pte"), &RebakeOptions{WeightStreamingBudget: budgetPtr(budget)})
	assert.ErrorContains(t, err, "undo record")
}
