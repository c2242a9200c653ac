package pte_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unsafe"

	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/fbverify"
	"github.com/ptekit/ptekit/pte"
)

// TestSchemaFieldsCarried reads schema/program.fbs and checks that every
// field of every table is carried by the model and by everything derived
// or generated from it (docs/architecture.md, "Adding a schema field"):
//
//   - verifier: the verifier's description (pte/verify_flatbuffer.go) has
//     the field's slot, in schema order, with the right kind and size;
//   - model: the pte model type has the Go field (whose pte.SchemaField
//     is the schema name) of a matching kind and size, and no field the
//     schema does not have (but Absent);
//   - roundtrip: a program with every field set to a non-default value
//     (a vector of tables with a union field has one element per union
//     member) encodes and decodes to the same value (the generated codec,
//     pte/codec_generated.go);
//   - json: inspect's JSON form of that program (its one walker over the
//     model) has a member of the field's schema name with a non-default
//     value, in schema order, and no other member.
func TestSchemaFieldsCarried(t *testing.T) {
	s := parseFBS(t, filepath.Join("..", "schema", "program.fbs"))
	root := s.decls[s.root]
	if root == nil || root.kind != "table" {
		t.Fatalf("root_type %q is not a table of the schema", s.root)
	}
	t.Run("verifier", func(t *testing.T) { checkVerifier(t, s) })
	t.Run("model", func(t *testing.T) { checkModel(t, s) })
	if t.Failed() {
		return // the program below cannot be built
	}
	f := &filler{s: s}
	p := &pte.Program{}
	f.table(root, reflect.ValueOf(p).Elem(), 0)
	t.Run("roundtrip", func(t *testing.T) {
		q, err := pte.EncodeDecode(p)
		if err != nil {
			t.Fatal(err)
		}
		compareTables(t, s, root, reflect.ValueOf(p).Elem(), reflect.ValueOf(q).Elem(), root.name)
	})
	t.Run("json", func(t *testing.T) {
		b, err := json.Marshal(&inspect.Program{Program: p, Hash: false})
		if err != nil {
			t.Fatal(err)
		}
		checkJSON(t, s, root, b, root.name)
	})
}

// modelTypes are the pte model's table types, one per schema table (the
// Go type has the table's name). A new table needs its type here.
var modelTypes = []any{
	pte.Program{}, pte.ExecutionPlan{}, pte.ContainerMetadata{}, pte.EValue{}, pte.Null{}, pte.Int{},
	pte.Bool{}, pte.Double{}, pte.String{}, pte.IntList{}, pte.DoubleList{}, pte.BoolList{},
	pte.TensorList{}, pte.OptionalTensorList{}, pte.Tensor{}, pte.AllocationDetails{},
	pte.ExtraTensorInfo{}, pte.Operator{}, pte.Chain{}, pte.Instruction{}, pte.KernelCall{},
	pte.DelegateCall{}, pte.MoveCall{}, pte.JumpFalseCall{}, pte.FreeCall{}, pte.Frame{},
	pte.FrameList{}, pte.BackendDelegate{}, pte.BackendDelegateDataReference{}, pte.CompileSpec{},
	pte.NonConstBufferDevice{}, pte.Buffer{}, pte.BackendDelegateInlineData{}, pte.DataSegment{},
	pte.SubsegmentOffsets{}, pte.NamedData{},
}

// absentField is the one model field the schema does not have: the
// tables with string fields list their absent strings in it.
const absentField = "Absent"

// goName is the Go name of the field of model table table whose schema
// name (pte.SchemaField: the Go name in snake_case, or its fbs tag) is
// field; "" when none has it.
func goName(table, field string) string {
	rt, ok := modelType(table)
	if !ok {
		return ""
	}
	for i := range rt.NumField() {
		if name, _, ok := pte.SchemaField(rt, i); ok && name == field {
			return rt.Field(i).Name
		}
	}
	return ""
}

func modelType(name string) (reflect.Type, bool) {
	for _, m := range modelTypes {
		if rt := reflect.TypeOf(m); rt.Name() == name {
			return rt, true
		}
	}
	return nil, false
}

// The parsed schema: enough of the FlatBuffers grammar for schema/*.fbs.

