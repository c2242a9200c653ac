package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Packages whose functions a library must not call: they start a process
// or replace this one.
var execCalls = map[string][]string{
	"os":                    {"StartProcess", "Executable"},
	"syscall":               {"ForkExec", "Exec", "StartProcess"},
	"golang.org/x/sys/unix": {"Exec"},
}

// syscallPkgs and rawCalls name the raw system call entry points, whose
// first argument is the trap number.
var syscallPkgs = map[string]bool{"syscall": true, "golang.org/x/sys/unix": true}

var rawCalls = map[string]bool{
	"Syscall": true, "Syscall6": true, "Syscall9": true, "RawSyscall": true, "RawSyscall6": true,
	"SyscallNoError": true, "RawSyscallNoError": true,
}

// auditFile returns what src, a non-test Go file, does that no ptekit
// code may: a raw system call whose trap number is not a named SYS_
// constant of syscall or x/sys/unix (a number, a variable, a table
// lookup: a hand-kept number table); and, outside package main, what
// makes a library start a process behind its caller's back: importing
// os/exec, calling os.StartProcess, os.Executable or an exec system call,
// or naming /proc/self/exe.
func auditFile(name string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	library := f.Name.Name != "main"
	imported := map[string]string{} // local name -> import path
	var found []string
	report := func(n ast.Node, format string, args ...any) {
		found = append(found, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), fmt.Sprintf(format, args...)))
	}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		local := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			local = imp.Name.Name
		}
		imported[local] = path
		if library && path == "os/exec" {
			report(imp, "a library package imports os/exec")
		}
	}
	// pkgFunc returns the import path and name of a call to pkg.Func.
	pkgFunc := func(e ast.Expr) (string, string, bool) {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return "", "", false
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return "", "", false
		}
		path, ok := imported[id.Name]
		return path, sel.Sel.Name, ok
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if library && n.Kind == token.STRING && strings.Contains(n.Value, "/proc/self/exe") {
				report(n, "a library package names /proc/self/exe")
			}
		case *ast.SelectorExpr:
			// A reference, called or not (a function value runs as well).
			if path, fn, ok := pkgFunc(n); ok && library {
				for _, bad := range execCalls[path] {
					if fn == bad {
						report(n, "a library package uses %s.%s", path, fn)
					}
				}
			}
		case *ast.CallExpr:
			path, fn, ok := pkgFunc(n.Fun)
			if !ok || !syscallPkgs[path] || !rawCalls[fn] || len(n.Args) == 0 {
				return true
			}
			if tp, trap, ok := pkgFunc(n.Args[0]); !ok || !syscallPkgs[tp] || !strings.HasPrefix(trap, "SYS_") {
				report(n, "%s.%s with a trap number that is not a SYS_ constant of syscall or x/sys/unix", path, fn)
			}
		}
		return true
	})
	return found, nil
}

// TestNoHiddenProcessesOrTrapNumbers audits every non-test Go file of the
// module with auditFile. The test helpers (internal/testkit,
// internal/testprog), which only tests link, may run programs.
func TestNoHiddenProcessesOrTrapNumbers(t *testing.T) {
	root := filepath.Join("..", "..")
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if name := d.Name(); rel != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || matchAny(testOnly, filepath.ToSlash(filepath.Dir(rel))) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		found, err := auditFile(rel, src)
		if err != nil {
			return err
		}
		for _, f := range found {
			t.Error(f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("audited only %d files: is the walk rooted at the module?", files)
	}
}

// TestAuditFile checks that auditFile finds what it is meant to find, and
// only that.
func TestAuditFile(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      int // findings
	}{
		{"clean", `package p; import "golang.org/x/sys/unix"; func f(fd int) { unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED) }`, 0},
		{"named trap", `package p; import "syscall"; func f() { syscall.Syscall(syscall.SYS_FCNTL, 0, 0, 0) }`, 0},
		{"unix named trap", `package p; import "golang.org/x/sys/unix"; func f() { unix.RawSyscall(unix.SYS_GETPID, 0, 0, 0) }`, 0},
		{"literal trap", `package p; import "syscall"; func f() { syscall.Syscall6(221, 0, 0, 0, 4, 0, 0) }`, 1},
		{"table trap", `package p; import "syscall"; var trap = map[string]uintptr{"amd64": 326}["amd64"]; func f() { syscall.Syscall6(trap, 0, 0, 0, 0, 0, 0) }`, 1},
		{"renamed import", `package p; import sc "syscall"; func f() { sc.RawSyscall(39, 0, 0, 0) }`, 1},
		{"trap in main", `package main; import "syscall"; func main() { syscall.Syscall(247, 0, 0, 0) }`, 1},
		{"os/exec in a library", `package p; import "os/exec"; func f() { exec.Command("true").Run() }`, 1},
		{"os/exec in main", `package main; import "os/exec"; func main() { exec.Command("true").Run() }`, 0},
		{"self exe", `package p; var exe = "/proc/self/exe"`, 1},
		{"self exe in main", `package main; var exe = "/proc/self/exe"; func main() {}`, 0},
		{"executable", `package p; import "os"; func f() { os.Executable() }`, 1},
		{"start process", `package p; import "os"; var start = os.StartProcess`, 1},
		{"fork exec", `package p; import "syscall"; func f() { syscall.ForkExec("/bin/true", nil, nil) }`, 1},
		{"other os calls", `package p; import "os"; func f() { os.Getpid(); _ = os.Args }`, 0},
	} {
		found, err := auditFile(c.name+".go", []byte(c.src))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(found) != c.want {
			t.Errorf("%s: %d findings %q, want %d", c.name, len(found), found, c.want)
		}
	}
}
