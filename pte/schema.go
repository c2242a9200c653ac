package pte

import (
	"reflect"
	"strings"
	"unicode"
)

// The model's fields are the schema's, in schema order, so that what
// describes a table's slots to the verifier (schemaTable) and what writes
// a table as JSON (package inspect) are derived from the model type.
// SchemaField names a field as the schema does; a field whose schema name
// is not its Go name in snake_case says so in an `fbs:"name"` tag, and a
// byte vector that is a list of small numbers rather than data (decoded
// as a copy, shown as numbers) is tagged `fbs:",numbers"`.

// SchemaField returns the schema name of field i of the model table type
// t (a struct type of this package) and whether the field is a byte
// vector of numbers (`fbs:",numbers"`). ok is false for a field the schema
// does not have: Absent, and Program's unexported source of its plans
// (tagged `fbs:"-"`).
func SchemaField(t reflect.Type, i int) (name string, numbers, ok bool) {
	sf := t.Field(i)
	if sf.Name == "Absent" || sf.Tag.Get("fbs") == "-" {
		return "", false, false
	}
	name, opts, _ := strings.Cut(sf.Tag.Get("fbs"), ",")
	if name == "" {
		name = snakeCase(sf.Name)
	}
	return name, opts == "numbers", true
}

// snakeCase spells a Go name in snake_case: "ExecutionPlan" is
// "execution_plan", "MemoryID" "memory_id".
func snakeCase(goName string) string {
	var b strings.Builder
	rs := []rune(goName)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]) ||
				i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1])) {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
