package inspect

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/pte"
)

func TestDiff(t *testing.T) {
	a := json.RawMessage(`{"x":1,"y":[1,2,3],"z":{"s":"a","n":null},"big":18446744073709551615,"f":1.0}`)
	b := json.RawMessage(`{"f":1,"y":[1,5],"x":1,"z":{"s":"b","n":null,"extra":true},"big":18446744073709551614}`)
	got, err := Diff(a, b)
	require.NoError(t, err)
	var lines []string
	for _, d := range got {
		lines = append(lines, d.String())
	}
	assert.Equal(t, []string{
		"y[1]: 2 -> 5",
		"y[2]: 3 -> (absent)",
		`z.s: "a" -> "b"`,
		"z.extra: (absent) -> true",
		"big: 18446744073709551615 -> 18446744073709551614",
	}, lines)

	html, err := Diff(json.RawMessage(`{"k":"<a&b>"}`), json.RawMessage(`{"k":"x"}`))
	require.NoError(t, err)
	assert.Equal(t, `k: "<a&b>" -> "x"`, html[0].String())

	same, err := Diff(a, a)
	require.NoError(t, err)
	assert.Empty(t, same)
}

func TestDiffKindChangeAndLongValues(t *testing.T) {
	long := make([]int, 100)
	got, err := Diff(map[string]any{"v": nil}, map[string]any{"v": long})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "v", got[0].Path)
	assert.Equal(t, "null", string(got[0].A))
	s := got[0].String()
	assert.Contains(t, s, "v: null -> [0,0,")
	assert.Contains(t, s, "...")
	assert.Less(t, len(s), 100)
}

func TestDiffRejectsBadJSON(t *testing.T) {
	_, err := Diff(json.RawMessage(`{"a":`), json.RawMessage(`{}`))
	assert.Error(t, err)
	_, err = Diff(json.RawMessage(`{}`), json.RawMessage(`{} {}`))
	assert.Error(t, err)
}

func TestDifferenceStringShowsWhereLongValuesDiffer(t *testing.T) {
	long := func(c string) string { return `"` + strings.Repeat("x", 100) + c + strings.Repeat("y", 50) + `"` }
	d := Difference{Path: "p", A: json.RawMessage(long("A")), B: json.RawMessage(long("B"))}
	s := d.String()
	assert.Regexp(t, `^p: \.\.\.x+Ay+\.\.\. -> \.\.\.x+By+\.\.\.$`, s)
	assert.Less(t, len(s), 2*shortLen+12)

	// Cuts fall between characters.
	e := strings.Repeat("é", 60)
	for _, d := range []Difference{
		{Path: "q", A: json.RawMessage(`"` + e + `a"`), B: json.RawMessage(`"` + e + `b"`)},
		{Path: "q", A: json.RawMessage(`"` + e + `"`)},
	} {
		s := d.String()
		assert.True(t, utf8.ValidString(s), "%q", s)
		assert.Contains(t, s, "...")
	}
}

// TestModelNodeIsTheJSONForm: what the diff compares of a model value (its
// node, opened all the way down) is its JSON form, as modelWriter writes
// it, with hashing or without; and the value compares the same as itself.
func TestModelNodeIsTheJSONForm(t *testing.T) {
	for _, hash := range []bool{false, true} {
		p := everyKind()
		w := &modelWriter{hash: hash}
		w.value(reflect.ValueOf(p), false)
		assert.Equal(t, string(w.buf), string(w.model(reflect.ValueOf(p), false).raw()))
		plan := func(p *pte.Program) *node { return w.model(reflect.ValueOf(p.Plan(0)), false) }
		assert.True(t, sameModel(plan(p), plan(everyKind())))
		other := everyKind()
		other.Plan(0).Chains[0].Instructions[0] = &pte.Instruction{Args: &pte.FreeCall{ValueIndex: 7}}
		assert.False(t, sameModel(plan(p), plan(other)))
	}
}

// TestDiffModelListOfTables: a list of model tables is compared table by
// table, never as a short list of scalars, though its tables are not yet
// opened when the walk looks at the list.
func TestDiffModelListOfTables(t *testing.T) {
	w := &modelWriter{}
	segs := func(last uint64) *node {
		return w.model(reflect.ValueOf([]*pte.SubsegmentOffsets{{SegmentIndex: 1, Offsets: []uint64{0, 0, last}}}), false)
	}
	d := differ{compact: true}
	d.walk("m", segs(400), segs(200))
	assert.Equal(t, []Difference{{Path: "m[0].offsets", Kind: Changed, A: json.RawMessage("[0,0,400]"), B: json.RawMessage("[0,0,200]")}}, d.out)
}
