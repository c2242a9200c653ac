package testprog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/check"
	"github.com/ptekit/ptekit/executor"
	"github.com/ptekit/ptekit/export"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/s3test"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/objstore"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// openModes are the ways a *pte.File is made: read whole or with its
// plans left undecoded (pte.OpenOptions.LazyPlans), from a path or over
// any io.ReaderAt.
var openModes = []struct {
	name string
	open func(path string, data []byte) (*pte.File, error)
}{
	{"Open", func(path string, _ []byte) (*pte.File, error) { return pte.Open(path) }},
	{"OpenWith LazyPlans", func(path string, _ []byte) (*pte.File, error) {
		return pte.OpenWith(path, &pte.OpenOptions{LazyPlans: true})
	}},
	{"NewFile", func(_ string, data []byte) (*pte.File, error) {
		return pte.NewFile(bytes.NewReader(data), int64(len(data)))
	}},
	{"NewFileWith LazyPlans", func(_ string, data []byte) (*pte.File, error) {
		return pte.NewFileWith(bytes.NewReader(data), int64(len(data)), &pte.OpenOptions{LazyPlans: true})
	}},
}

// objectServer is the store export.RebakeObject writes to, and
// objectKeys numbers its outputs.
var (
	objectServer *s3test.Server
	objectKeys   atomic.Int64
)

