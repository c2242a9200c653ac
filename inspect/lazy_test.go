package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// TestLazyPlansViews: every view gives the same value for a File opened
// with pte.OpenOptions.LazyPlans as for one decoded whole (the document,
// the summary, the checks, method names, backends and needed keys), whole
// and narrowed to each method and backend, on the built test programs and
// every program of the shared tree; and Options.SummaryMethods cuts only
// Summary.Methods.
func TestLazyPlansViews(t *testing.T) {
	programs := viewPrograms(t)
	compared := 0
	for name, data := range programs {
		eager, lazy := openView(data, false), openView(data, true)
		if (eager == nil) != (lazy == nil) {
			t.Fatalf("%s: opens eagerly: %v, lazily: %v", name, eager != nil, lazy != nil)
		}
		if eager == nil {
			continue
		}
		compared++
		t.Run(name, func(t *testing.T) { requireLazySame(t, eager, lazy) })
	}
	require.NotZero(t, compared, "no program opened")
}

// openView opens data as the views do (a truncated file whose region is
// whole is shown), whole or with LazyPlans; nil when it is refused.
func openView(data []byte, lazy bool) *pte.File {
	f, err := pte.NewFileWith(bytes.NewReader(data), int64(len(data)), &pte.OpenOptions{Truncated: true, LazyPlans: lazy})
	if err != nil {
		return nil
	}
	return f
}

// viewFiles yields each of viewPrograms that opens, read whole and with
// LazyPlans, labelled with its name and how it is read, with a function
// that opens it afresh.
func viewFiles(t *testing.T) iter.Seq2[string, func() *pte.File] {
	return func(yield func(string, func() *pte.File) bool) {
		for name, data := range viewPrograms(t) {
			for _, lazy := range []bool{false, true} {
				open := func() *pte.File { return openView(data, lazy) }
				if open() == nil {
					continue
				}
				if !yield(fmt.Sprintf("%s (lazy %v)", name, lazy), open) {
					return
				}
			}
		}
	}
}

// viewOptions are the options the views are compared under on f: none,
// and hashing, and each method and each backend alone, without and with
// hashing, then more.
func viewOptions(f *pte.File, more ...*Options) []*Options {
	optss := []*Options{nil, {Hash: true}}
	for _, m := range MethodNames(f) {
		optss = append(optss, &Options{Method: m}, &Options{Method: m, Hash: true})
	}
	for _, id := range FileBackendIDs(f, "") {
		optss = append(optss, &Options{Backend: id}, &Options{Backend: id, Hash: true})
	}
	return append(optss, more...)
}

// viewPrograms are the programs the views are compared on, by name: the
// built test programs and every program of the shared tree.
func viewPrograms(t *testing.T) map[string][]byte {
	programs := maps.Clone(testprog.Programs(t)) // the cache is shared
	for _, dir := range []string{"corpus", "vectors/pte", "vectors/pte-bad"} {
		for _, p := range testkit.Glob(t, testkit.SharedDir(t, dir), "*.pte") {
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			programs[dir+"/"+filepath.Base(p)] = data
		}
	}
	return programs
}

// requireLazySame compares the views of eager and lazy, the same file
// opened without and with LazyPlans.
func requireLazySame(t *testing.T, eager, lazy *pte.File) {
	require.Equal(t, MethodNames(eager), MethodNames(lazy))
	require.Equal(t, backendIDsOf(eager.Program, ""), FileBackendIDs(lazy, ""))
	require.Equal(t, neededKeysOf(eager.Program), FileNeededKeys(lazy))
	ep, eerr := Check(eager)
	lp, lerr := Check(lazy)
	require.Equal(t, eerr, lerr)
	require.Equal(t, ep, lp)
	optss := []*Options{nil, {Hash: true}}
	for _, name := range MethodNames(eager) {
		optss = append(optss, &Options{Method: name})
		require.Equal(t, backendIDsOf(eager.Program, name), FileBackendIDs(lazy, name))
	}
	for _, id := range backendIDsOf(eager.Program, "") {
		optss = append(optss, &Options{Backend: id})
	}
	encode := func(doc *Document, err error) string {
		if err != nil {
			return "error: " + err.Error()
		}
		var b bytes.Buffer
		require.NoError(t, Encode(&b, doc))
		return b.String()
	}
	// Compile spec rows, under every filter the views are compared with
	// and ones that select nothing.
	filters := [][2]string{{"no such method", ""}, {"", "no such backend"}}
	for _, opts := range optss {
		if opts != nil {
			filters = append(filters, [2]string{opts.Method, opts.Backend})
		}
	}
	for _, fl := range filters {
		method, backend := fl[0], fl[1]
		want := CompileSpecRows(eager.Program, method, backend)
		for _, f := range []*pte.File{eager, lazy} {
			got := slices.Collect(FileCompileSpecs(f, method, backend))
			if len(want) == 0 {
				require.Empty(t, got, "FileCompileSpecs %q %q", method, backend)
				continue
			}
			require.Equal(t, want, got, "FileCompileSpecs %q %q", method, backend)
			for range FileCompileSpecs(f, method, backend) {
				break // stopping early must not panic (a yield after false would)
			}
		}
	}
	for _, opts := range optss {
		require.Equal(t, encode(Build(eager, opts)), encode(Build(lazy, opts)), "Build %+v", opts)
		es, _, eerr := Summarize(eager, opts)
		ls, _, lerr := Summarize(lazy, opts)
		require.Equal(t, eerr, lerr)
		if eerr != nil {
			continue
		}
		require.Equal(t, summaryJSON(t, es), summaryJSON(t, ls), "Summarize %+v", opts)
		cut := Options{SummaryMethods: 1}
		if opts != nil {
			cut = *opts
			cut.SummaryMethods = 1
		}
		cs, _, err := Summarize(lazy, &cut)
		require.NoError(t, err)
		require.Equal(t, es.MethodCount, cs.MethodCount)
		require.LessOrEqual(t, len(cs.Methods), 1)
		cs.Methods, es.Methods = nil, nil
		require.Equal(t, summaryJSON(t, es), summaryJSON(t, cs), "Summarize %+v", cut)
	}
}

// summaryJSON is s as JSON, for comparing summaries with their delegates
// by value.
func summaryJSON(t *testing.T, s *Summary) string {
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return string(b)
}