type fbsField struct {
	name   string
	typ    string // base type (int, ubyte, string...) or declared name
	vector bool
	align  int // force_align, 0 when none
}

type fbsDecl struct {
	kind    string // table, struct, enum, union
	name    string
	base    string     // enum: underlying type
	fields  []fbsField // table, struct
	members []string   // union: member tables; enum: member names
	values  []int64    // enum: member values
}

type fbsSchema struct {
	decls map[string]*fbsDecl
	order []string // declaration order
	root  string
}

// scalarSizes are the sizes of the FlatBuffers scalar types.
var scalarSizes = map[string]uintptr{
	"bool": 1, "byte": 1, "ubyte": 1, "int8": 1, "uint8": 1,
	"short": 2, "ushort": 2, "int16": 2, "uint16": 2,
	"int": 4, "uint": 4, "int32": 4, "uint32": 4, "float": 4, "float32": 4,
	"long": 8, "ulong": 8, "int64": 8, "uint64": 8, "double": 8, "float64": 8,
}

// parseFBS parses path and the files it includes (relative to its
// directory).
func parseFBS(t *testing.T, path string) *fbsSchema {
	t.Helper()
	s := &fbsSchema{decls: map[string]*fbsDecl{}}
	seen := map[string]bool{}
	var parse func(path string)
	parse = func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		p := &fbsParser{toks: tokenizeFBS(string(src))}
		fail := func(format string, args ...any) {
			t.Fatalf("%s: token %d (%q): %s", path, p.i, p.peek(), fmt.Sprintf(format, args...))
		}
		for p.peek() != "" {
			switch kw := p.next(); kw {
			case "include":
				parse(filepath.Join(filepath.Dir(path), strings.Trim(p.next(), `"`)))
				p.expect(";", fail)
			case "namespace", "file_identifier", "file_extension", "attribute":
				p.next()
				p.expect(";", fail)
			case "root_type":
				s.root = p.next()
				p.expect(";", fail)
			case "enum", "union", "table", "struct":
				d := &fbsDecl{kind: kw, name: p.next()}
				if kw == "enum" {
					p.expect(":", fail)
					d.base = p.next()
				}
				p.skipAttributes()
				p.expect("{", fail)
				if kw == "enum" || kw == "union" {
					p.members(d, fail)
				} else {
					p.fields(d, fail)
				}
				if s.decls[d.name] != nil {
					fail("%s declared twice", d.name)
				}
				s.decls[d.name] = d
				s.order = append(s.order, d.name)
			default:
				fail("unexpected %q", kw)
			}
		}
	}
	parse(path)
	// Every field type must be known.
	for _, name := range s.order {
		for _, f := range s.decls[name].fields {
			if _, ok := scalarSizes[f.typ]; !ok && f.typ != "string" && s.decls[f.typ] == nil {
				t.Fatalf("%s.%s: unknown type %q", name, f.name, f.typ)
			}
		}
	}
	return s
}

type fbsParser struct {
	toks []string
	i    int
}

func (p *fbsParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *fbsParser) next() string {
	tok := p.peek()
	p.i++
	return tok
}

func (p *fbsParser) expect(tok string, fail func(string, ...any)) {
	if p.peek() != tok {
		fail("want %q", tok)
	}
	p.i++
}

// skipAttributes skips a parenthesized attribute list, if any.
func (p *fbsParser) skipAttributes() {
	if p.peek() != "(" {
		return
	}
	for p.peek() != "" && p.next() != ")" {
	}
}

// members reads the "A = 1, B, }" of an enum or union.
func (p *fbsParser) members(d *fbsDecl, fail func(string, ...any)) {
	next := int64(0)
	for p.peek() != "}" {
		if p.peek() == "" {
			fail("unterminated %s", d.name)
		}
		d.members = append(d.members, p.next())
		if p.peek() == "=" {
			p.next()
			v, err := strconv.ParseInt(p.next(), 0, 64)
			if err != nil {
				fail("%s: bad value: %v", d.name, err)
			}
			next = v
		}
		d.values = append(d.values, next)
		next++
		if p.peek() == "," {
			p.next()
		}
	}
	p.next()
}