// fileFunctions are the public functions of the library that take a
// *pte.File or a *pte.Program (given the File's), each as "package.Name"
// with what it answers, as text: an error's message, else its result in
// JSON (a re-bake: the bytes written).
var fileFunctions = map[string]func(t *testing.T, f *pte.File) string{
	"export.RebakeFile": func(t *testing.T, f *pte.File) string {
		out := filepath.Join(t.TempDir(), "out.pte")
		budget := int64(5 << 20)
		res, err := export.RebakeFile(context.Background(), f, "in.pte", out, &export.RebakeOptions{WeightStreamingBudget: BudgetPtr(budget)})
		if err != nil {
			return "error: " + err.Error()
		}
		data, err := os.ReadFile(out)
		require.NoError(t, err)
		res.Path = "" // a temporary name
		return answer(res, nil) + fmt.Sprintf("%x", data)
	},
	"export.RebakeObject": func(t *testing.T, f *pte.File) string {
		// Streamed to the test store that TestEveryWayOfOpeningAnswersAlike
		// starts (RebakeObject assembles in the store only from an object).
		st, err := objstore.New(context.Background(), nil)
		require.NoError(t, err)
		key := fmt.Sprintf("out/%d.pte", objectKeys.Add(1))
		res, err := export.RebakeObject(context.Background(), f, "in.pte", st, nil, objstore.Location{Bucket: "rebaked", Key: key},
			&export.RebakeOptions{WeightStreamingBudget: BudgetPtr(5 << 20)})
		if err != nil {
			return "error: " + err.Error()
		}
		data, err := objectServer.Get("rebaked", key)
		require.NoError(t, err)
		res.Path, res.Object, res.Uploaded = "", false, 0 // as RebakeFile's
		return answer(res, nil) + fmt.Sprintf("%x", data)
	},
	"check.Program": func(_ *testing.T, f *pte.File) string { return answer(check.Program(f)) },
	"check.Reader":  func(_ *testing.T, f *pte.File) string { return answer(check.Reader(f, ""), nil) },
	"check.Delegate": func(_ *testing.T, f *pte.File) string {
		var all []check.Problem
		for i := range f.Program.NumPlans() {
			for j, d := range f.Program.PlanDelegates(i) {
				ps, err := check.Delegate(f, i, j, d, nil)
				if err != nil {
					return "error: " + err.Error()
				}
				all = append(all, ps...)
			}
		}
		return answer(all, nil)
	},
	"check.Prefetch": func(_ *testing.T, f *pte.File) string { check.Prefetch(f); return "" },
	"inspect.Check":  func(_ *testing.T, f *pte.File) string { return answer(inspect.Check(f)) },
	"inspect.CheckData": func(_ *testing.T, f *pte.File) string {
		return answer(inspect.CheckData(f, ptd.Resolve(f.Program, nil)))
	},
	"inspect.Build": func(_ *testing.T, f *pte.File) string {
		return answer(inspect.Build(f, &inspect.Options{Hash: true}))
	},
	"inspect.BuildDiffPair": func(_ *testing.T, f *pte.File) string {
		a, b, _, err := inspect.BuildDiffPair(f, f, nil)
		return answer([]*inspect.Document{a, b}, err)
	},
	"inspect.WriteJSON": func(_ *testing.T, f *pte.File) string {
		var buf bytes.Buffer
		if _, err := inspect.WriteJSON(&buf, f, nil); err != nil {
			return "error: " + err.Error()
		}
		return buf.String()
	},
	"inspect.NewStream": func(_ *testing.T, f *pte.File) string {
		st, err := inspect.NewStream(f, nil)
		if err != nil {
			return "error: " + err.Error()
		}
		var ms []*inspect.MethodView
		err = st.Each(func(m *inspect.MethodView) error { ms = append(ms, m); return nil })
		return answer([]any{ms, st.Document()}, err)
	},
	"inspect.Size": func(_ *testing.T, f *pte.File) string {
		r, err := inspect.Size(f, nil)
		return answer(r, err)
	},
	"inspect.SummarizeDiff": func(_ *testing.T, f *pte.File) string {
		d, err := inspect.SummarizeDiff(f, f, nil)
		return answer(d, err)
	},
	"inspect.Summarize": func(_ *testing.T, f *pte.File) string {
		s, doc, err := inspect.Summarize(f, nil)
		return answer([]any{s, doc}, err)
	},
	"inspect.CompileSpecRows": func(_ *testing.T, f *pte.File) string {
		return answer(slices.Collect(inspect.CompileSpecRows(f.Program, "", "")), nil)
	},
	"inspect.MethodNames": func(_ *testing.T, f *pte.File) string { return answer(inspect.MethodNames(f), nil) },
	"inspect.BackendIDs":  func(_ *testing.T, f *pte.File) string { return answer(inspect.BackendIDs(f.Program, ""), nil) },
	"inspect.NeededKeys":  func(_ *testing.T, f *pte.File) string { return answer(inspect.NeededKeys(f.Program), nil) },
	"inspect.Program": func(_ *testing.T, f *pte.File) string {
		return answer(&inspect.Program{Program: f.Program, Hash: true}, nil)
	},
	"inspect.ParseDelegateRef": func(_ *testing.T, f *pte.File) string {
		var out []any
		for _, ref := range []string{"0:0", f.Program.PlanName(0) + ":0", "no such method:0"} {
			m, d, err := inspect.ParseDelegateRef(f.Program, ref)
			out = append(out, []any{m, d, fmt.Sprint(err)})
		}
		return answer(out, nil)
	},
	"ptd.Resolve": func(_ *testing.T, f *pte.File) string { return answer(ptd.Resolve(f.Program, nil), nil) },
	"ptd.ResolveEach": func(_ *testing.T, f *pte.File) string {
		var ms []*ptd.MethodResult
		r := ptd.ResolveEach(f.Program, nil, func(_ int, m *ptd.MethodResult) { ms = append(ms, m) })
		return answer([]any{r, ms}, nil)
	},
	"executor.UsesDeprecatedConstantBuffer": func(_ *testing.T, f *pte.File) string {
		return answer(executor.UsesDeprecatedConstantBuffer(f.Program), nil)
	},
	"executor.Load": func(_ *testing.T, f *pte.File) string {
		p, err := executor.Load(f, executor.Config{})
		if err != nil {
			return "error: " + err.Error()
		}
		var out []string
		for _, name := range p.MethodNames() {
			_, err := p.LoadMethod(name, nil)
			out = append(out, fmt.Sprintf("%s: %v", name, err))
		}
		return answer(out, nil)
	},
	"executor.PlanProgram": func(_ *testing.T, f *pte.File) string {
		return answer(executor.PlanProgram(f, executor.PlanOptions{}))
	},
}

