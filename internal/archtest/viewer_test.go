package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// deps lists the packages the non-test code of pkg (a module-relative
// path) imports, directly or not.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(gobin, "list", "-deps", "./"+pkg)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// writers are the functions and methods (by name) that write, create,
// rename, remove or change a file; readOnlyFlags the open flags that
// only read.
var writers = []string{
	"Create", "CreateTemp", "WriteFile", "Remove", "RemoveAll", "Rename", "Link", "Symlink",
	"Mkdir", "MkdirAll", "Chmod", "Chown", "Lchown", "Chtimes", "Truncate", "Ftruncate",
	"Write", "WriteAt", "WriteString", "ReadFrom", "Sync", "Unlink", "Unlinkat", "Renameat",
	"Pwrite", "Fallocate", "Mkfifo", "Mknod",
}

var writeFlags = []string{"O_WRONLY", "O_RDWR", "O_CREATE", "O_CREAT", "O_TRUNC", "O_APPEND"}

// TestViewersCannotApplyUndoRecords (issue 21: a viewer never writes):
// pteinspect's code cannot reach internal/inplace, the one package that
// applies undo records and changes files in place, through any import
// (pteexport does, so the check is not vacuous), and the read-only
// internal/undorecord that pteinspect reports records with (through
// internal/input) calls nothing that writes, and opens files only for
// reading.
func TestViewersCannotApplyUndoRecords(t *testing.T) {
	const inplace = module + "/internal/inplace"
	const probe = module + "/internal/undorecord"
	viewer := deps(t, "cmd/pteinspect")
	if slices.Contains(viewer, inplace) {
		t.Errorf("cmd/pteinspect imports %s (directly or not): a viewer must not reach the code that applies undo records", inplace)
	}
	if !slices.Contains(viewer, probe) {
		t.Errorf("cmd/pteinspect does not import %s: where does it find undo records?", probe)
	}
	if !slices.Contains(deps(t, "cmd/pteexport"), inplace) {
		t.Errorf("cmd/pteexport does not reach %s: the check above means nothing", inplace)
	}

	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join("..", "undorecord", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no sources of internal/undorecord: %v", err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p := strings.Trim(imp.Path.Value, `"`); strings.HasPrefix(p, module+"/") {
				t.Errorf("%s imports %s: the read-only probe imports no ptekit package", fset.Position(imp.Pos()), p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if slices.Contains(writers, sel.Sel.Name) {
				t.Errorf("%s: internal/undorecord calls %s, which writes", fset.Position(call.Pos()), sel.Sel.Name)
			}
			if sel.Sel.Name == "OpenFile" || sel.Sel.Name == "Open" || sel.Sel.Name == "Openat" {
				ast.Inspect(call, func(n ast.Node) bool {
					if id, ok := n.(*ast.Ident); ok && slices.Contains(writeFlags, id.Name) {
						t.Errorf("%s: internal/undorecord opens a file with %s", fset.Position(id.Pos()), id.Name)
					}
					return true
				})
			}
			return true
		})
	}
}

// TestExporterNeedsNoViews (issue 22 item 7): pteexport prints its --json
// document (export.Summary) and the failure object (internal/jsonerr)
// without reaching inspect, the package of pteinspect's views, through any
// import; pteinspect does reach it, so the check is not vacuous.
func TestExporterNeedsNoViews(t *testing.T) {
	const views = module + "/inspect"
	const failure = module + "/internal/jsonerr"
	exporter := deps(t, "cmd/pteexport")
	if slices.Contains(exporter, views) {
		t.Errorf("cmd/pteexport imports %s (directly or not): the exporter formats library values, it needs no view", views)
	}
	if !slices.Contains(exporter, failure) {
		t.Errorf("cmd/pteexport does not import %s: where does its --json failure object come from?", failure)
	}
	if !slices.Contains(deps(t, "cmd/pteinspect"), views) {
		t.Errorf("cmd/pteinspect does not reach %s: the check above means nothing", views)
	}
}
