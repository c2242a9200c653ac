package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readDoc returns docs/architecture.md.
func readDoc(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}

// drawnName is a package name in the drawing: its row and columns.
type drawnName struct {
	pkg        string // the allowed table's key
	row        int
	start, end int // columns [start, end)
}

// mapDrawing is what the drawing of docs/architecture.md says: the packages
// it places, row by row, the arrows it draws (importer above, imported
// below) and the packages it names as drawn beside it.
type mapDrawing struct {
	names  []drawnName
	arrows [][2]string
	beside []string
}

// parseDrawing reads the first fenced block of doc. Each line is the
// drawing, then optionally "#" and a comment. A word of the drawing is a
// package name (internal/fbs/... for the generated packages); the
// characters |, / and \ standing alone are lines, each running one row
// down (| straight, / one column left, \ one column right) from a package
// to a package; a line may bend where one character meets the next. The
// paragraph after the block that starts "Beside the drawing:" names, in
// backquotes, the packages the drawing leaves out.
func parseDrawing(doc string) (*mapDrawing, error) {
	_, rest, ok := strings.Cut(doc, "\n```\n")
	if !ok {
		return nil, fmt.Errorf("no fenced drawing")
	}
	block, after, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		return nil, fmt.Errorf("the drawing's fence is not closed")
	}
	m := &mapDrawing{}
	if _, s, ok := strings.Cut(after, "\nBeside the drawing:"); ok {
		s, _, _ = strings.Cut(s, "\n\n")
		for _, n := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(s, -1) {
			m.beside = append(m.beside, n[1])
		}
	}
	var grid [][]rune
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, "#")
		grid = append(grid, []rune(strings.TrimRight(line, " ")))
	}
	at := func(r, c int) rune {
		if r < 0 || r >= len(grid) || c < 0 || c >= len(grid[r]) {
			return ' '
		}
		return grid[r][c]
	}
	isLine := func(r, c int) bool {
		ch := at(r, c)
		return (ch == '|' || ch == '/' || ch == '\\') && at(r, c-1) == ' ' && at(r, c+1) == ' '
	}
	owner := map[[2]int]int{} // cell -> index in m.names
	for r, row := range grid {
		for c := 0; c < len(row); {
			if row[c] == ' ' || isLine(r, c) {
				c++
				continue
			}
			start := c
			for c < len(row) && row[c] != ' ' {
				c++
			}
			name := strings.TrimSuffix(string(row[start:c]), "...")
			key, ok := tableKey(name)
			if !ok {
				return nil, fmt.Errorf("row %d names %q, which is not a package of the table", r+1, name)
			}
			for i := start; i < c; i++ {
				owner[[2]int{r, i}] = len(m.names)
			}
			m.names = append(m.names, drawnName{pkg: key, row: r, start: start, end: c})
		}
	}
	// step is where a line goes from (r, c), dr rows down or up.
	step := func(r, c, dr int) (int, int) {
		switch at(r, c) {
		case '/':
			return r + dr, c - dr
		case '\\':
			return r + dr, c + dr
		}
		return r + dr, c
	}
	// end follows a line from (r, c) up or down to the package it reaches.
	seen := map[[2]int]bool{}
	end := func(r, c, dr int) (int, error) {
		for {
			seen[[2]int{r, c}] = true
			nr, nc := step(r, c, dr)
			if i, ok := owner[[2]int{nr, nc}]; ok {
				return i, nil
			}
			if !isLine(nr, nc) {
				return 0, fmt.Errorf("the line at row %d, column %d leads nowhere", r+1, c+1)
			}
			r, c = nr, nc
		}
	}
	for r, row := range grid {
		for c := range row {
			if !isLine(r, c) || seen[[2]int{r, c}] {
				continue
			}
			up, err := end(r, c, -1)
			if err != nil {
				return nil, err
			}
			down, err := end(r, c, 1)
			if err != nil {
				return nil, err
			}
			a := [2]string{m.names[up].pkg, m.names[down].pkg}
			if !slices.Contains(m.arrows, a) {
				m.arrows = append(m.arrows, a)
			}
		}
	}
	return m, nil
}