// answer is a function's result as text: its error's message, else v in
// JSON.
func answer(v any, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "unmarshallable: " + err.Error()
	}
	return string(b)
}

// TestEveryWayOfOpeningAnswersAlike is issue 22's "one way to read a
// program": every public function that takes a *pte.File (or its
// Program) answers the same whichever way the File was opened, on the programs built here and every
// program of the shared tree (found at run time). Before, export.RebakeFile
// read Program.ExecutionPlan, which LazyPlans left nil, and refused a
// lazily opened program as having no TensorRT delegate.
func TestEveryWayOfOpeningAnswersAlike(t *testing.T) {
	objectServer = s3test.Start(t)
	objectServer.Setenv(t)
	objectServer.Bucket(t, "rebaked")
	tmp := t.TempDir()
	paths := map[string]string{}
	built, err := Build()
	require.NoError(t, err)
	for name, data := range built {
		p := filepath.Join(tmp, name+".pte")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		paths["built "+name] = p
	}
	for _, p := range testkit.SharedPrograms(t, 1<<20) {
		paths[p] = p
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range paths {
			if !yield(n) {
				return
			}
		}
	})
	rebaked := 0
	for _, name := range names {
		data, err := os.ReadFile(paths[name])
		require.NoError(t, err)
		for _, fn := range slices.Sorted(func(yield func(string) bool) {
			for n := range fileFunctions {
				if !yield(n) {
					return
				}
			}
		}) {
			var want string
			for i, m := range openModes {
				f, err := m.open(paths[name], data)
				if err != nil {
					break // it opens no way; nothing to compare
				}
				got := fileFunctions[fn](t, f)
				f.Close()
				if i == 0 {
					want = got
					if fn == "export.RebakeFile" && !strings.HasPrefix(got, "error: ") {
						rebaked++
					}
					continue
				}
				if got != want {
					t.Errorf("%s: %s of a File made by %s answers otherwise than of one made by %s:\n%.300s\nwant\n%.300s",
						name, fn, m.name, openModes[0].name, got, want)
				}
			}
		}
	}
	assert.NotZero(t, rebaked, "no program re-bakes")
}

// TestFileFunctionsListed keeps fileFunctions complete: every exported
// function of the library's packages with a *pte.File or *pte.Program
// parameter is in it.
func TestFileFunctionsListed(t *testing.T) {
	var found []string
	for _, pkg := range []string{"check", "compilespec", "delegate", "executor", "export", "inspect", "ptd"} {
		dir := filepath.Join("..", "..", pkg)
		pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, 0)
		require.NoError(t, err)
		for _, p := range pkgs {
			for _, file := range p.Files {
				for _, decl := range file.Decls {
					fd, ok := decl.(*ast.FuncDecl)
					if !ok || !fd.Name.IsExported() || fd.Recv != nil && !exportedRecv(fd.Recv) {
						continue
					}
					for _, field := range fd.Type.Params.List {
						if star, ok := field.Type.(*ast.StarExpr); ok {
							if sel, ok := star.X.(*ast.SelectorExpr); ok && (sel.Sel.Name == "File" || sel.Sel.Name == "Program") && fmt.Sprint(sel.X) == "pte" {
								found = append(found, pkg+"."+fd.Name.Name)
							}
						}
					}
				}
			}
		}
	}
	require.NotEmpty(t, found)
	for _, fn := range found {
		assert.Contains(t, fileFunctions, fn, "%s takes a *pte.File or *pte.Program: give it to TestEveryWayOfOpeningAnswersAlike", fn)
	}
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(recv *ast.FieldList) bool {
	t := recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}