// fields reads the "name: type = default (attrs);" lines of a table or
// struct.
func (p *fbsParser) fields(d *fbsDecl, fail func(string, ...any)) {
	for p.peek() != "}" {
		if p.peek() == "" {
			fail("unterminated %s", d.name)
		}
		f := fbsField{name: p.next()}
		p.expect(":", fail)
		if p.peek() == "[" {
			p.next()
			f.vector = true
			f.typ = p.next()
			p.expect("]", fail)
		} else {
			f.typ = p.next()
		}
		if p.peek() == "=" {
			p.next()
			p.next()
		}
		if p.peek() == "(" {
			for p.peek() != "" && p.peek() != ")" {
				if p.next() == "force_align" && p.peek() == ":" {
					p.next()
					f.align, _ = strconv.Atoi(p.next())
				}
			}
			p.next()
		}
		p.expect(";", fail)
		d.fields = append(d.fields, f)
	}
	p.next()
}

// tokenizeFBS splits a schema into identifiers, numbers, quoted strings
// and punctuation, dropping comments.
func tokenizeFBS(src string) []string {
	var toks []string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '/' && strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case unicode.IsSpace(rune(c)):
			i++
		case c == '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				j++
			}
			toks = append(toks, src[i:min(j+1, len(src))])
			i = j + 1
		case c == '_' || c == '-' || c == '.' || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c)):
			j := i
			for j < len(src) && (src[j] == '_' || src[j] == '-' || src[j] == '.' ||
				unicode.IsLetter(rune(src[j])) || unicode.IsDigit(rune(src[j]))) {
				j++
			}
			toks = append(toks, src[i:j])
			i = j
		default:
			toks = append(toks, string(c))
			i++
		}
	}
	return toks
}

// kind classifies a field: scalar (scalars and enums), string, table,
// union, vector of scalars, vector of tables.
func (s *fbsSchema) kind(f fbsField) string {
	k := "scalar"
	if f.typ == "string" {
		k = "string"
	} else if d := s.decls[f.typ]; d != nil && d.kind != "enum" {
		k = d.kind
	}
	if f.vector {
		return "[" + k + "]"
	}
	return k
}

// size is the byte size of a scalar or enum type.
func (s *fbsSchema) size(typ string) uintptr {
	if d := s.decls[typ]; d != nil && d.kind == "enum" {
		return scalarSizes[d.base]
	}
	return scalarSizes[typ]
}

// tables returns the schema's tables in declaration order.
func (s *fbsSchema) tables() []*fbsDecl {
	var out []*fbsDecl
	for _, name := range s.order {
		if d := s.decls[name]; d.kind == "table" || d.kind == "struct" {
			out = append(out, d)
		}
	}
	return out
}

// checkVerifier compares each schema table with the verifier's
// description of it, slot by slot.
func checkVerifier(t *testing.T, s *fbsSchema) {
	where := "pte/verify_flatbuffer.go"
	described := map[string]*fbverify.Table{}
	var walk func(*fbverify.Table)
	walk = func(vt *fbverify.Table) {
		if vt == nil || described[vt.Name] != nil {
			return
		}
		described[vt.Name] = vt
		for _, f := range vt.Fields {
			walk(f.Table)
			for _, m := range f.Union {
				walk(m)
			}
		}
	}
	walk(pte.VerifierRoot)
	for _, d := range s.tables() {
		vt := described[d.name]
		if vt == nil {
			t.Errorf("%s: the verifier does not describe this table (%s)", d.name, where)
			continue
		}
		var want []fbverify.Field
		for _, f := range d.fields {
			switch k := s.kind(f); k {
			case "scalar":
				want = append(want, fbverify.Scalar(f.name, uint32(s.size(f.typ))))
			case "string":
				want = append(want, fbverify.String(f.name))
			case "table":
				want = append(want, fbverify.Field{Name: f.name, Kind: fbverify.KindTable, Table: &fbverify.Table{Name: f.typ}})
			case "union":
				var members []*fbverify.Table
				for _, m := range s.decls[f.typ].members {
					members = append(members, &fbverify.Table{Name: m})
				}
				want = append(want, fbverify.UnionType(f.name+"_type"),
					fbverify.Field{Name: f.name, Kind: fbverify.KindUnion, Union: members})
			case "[scalar]":
				want = append(want, fbverify.Vector(f.name, uint32(s.size(f.typ))))
			case "[table]":
				want = append(want, fbverify.TableVector(f.name, &fbverify.Table{Name: f.typ}))
			default:
				t.Errorf("%s.%s: field kind %s is not supported by this test", d.name, f.name, k)
			}
		}
		for i, w := range want {
			if i >= len(vt.Fields) {
				t.Errorf("%s.%s: the verifier has no slot %d for it (%s)", d.name, w.Name, i, where)
				continue
			}
			if g := vt.Fields[i]; !sameSlot(g, w) {
				t.Errorf("%s slot %d: the verifier describes %s, the schema has %s (%s)", d.name, i, slotString(g), slotString(w), where)
			}
		}
		for i := len(want); i < len(vt.Fields); i++ {
			t.Errorf("%s slot %d: the verifier describes %s, which the schema does not have (%s)", d.name, i, slotString(vt.Fields[i]), where)
		}
	}
}

