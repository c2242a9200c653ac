package pte

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// fcReadAll reads everything a File offers (findings, segments, delegate
// payloads, constants, named data) and returns a summary of it.
func fcReadAll(f *File) string {
	var b strings.Builder
	for _, fd := range f.Verify() {
		fmt.Fprintln(&b, fd)
	}
	add := func(what string, p *Payload, err error) {
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", what, err)
			return
		}
		data, err := p.Data()
		fmt.Fprintf(&b, "%s: %x %v\n", what, sha256.Sum256(data), err)
	}
	for i := range f.Program.Segments {
		p, err := f.Segment(i)
		add(fmt.Sprint("segment ", i), p, err)
	}
	for i, ep := range f.Program.Plans() {
		fmt.Fprintf(&b, "plan %d %q (first of its name: %d): %d values, %d chains, %d operators, %d delegates\n",
			i, ep.Name, f.PlanIndex(ep.Name), len(ep.Values), len(ep.Chains), len(ep.Operators), len(ep.Delegates))
		for j := range f.Program.PlanDelegates(i) {
			p, err := f.DelegateData(i, j)
			add(fmt.Sprint("delegate ", i, j), p, err)
		}
	}
	n := len(f.Program.ConstantBuffer)
	if cs := f.Program.ConstantSegment; cs != nil {
		n = max(n, len(cs.Offsets))
	}
	for i := range n {
		p, err := f.ConstantData(i)
		add(fmt.Sprint("constant ", i), p, err)
	}
	for _, nd := range f.Program.NamedData {
		p, err := f.NamedData(nd.Key)
		add("named "+nd.Key, p, err)
	}
	return b.String()
}

// TestFileConcurrentReads: goroutines sharing one File see what a single
// goroutine sees, with or without LazyPlans (whose plans, decoded by each
// goroutine, share the File's copies of shared strings), PlanIndex's index
// of names built by whichever goroutine gets past the scans first. Run with -race to
// check the documented promise.
func TestFileConcurrentReads(t *testing.T) {
	var paths []string
	for _, sub := range []string{"corpus", "vectors/pte"} {
		n := 0
		for _, p := range testkit.Glob(t, testkit.SharedDir(t, sub), "*.pte") {
			if st, err := os.Stat(p); err == nil && st.Size() < 4<<20 && n < 8 {
				paths = append(paths, p)
				n++
			}
		}
	}
	for _, path := range paths {
		f, err := Open(path)
		if err != nil {
			continue // refused files are covered elsewhere
		}
		want := fcReadAll(f)
		f.Close()
		for _, lazy := range []bool{false, true} {
			fcConcurrent(t, path, lazy, want)
		}
	}
}

// fcConcurrent reads the file at path with 8 goroutines sharing one File
// and fails unless each reads want.
func fcConcurrent(t *testing.T, path string, lazy bool, want string) {
	f, err := OpenWith(path, &OpenOptions{LazyPlans: lazy})
	if err != nil {
		t.Fatalf("%s (LazyPlans %v): %v", path, lazy, err)
	}
	defer f.Close()
	var wg sync.WaitGroup
	got := make([]string, 8)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[g] = fcReadAll(f)
		}()
	}
	wg.Wait()
	for g, s := range got {
		if s != want {
			t.Errorf("%s (LazyPlans %v): goroutine %d read differently:\n%s\nwant\n%s", path, lazy, g, s, want)
		}
	}
}

// TestDelegateDataOutOfRange: bad indices are *FormatError with
// InvalidArgument, like the other accessors' argument errors.
func TestDelegateDataOutOfRange(t *testing.T) {
	f := shOpen(t, vlWrite(t, wrProgram(1), nil, []byte("engine")))
	for _, c := range []struct {
		plan, delegate int
		path           string
	}{
		{-1, 0, "execution_plan"}, {1, 0, "execution_plan"},
		{0, -1, "execution_plan[0].delegates"}, {0, 1, "execution_plan[0].delegates"},
	} {
		_, err := f.DelegateData(c.plan, c.delegate)
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Code != CodeInvalidArgument || fe.Path != c.path || !strings.Contains(fe.Msg, "out of range") {
			t.Errorf("DelegateData(%d, %d) err = %v, want InvalidArgument at %s", c.plan, c.delegate, err, c.path)
		}
	}
	if _, err := f.DelegateData(0, 0); err != nil {
		t.Errorf("DelegateData(0, 0): %v", err)
	}
}