// tableKey returns the allowed table's key for a package named in the
// map ("internal/fbs/" for internal/fbs/...).
func tableKey(name string) (string, bool) {
	if _, ok := allowed[name]; ok {
		return name, true
	}
	for k := range allowed {
		if strings.HasSuffix(k, "/") && (name+"/" == k || match(k, name)) {
			return k, true
		}
	}
	return "", false
}

// checkDrawing returns how m disagrees with the allowed table: every
// arrow must be an import the table allows, no package may be allowed to
// import one drawn on its row or above it, and every package of the
// table but the test helpers must be drawn or named beside the drawing.
func checkDrawing(m *mapDrawing) []string {
	var bad []string
	row := map[string]int{}
	for _, n := range m.names {
		if r, ok := row[n.pkg]; ok && r != n.row {
			bad = append(bad, fmt.Sprintf("%s is drawn twice", n.pkg))
		}
		row[n.pkg] = n.row
	}
	for _, a := range m.arrows {
		if imps := allowed[a[0]]; !slices.Contains(imps, anything) && !matchAny(imps, a[1]) {
			bad = append(bad, fmt.Sprintf("the drawing has an arrow %s -> %s, which the table does not allow", a[0], a[1]))
		}
	}
	for from, imps := range allowed {
		for _, to := range imps {
			rf, ok1 := row[from]
			rt, ok2 := row[to]
			if ok1 && ok2 && rt <= rf {
				bad = append(bad, fmt.Sprintf("%s may import %s, which the drawing puts on its row or above it", from, to))
			}
		}
	}
	for pkg := range allowed {
		_, drawn := row[pkg]
		if !drawn && !matchAny(testOnly, pkg) && !slices.ContainsFunc(m.beside, func(b string) bool { k, _ := tableKey(b); return k == pkg }) {
			bad = append(bad, fmt.Sprintf("%s is neither drawn nor named beside the drawing", pkg))
		}
	}
	slices.Sort(bad)
	return bad
}

// TestArchitectureDrawing checks the drawing of docs/architecture.md
// against the table that TestTableMatchesDoc keeps equal to the doc's.
func TestArchitectureDrawing(t *testing.T) {
	m, err := parseDrawing(readDoc(t))
	if err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
	if len(m.names) < 10 || len(m.arrows) < 5 {
		t.Fatalf("the drawing parsed as %d names and %d arrows: %v", len(m.names), len(m.arrows), m.arrows)
	}
	for _, b := range checkDrawing(m) {
		t.Errorf("docs/architecture.md: %s", b)
	}
}

// TestDrawingParser checks parseDrawing and checkDrawing on small maps.
func TestDrawingParser(t *testing.T) {
	all := "\nBeside the drawing:"
	for k := range allowed {
		all += " `" + k + "`"
	}
	all += "\n"
	for _, c := range []struct {
		name, drawing string
		arrows        [][2]string
		bad           int
	}{
		{"straight", "compilespec    # specs\n     |\n    pte\n     |\ninternal/quote\n", [][2]string{{"compilespec", "pte"}, {"pte", "internal/quote"}}, 0},
		{"slants and bends", "compilespec\n  \\\n   |\n   \\\n    pte\n      \\\n     internal/quote\n", [][2]string{{"compilespec", "pte"}, {"pte", "internal/quote"}}, 0},
		{"forbidden arrow", "     pte\n      |\ncompilespec\n      |\ninternal/quote\n", [][2]string{{"pte", "compilespec"}, {"compilespec", "internal/quote"}}, 2},
		{"same row", "compilespec pte internal/quote\n", nil, 3},
	} {
		m, err := parseDrawing("x\n```\n" + c.drawing + "```\n" + all)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !slices.Equal(m.arrows, c.arrows) {
			t.Errorf("%s: arrows %v, want %v", c.name, m.arrows, c.arrows)
		}
		if bad := checkDrawing(m); len(bad) != c.bad {
			t.Errorf("%s: %d findings %q, want %d", c.name, len(bad), bad, c.bad)
		}
	}
	for _, drawing := range []string{"pte\n |\n", "pte\n |\n\n internal/quote\n", "pte/copy\n", "pte\n  /\n"} {
		if _, err := parseDrawing("x\n```\n" + drawing + "```\n"); err == nil {
			t.Errorf("%q: no error", drawing)
		}
	}
}