func sameSlot(g, w fbverify.Field) bool {
	return slotString(g) == slotString(w)
}

// slotString names a verifier field with what the comparison looks at:
// the name, the kind, the size and the names of the tables it leads to
// (not whether decoding aliases a byte vector).
func slotString(f fbverify.Field) string {
	s := fmt.Sprintf("%s(kind %d", f.Name, f.Kind)
	if f.Kind == fbverify.KindScalar || f.Kind == fbverify.KindVector {
		s += fmt.Sprintf(", %d bytes", f.Size)
	}
	if f.Table != nil {
		s += ", " + f.Table.Name
	}
	if f.Kind == fbverify.KindUnion {
		var names []string
		for _, m := range f.Union {
			if m != nil {
				names = append(names, m.Name)
			}
		}
		s += ", " + strings.Join(names, "|")
	}
	return s + ")"
}

// checkModel compares each schema table with its pte model type.
func checkModel(t *testing.T, s *fbsSchema) {
	where := "pte/program.go"
	for _, d := range s.tables() {
		rt, ok := modelType(d.name)
		if !ok {
			t.Errorf("%s: no pte model type in modelTypes (add the type to %s and to this test)", d.name, where)
			continue
		}
		mapped := map[string]bool{}
		hasString := false
		for _, f := range d.fields {
			name := goName(d.name, f.name)
			mapped[name] = true
			hasString = hasString || f.typ == "string"
			sf, ok := rt.FieldByName(name)
			if name == "" || !ok {
				t.Errorf("%s.%s: pte.%s has no field of this schema name (the Go name in snake_case, or an fbs tag: pte.SchemaField) (%s)", d.name, f.name, d.name, where)
				continue
			}
			if msg := goFieldMismatch(s, f, sf.Type); msg != "" {
				t.Errorf("%s.%s: pte.%s.%s is %v: %s (%s)", d.name, f.name, d.name, name, sf.Type, msg, where)
			}
		}
		for i := range rt.NumField() {
			sf := rt.Field(i)
			if mapped[sf.Name] {
				continue
			}
			if sf.Name == absentField && hasString && sf.Type == reflect.TypeFor[[]string]() {
				continue
			}
			if sf.Tag.Get("fbs") == "-" { // Program's source of its plans
				continue
			}
			name, _, _ := pte.SchemaField(rt, i)
			t.Errorf("pte.%s.%s (schema name %q: pte.SchemaField) matches no field of schema table %s", d.name, sf.Name, name, d.name)
		}
	}
}

