package inspect

import (
	"bytes"
	"encoding/binary"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

// maxSeedSize bounds the fuzz seeds: small inputs keep the fuzzer's
// minimisation fast, so that a crash found late is still reported.
const maxSeedSize = 4 << 10

// seedProgram returns a small file that uses every writable table and union
// member of the schema, with a TensorRT blob inline and another in a
// segment, named data and a constant segment. With nilMembers, a Double
// value and a FreeCall instruction lose their member tables (the tags
// stay), as in a damaged file.
func seedProgram(t testing.TB, nilMembers bool) []byte {
	t.Helper()
	p := everyKind()
	ep := p.Plan(0)
	ep.Values = ep.Values[:len(ep.Values)-1] // no unknown tags: they cannot be written
	ep.Chains[0].Instructions = ep.Chains[0].Instructions[:len(ep.Chains[0].Instructions)-1]
	ep.Values[1].Val.(*pte.Tensor).ScalarType = pte.ScalarTypeINT
	blob := func(aliased bool) []byte {
		m := &delegate.Metadata{IOBindings: []delegate.Binding{{Name: "x", IsInput: true}, {Name: "y"}}}
		if aliased {
			m.AliasedIO = []delegate.AliasedIO{{Output: "y", Input: "x", Kind: delegate.KindUser}}
		}
		var b bytes.Buffer
		_, err := delegate.Encode(&b, m, bytes.NewReader([]byte("engine..")), 8)
		require.NoError(t, err)
		return b.Bytes()
	}
	p.BackendDelegateData[0].Data = blob(false)
	ep.Delegates = append(ep.Delegates, &pte.BackendDelegate{
		ID:           delegate.BackendID,
		Processed:    &pte.BackendDelegateDataReference{Location: pte.DataLocationSEGMENT, Index: 2},
		CompileSpecs: []*pte.CompileSpec{{Key: "weight_streaming_budget", Value: []byte("4096")}, {Key: "v", Value: vtablePlaceholder}},
	})
	p.Segments = nil
	segs := []*io.SectionReader{
		io.NewSectionReader(bytes.NewReader(nil), 0, 0),
		io.NewSectionReader(bytes.NewReader([]byte("named weights")), 0, 13),
		io.NewSectionReader(bytes.NewReader(blob(true)), 0, int64(len(blob(true)))),
	}
	var out bytes.Buffer
	_, err := pte.Write(&out, p, segs, nil)
	require.NoError(t, err)
	require.LessOrEqual(t, out.Len(), maxSeedSize)
	if nilMembers {
		dropUnionMembers(t, out.Bytes())
	}
	return out.Bytes()
}

// vtablePlaceholder is a compile spec value that dropUnionMembers turns
// into a vtable.
var vtablePlaceholder = []byte("vtable")

// dropUnionMembers makes, in a written program, the union members of
// execution_plan[0].values[5] and chains[0].instructions[4] absent while
// their tags stay, as in a damaged file: it writes a vtable holding only
// field 0 (the tag, where their own shared vtable has it) over the bytes of
// the vtablePlaceholder compile spec value, and points both tables at it.
// (Editing their own vtable would not do: every EValue and Instruction
// shares it, and a Tensor value without its table is refused by the
// reader.)
func dropUnionMembers(t testing.TB, b []byte) {
	le := binary.LittleEndian
	vtable := func(table int) int { return table - int(int32(le.Uint32(b[table:]))) }
	field := func(table, id int) int { // position of the field; the fields used here are present
		return table + int(le.Uint16(b[vtable(table)+4+2*id:]))
	}
	deref := func(p int) int { return p + int(le.Uint32(b[p:])) }
	elem := func(vec, i int) int { return deref(vec + 4 + 4*i) }
	plan := elem(deref(field(deref(0), 1)), 0) // Program.execution_plan[0]
	value := elem(deref(field(plan, 2)), 5)    // ExecutionPlan.values[5], a Double
	chain := elem(deref(field(plan, 5)), 0)    // ExecutionPlan.chains[0]
	instr := elem(deref(field(chain, 2)), 4)   // Chain.instructions[4], a FreeCall
	own := vtable(instr)
	require.Equal(t, own, vtable(value), "EValue and Instruction tables share a layout")
	at := bytes.Index(b, vtablePlaceholder)
	require.True(t, at > 0 && at%2 == 0, "placeholder at %d", at)
	le.PutUint16(b[at:], 6)                      // vtable size: one field
	le.PutUint16(b[at+2:], le.Uint16(b[own+2:])) // table size
	le.PutUint16(b[at+4:], le.Uint16(b[own+4:])) // field 0: the tag
	for _, table := range []int{value, instr} {
		le.PutUint32(b[table:], uint32(int32(table-at))) // the table's vtable
	}
}

// TestFuzzBuildSeeds: the committed seeds of FuzzBuild are what
// seedProgram writes; `go test ./inspect -run TestFuzzBuildSeeds
// -update` rewrites them. Build handles both.
func TestFuzzBuildSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzBuild")
	for name, nilMembers := range map[string]bool{"seed_every_kind": false, "seed_nil_members": true} {
		data := seedProgram(t, nilMembers)
		f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
		require.NoError(t, err, name)
		doc, err := Build(f, &Options{Hash: true})
		require.NoError(t, err, name)
		var text []string
		for _, p := range doc.Problems {
			text = append(text, p.String())
		}
		assert.Equal(t, nilMembers, strings.Contains(strings.Join(text, "\n"), "has no table"), "%s: %q", name, text)

		testkit.Golden(t, filepath.Join(dir, name), testkit.FuzzCorpusFile(data))
	}
}
