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
	separated(t, "cmd/pteinspect", "internal/inplace", "internal/undorecord", "cmd/pteexport",
		"a viewer must not reach the code that applies undo records")

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
	separated(t, "cmd/pteexport", "inspect", "internal/jsonerr", "cmd/pteinspect",
		"the exporter formats library values, it needs no view")
}

// separated checks that cmd reaches none of forbidden's code through any
// import, but does reach instead (what it uses in its place), and that
// contrast does reach forbidden, so that the first check is not vacuous.
// Package paths are relative to the module.
func separated(t *testing.T, cmd, forbidden, instead, contrast, why string) {
	t.Helper()
	forbidden, instead = module+"/"+forbidden, module+"/"+instead
	reached := deps(t, cmd)
	if slices.Contains(reached, forbidden) {
		t.Errorf("%s imports %s (directly or not): %s", cmd, forbidden, why)
	}
	if !slices.Contains(reached, instead) {
		t.Errorf("%s does not import %s, which it should use instead", cmd, instead)
	}
	if !slices.Contains(deps(t, contrast), forbidden) {
		t.Errorf("%s does not reach %s: the check above means nothing", contrast, forbidden)
	}
}