// goFieldMismatch says how Go type gt cannot hold schema field f, or "".
func goFieldMismatch(s *fbsSchema, f fbsField, gt reflect.Type) string {
	k := s.kind(f)
	if f.vector {
		if gt.Kind() != reflect.Slice {
			return "want a slice"
		}
		gt = gt.Elem()
		k = strings.Trim(k, "[]")
	}
	switch k {
	case "scalar":
		switch gt.Kind() {
		case reflect.Bool, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		default:
			return "want a scalar"
		}
		if gt.Size() != s.size(f.typ) {
			return fmt.Sprintf("want %d bytes", s.size(f.typ))
		}
		if d := s.decls[f.typ]; d != nil && gt.Name() != d.name {
			return "want the enum type " + d.name
		}
	case "string":
		if gt.Kind() != reflect.String {
			return "want a string"
		}
	case "table", "struct":
		if gt.Kind() != reflect.Pointer || gt.Elem().Name() != f.typ {
			return "want *" + f.typ
		}
	case "union":
		if gt.Kind() != reflect.Interface {
			return "want an interface"
		}
		for _, m := range s.decls[f.typ].members {
			mt, ok := modelType(m)
			if !ok || !reflect.PointerTo(mt).Implements(gt) {
				return fmt.Sprintf("union member %s has no model type implementing it", m)
			}
		}
	}
	return ""
}

// filler sets every schema field of a model value to a non-default
// value, each scalar a different one where the type allows, so that a
// field written into another's slot shows.
type filler struct {
	s *fbsSchema
	n int
}

// table fills v (a model struct) as table d; member picks the member of
// the table's union fields.
func (f *filler) table(d *fbsDecl, v reflect.Value, member int) {
	for _, fd := range d.fields {
		fv := field(v, goName(d.name, fd.name))
		switch f.s.kind(fd) {
		case "scalar":
			f.scalar(fd.typ, fv)
		case "string":
			f.n++
			fv.SetString("s" + strconv.Itoa(f.n))
		case "table":
			fv.Set(f.newTable(fd.typ, 0))
		case "union":
			u := f.s.decls[fd.typ]
			fv.Set(f.newTable(u.members[member%len(u.members)], 0))
		case "[scalar]":
			s := reflect.MakeSlice(fv.Type(), 1, 1)
			f.scalar(fd.typ, s.Index(0))
			fv.Set(s)
		case "[table]":
			// One element per member of the element's union, if it has one.
			n := 1
			for _, ef := range f.s.decls[fd.typ].fields {
				if f.s.kind(ef) == "union" {
					n = max(n, len(f.s.decls[ef.typ].members))
				}
			}
			s := reflect.MakeSlice(fv.Type(), n, n)
			for i := range n {
				s.Index(i).Set(f.newTable(fd.typ, i))
			}
			fv.Set(s)
		}
	}
}

// field returns field name of the addressable model struct v, settable
// even when unexported (Program's plans, which pte sets with SetPlans).
func field(v reflect.Value, name string) reflect.Value {
	fv := v.FieldByName(name)
	return reflect.NewAt(fv.Type(), unsafe.Pointer(fv.UnsafeAddr())).Elem()
}

func (f *filler) newTable(name string, member int) reflect.Value {
	rt, _ := modelType(name)
	p := reflect.New(rt)
	f.table(f.s.decls[name], p.Elem(), member)
	return p
}

// scalar sets v to a non-default value of schema type typ: an enum's
// non-zero members in turn, otherwise the next count.
func (f *filler) scalar(typ string, v reflect.Value) {
	f.n++
	if d := f.s.decls[typ]; d != nil && d.kind == "enum" {
		var nonZero []int64
		for _, x := range d.values {
			if x != 0 {
				nonZero = append(nonZero, x)
			}
		}
		x := nonZero[f.n%len(nonZero)]
		if v.CanInt() {
			v.SetInt(x)
		} else {
			v.SetUint(uint64(x))
		}
		return
	}
	small := int64(f.n%120 + 1) // fits every type
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int8, reflect.Uint8:
		if v.CanInt() {
			v.SetInt(small)
		} else {
			v.SetUint(uint64(small))
		}
	case reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(f.n))
	case reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.n) + 0.5)
	}
}