// goNames are the exported names of one package: top-level declarations,
// and per type its methods and fields.
type goNames struct {
	top     map[string]bool
	members map[string]map[string]bool // type -> methods and fields
}

func (n *goNames) has(name string) bool {
	if n.top[name] {
		return true
	}
	for _, m := range n.members {
		if m[name] {
			return true
		}
	}
	return false
}

// packageNames parses the Go files of the package in dir (its tests too
// when tests is set: internal/archtest has no other code).
func packageNames(dir string, tests bool) (*goNames, error) {
	fset := token.NewFileSet()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	n := &goNames{top: map[string]bool{}, members: map[string]map[string]bool{}}
	member := func(typ, name string) {
		if n.members[typ] == nil {
			n.members[typ] = map[string]bool{}
		}
		n.members[typ][name] = true
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || (!tests && strings.HasSuffix(name, "_test.go")) {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					n.top[d.Name.Name] = true
					continue
				}
				typ := d.Recv.List[0].Type
				if s, ok := typ.(*ast.StarExpr); ok {
					typ = s.X
				}
				if ix, ok := typ.(*ast.IndexExpr); ok {
					typ = ix.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					member(id.Name, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						n.top[s.Name.Name] = true
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fld := range st.Fields.List {
								for _, fn := range fld.Names {
									member(s.Name.Name, fn.Name)
								}
							}
						}
					case *ast.ValueSpec:
						for _, vn := range s.Names {
							n.top[vn.Name] = true
						}
					}
				}
			}
		}
	}
	return n, nil
}

// goIdent is a Go name the map's table may give in backquotes: an
// exported name, a Type.Member, or pkg.Name and pkg.Type.Member for a
// ptekit package; "*T" and "M()" are read as T and M. Constants in
// capitals (TR01, O_TMPFILE) are the formats' and the kernel's, not Go's.
var goIdent = regexp.MustCompile(`^\*?((?:[a-z][a-z0-9]*\.)?[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*(?:\.[A-Z][A-Za-z0-9]*)?)(?:\(\))?$`)

// TestMapNamesExist checks that every Go name the package table of
// docs/architecture.md gives (`pte.File.EncodeHead`, `OpenOptions.LazyPlans`,
// `Plan`) exists in the package whose row names it, or in the ptekit
// package it is qualified with.
func TestMapNamesExist(t *testing.T) {
	root := filepath.Join("..", "..")
	cache := map[string]*goNames{}
	names := func(pkg string) *goNames {
		if n, ok := cache[pkg]; ok {
			return n
		}
		n, err := packageNames(filepath.Join(root, filepath.FromSlash(pkg)), pkg == "internal/archtest")
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		cache[pkg] = n
		return n
	}
	quoted := regexp.MustCompile("`([^`]+)`")
	checked := 0
	for _, line := range strings.Split(readDoc(t), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		var pkgs []string // the row's Go packages
		for _, m := range quoted.FindAllStringSubmatch(cells[1], -1) {
			if p := m[1]; !strings.HasSuffix(p, "/") && !strings.HasSuffix(p, "...") {
				pkgs = append(pkgs, p)
			}
		}
		for _, m := range quoted.FindAllStringSubmatch(cells[2], -1) {
			id := goIdent.FindStringSubmatch(m[1])
			if id == nil {
				continue
			}
			parts := strings.Split(id[1], ".")
			in := pkgs
			if parts[0][0] >= 'a' && parts[0][0] <= 'z' {
				if _, ok := tableKey(parts[0]); !ok {
					continue // another module's name (io.ReaderAt)
				}
				in, parts = []string{parts[0]}, parts[1:]
			}
			found := false
			for _, p := range in {
				n := names(p)
				switch len(parts) {
				case 1:
					found = found || n.has(parts[0])
				case 2:
					found = found || n.members[parts[0]][parts[1]]
				}
			}
			checked++
			if !found {
				t.Errorf("docs/architecture.md, row %s: %s names %q, which %v does not declare", strings.TrimSpace(cells[1]), "the owns column", m[1], in)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d names: has the table's form changed?", checked)
	}
}