// compareTables reports each schema field of table d whose value differs
// between want and got (model structs).
func compareTables(t *testing.T, s *fbsSchema, d *fbsDecl, want, got reflect.Value, path string) {
	for _, fd := range d.fields {
		name := goName(d.name, fd.name)
		w, g := field(want, name), field(got, name)
		p := path + "." + fd.name
		switch s.kind(fd) {
		case "table":
			if g.IsNil() {
				t.Errorf("%s: written, read back absent (pte/codec_generated.go: go generate ./pte)", p)
				continue
			}
			compareTables(t, s, s.decls[fd.typ], w.Elem(), g.Elem(), p)
		case "union":
			if g.IsNil() || g.Elem().Type() != w.Elem().Type() {
				t.Errorf("%s: wrote %v, read back %v (pte/codec_generated.go: go generate ./pte)", p, w.Interface(), g.Interface())
				continue
			}
			compareTables(t, s, s.decls[w.Elem().Elem().Type().Name()], w.Elem().Elem(), g.Elem().Elem(), p+"("+w.Elem().Elem().Type().Name()+")")
		case "[table]":
			if g.Len() != w.Len() {
				t.Errorf("%s: wrote %d tables, read back %d (pte/codec_generated.go: go generate ./pte)", p, w.Len(), g.Len())
				continue
			}
			for i := range w.Len() {
				compareTables(t, s, s.decls[fd.typ], w.Index(i).Elem(), g.Index(i).Elem(), fmt.Sprintf("%s[%d]", p, i))
			}
		default:
			if !reflect.DeepEqual(w.Interface(), g.Interface()) {
				t.Errorf("%s: wrote %v, read back %v (pte/codec_generated.go: go generate ./pte)", p, w.Interface(), g.Interface())
			}
		}
	}
}

// checkJSON checks that raw, the JSON form of a filled table d, has a
// non-default member per schema field, in schema order, and no other
// member.
func checkJSON(t *testing.T, s *fbsSchema, d *fbsDecl, raw json.RawMessage, path string) {
	where := "inspect/program.go, modelWriter"
	obj, keys, err := jsonObject(raw)
	if err != nil {
		t.Errorf("%s: inspect's JSON is not an object: %v (%s)", path, err, where)
		return
	}
	var names []string
	for _, fd := range d.fields {
		p := path + "." + fd.name
		kind := s.kind(fd)
		if kind == "union" {
			names = append(names, fd.name+"_type")
		}
		names = append(names, fd.name)
		rv, ok := obj[fd.name]
		if !ok {
			t.Errorf("%s: inspect's JSON has no member %q (%s)", p, fd.name, where)
			continue
		}
		var v any
		if err := json.Unmarshal(rv, &v); err != nil || isDefaultJSON(v) {
			t.Errorf("%s: inspect's JSON has %s for a non-default value (%s)", p, rv, where)
			continue
		}
		switch kind {
		case "table":
			checkJSON(t, s, s.decls[fd.typ], rv, p)
		case "union":
			var tag string
			_ = json.Unmarshal(obj[fd.name+"_type"], &tag)
			m := s.decls[tag]
			if m == nil || !slices.Contains(s.decls[fd.typ].members, tag) {
				t.Errorf("%s_type: %s names no member of %s (%s)", p, obj[fd.name+"_type"], fd.typ, where)
				continue
			}
			checkJSON(t, s, m, rv, p+"("+tag+")")
		case "[table]":
			var items []json.RawMessage
			_ = json.Unmarshal(rv, &items)
			for i, item := range items {
				checkJSON(t, s, s.decls[fd.typ], item, fmt.Sprintf("%s[%d]", p, i))
			}
		}
	}
	for _, member := range keys {
		if !slices.Contains(names, member) {
			t.Errorf("%s: inspect's JSON has member %q, which schema table %s does not have (%s)", path, member, d.name, where)
		}
	}
	if !slices.Equal(keys, names) && len(keys) == len(names) {
		t.Errorf("%s: inspect's JSON has the members in the order %v, the schema %v (pte/program.go: the model's fields go in schema order)", path, keys, names)
	}
}

// jsonObject splits a JSON object into its members and their order.
func jsonObject(raw json.RawMessage) (map[string]json.RawMessage, []string, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var keys []string
	if _, err := dec.Token(); err != nil { // {
		return nil, nil, err
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, nil, err
		}
	}
	return obj, keys, nil
}

// isDefaultJSON reports whether v is how JSON writes a default or absent
// value.
func isDefaultJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case float64:
		return x == 0
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	}
	return false // an object: tables are checked member by member
}
