package inspect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// buildShared returns the hashed document of a test program (see
// openSource).
func buildShared(t *testing.T, sub string) *Document {
	t.Helper()
	doc, err := Build(openSource(t, sub), &Options{Hash: true})
	require.NoError(t, err)
	return doc
}

// variant opens a test program (see openSource), lets edit change its
// program and segment payloads, writes the result to memory and returns its
// hashed document.
func variant(t *testing.T, sub string, edit func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader) *Document {
	t.Helper()
	f := openSource(t, sub)
	segs, err := f.SegmentReaders()
	require.NoError(t, err)
	segs = edit(f.Program, segs)
	var buf bytes.Buffer
	_, err = pte.Write(&buf, f.Program, segs, nil)
	require.NoError(t, err)
	nf, err := pte.NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	doc, err := Build(nf, &Options{Hash: true})
	require.NoError(t, err)
	return doc
}

func diffLines(t *testing.T, a, b *Document, opts *DiffOptions) []string {
	t.Helper()
	diffs, err := DiffDocuments(a, b, opts)
	require.NoError(t, err)
	lines := []string{}
	for _, d := range diffs {
		lines = append(lines, d.String())
	}
	return lines
}

func keep(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader { return segs }

// TestDiffDocumentsIgnoresLayout: a program written again (with another
// segment alignment, so that every offset moves) is structurally equal to
// the original; only Layout shows the moves.
func TestDiffDocumentsIgnoresLayout(t *testing.T) {
	subs := []string{"two_methods", "aligned_4096", "inline"}
	// Every program of the shared corpus too, whatever the tree holds.
	for _, path := range testkit.Glob(t, testkit.SharedDir(t, "corpus"), "*.pte") {
		subs = append(subs, "corpus/"+filepath.Base(path))
	}
	for _, sub := range subs {
		t.Run(filepath.Base(sub), func(t *testing.T) {
			a := buildShared(t, sub)
			if h := a.ExtendedHeader; h != nil && h.Length != 32 {
				// Written again, a shorter header becomes today's 32-byte
				// one, which the diff reports as a change of format.
				t.Skipf("%d-byte extended header", h.Length)
			}
			b := variant(t, sub, keep)
			assert.Empty(t, diffLines(t, a, a, nil))
			assert.Empty(t, diffLines(t, a, b, nil))
		})
	}
	a := buildShared(t, "aligned_4096")
	b := variant(t, "aligned_4096", keep)
	lines := diffLines(t, a, b, &DiffOptions{Layout: true})
	// Written again with the default alignment, the segments move from
	// 4096 to right after the program.
	require.NotNil(t, b.ExtendedHeader)
	base := fmt.Sprint(b.ExtendedHeader.SegmentBaseOffset)
	require.NotEqual(t, "4096", base)
	assert.Contains(t, lines, "extended_header.segment_base_offset: 4096 -> "+base)
	assert.Contains(t, lines, "segments[1].file_offset: 4096 -> "+base)
	for _, l := range lines {
		assert.Regexp(t, `^(file\.size|extended_header\.(program_size|segment_base_offset|segment_data_size)|segments\[\d\]\.(offset|file_offset)): \d+ -> \d+$`, l)
	}
}

func TestDiffDocumentsBudgetByKey(t *testing.T) {
	const sub = "two_methods"
	a := buildShared(t, sub)
	b := variant(t, sub, func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
		for _, ep := range p.Plans() {
			d := ep.Delegates[0]
			// Insert the budget first and move target_device after it.
			specs := []*pte.CompileSpec{}
			for _, cs := range d.CompileSpecs {
				if cs.Key != "weight_streaming_budget" {
					specs = append(specs, cs)
				}
			}
			d.CompileSpecs = append([]*pte.CompileSpec{{Key: "weight_streaming_budget", Value: []byte("4294967296")}}, specs...)
		}
		return segs
	})
	assert.Equal(t, []string{
		`methods[prefill].delegates[0].compile_specs[weight_streaming_budget]: "1048576" -> "4294967296"`,
		`methods[decode].delegates[0].compile_specs[weight_streaming_budget]: "262144" -> "4294967296"`,
	}, diffLines(t, a, b, nil))

	diffs, err := DiffDocuments(b, a, nil)
	require.NoError(t, err)
	require.Len(t, diffs, 2)
	assert.Equal(t, Changed, diffs[0].Kind)
	assert.JSONEq(t, `"4294967296"`, string(diffs[0].A))
}

func TestDiffDocumentsDuplicateAndBinarySpecs(t *testing.T) {
	const sub = "budget_twice"
	a := buildShared(t, sub)
	b := variant(t, sub, func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
		d := p.Plan(0).Delegates[0]
		var specs []*pte.CompileSpec
		seen := false
		for _, cs := range d.CompileSpecs {
			if cs.Key == "weight_streaming_budget" {
				if seen {
					continue
				}
				seen = true
			}
			specs = append(specs, cs)
		}
		d.CompileSpecs = append(specs, &pte.CompileSpec{Key: "opaque]", Value: []byte{0xff, 0x00}})
		return segs
	})
	lines := diffLines(t, a, b, nil)
	require.Len(t, lines, 2, "%q", lines)
	assert.Regexp(t, `^methods\[forward\]\.delegates\[0\]\.compile_specs\[weight_streaming_budget#2\]: "\d+" -> \(absent\)$`, lines[0])
	assert.Equal(t, `methods[forward].delegates[0].compile_specs["opaque]"]: (absent) -> {"hex":"ff00"}`, lines[1])
}

func TestDiffDocumentsMethods(t *testing.T) {
	const sub = "two_methods"
	a := buildShared(t, sub)

	renamed := variant(t, sub, func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
		p.Plan(1).Name = "generate"
		return segs
	})
	assert.Equal(t, []string{`methods[decode].name: "decode" -> "generate"`}, diffLines(t, a, renamed, nil))

	// A rename together with another change is a removal and an addition.
	changed := variant(t, sub, func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
		p.Plan(1).Name = "generate"
		p.Plan(1).NonConstBufferSizes = append(p.Plan(1).NonConstBufferSizes, 64)
		return segs
	})
	diffs, err := DiffDocuments(a, changed, nil)
	require.NoError(t, err)
	var paths []string
	for _, d := range diffs {
		paths = append(paths, d.Path+" "+string(d.Kind))
	}
	assert.Equal(t, []string{
		"methods[decode] removed",
		"methods[generate] added",
		"segments[2].used_by changed",
	}, paths)

	// Another method using the same delegate payload.
	added := variant(t, sub, func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
		ep := *p.Plan(0)
		ep.Name = "prefill_long"
		p.SetPlans(append(testprog.Plans(p), &ep))
		return segs
	})
	lines := diffLines(t, a, added, nil)
	require.Len(t, lines, 2, "%q", lines)
	assert.Regexp(t, `^methods\[prefill_long\]: \(absent\) -> \{"name":"prefill_long",`, lines[0])
	assert.Regexp(t, `^segments\[\d\]\.used_by: \["methods\[prefill\]\.delegates\[0\]"\] -> \["methods\[prefill\]\.delegates\[0\]","methods\[prefill_long\]\.delegates\[0\]"\]$`, lines[1])
}

// TestDiffDocumentsPayload: a changed engine byte is one line, the
// delegate's digest, and not also the segment's.
func TestDiffDocumentsPayload(t *testing.T) {
	const sub = "segment"
	a := buildShared(t, sub)
	i := int(*a.Delegates[0].Index)
	b := variant(t, sub, func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
		data, err := io.ReadAll(segs[i])
		require.NoError(t, err)
		data[len(data)-1] ^= 0xff // the last engine byte
		segs[i] = io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
		return segs
	})
	lines := diffLines(t, a, b, nil)
	require.Len(t, lines, 1, "%q", lines)
	assert.Regexp(t, `^methods\[forward\]\.delegates\[0\]\.sha256: "[0-9a-f]{64}" -> "[0-9a-f]{64}"$`, lines[0])

	// A longer engine also changes the sizes the blob header records.
	c := variant(t, sub, func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
		data, err := io.ReadAll(segs[i])
		require.NoError(t, err)
		data = append(data, 0)
		segs[i] = io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
		return segs
	})
	lines = diffLines(t, a, c, nil)
	assert.Contains(t, lines, fmt.Sprintf("methods[forward].delegates[0].size: %d -> %d", *a.Delegates[0].Size, *a.Delegates[0].Size+1))
	for _, l := range lines {
		assert.Regexp(t, `^methods\[forward\]\.delegates\[0\]\.(size|sha256|tensorrt\.)`, l)
	}
}

func TestDiffDocumentsInlineVersusSegment(t *testing.T) {
	a := buildShared(t, "segment")
	b := buildShared(t, "inline")
	assert.Equal(t, []string{
		`extended_header: {"magic":"eh00","length":32} -> null`,
		`methods[forward].delegates[0].location: "SEGMENT" -> "INLINE"`,
		`methods[forward].delegates[0].index: 1 -> 0`,
		`segments[1]: {"used_by":["methods[forward].delegates[0]"]} -> (absent)`,
		`backend_delegate_data[0]: (absent) -> {"used_by":["methods[forward].delegates[0]"]}`,
	}, diffLines(t, a, b, nil))
}

func TestDiffDocumentsValuesAndOperators(t *testing.T) {
	const sub = "segment"
	a := buildShared(t, sub)
	// The first tensor gets a dimension more; the last value, after it,
	// becomes a string.
	tensor := slices.IndexFunc(a.Program.Plan(0).Values, func(v *pte.EValue) bool {
		_, ok := v.Val.(*pte.Tensor)
		return ok
	})
	other := len(a.Program.Plan(0).Values) - 1
	require.True(t, tensor >= 0 && other > tensor, "the test program needs a tensor and a value after it")
	b := variant(t, sub, func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
		ep := p.Plan(0)
		tv := ep.Values[tensor].Val.(*pte.Tensor)
		tv.Sizes = append(append([]int32{}, tv.Sizes...), 7)
		ep.Values[other] = &pte.EValue{Val: &pte.String{StringVal: "x"}}
		ep.Operators = append(ep.Operators, &pte.Operator{Name: "aten::mul", Overload: "out"})
		return segs
	})
	diffs, err := DiffDocuments(a, b, nil)
	require.NoError(t, err)
	require.Len(t, diffs, 3, "%v", diffs)
	assert.Regexp(t, `^methods\[forward\]\.values\[\d+\]\.Tensor\.sizes: \[[0-9,]*\] -> \[[0-9,]*7\]$`, diffs[0].String())
	// A changed union member is one difference, not one per member.
	assert.Regexp(t, `^methods\[forward\]\.values\[\d+\]: \{"\w+":.* -> \{"String":\{"string_val":"x"\}\}$`, diffs[1].String())
	assert.Equal(t, "methods[forward].operators[aten::mul.out]", diffs[2].Path)
	assert.Equal(t, Added, diffs[2].Kind)
	assert.JSONEq(t, `{"name":"aten::mul","overload":"out"}`, string(diffs[2].B))
	assert.Empty(t, diffs[2].A)
}

func TestDiffDocumentsInstructions(t *testing.T) {
	const sub = "two_engines"
	a := buildShared(t, sub)
	b := variant(t, sub, func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
		ch := p.Plan(0).Chains[0]
		ch.Instructions = append(ch.Instructions, &pte.Instruction{Args: &pte.FreeCall{ValueIndex: 0}})
		return segs
	})
	lines := diffLines(t, a, b, nil)
	require.Len(t, lines, 1)
	assert.Regexp(t, `^methods\[forward\]\.chains\[0\]\.instructions\[\d+\]: \(absent\) -> \{"FreeCall":\{"value_index":0\}\}$`, lines[0])
}

func TestDiffDocumentsErrors(t *testing.T) {
	_, err := DiffDocuments(nil, &Document{}, nil)
	assert.Error(t, err)
	_, err = DiffDocuments(&Document{Program: &Program{}}, &Document{}, nil)
	assert.Error(t, err)
}

func TestDiffDocumentsJSON(t *testing.T) {
	a := buildShared(t, "segment")
	b := buildShared(t, "inline")
	diffs, err := DiffDocuments(a, b, nil)
	require.NoError(t, err)
	out, err := json.Marshal(diffs[1])
	require.NoError(t, err)
	assert.JSONEq(t, `{"path":"methods[forward].delegates[0].location","kind":"changed","a":"SEGMENT","b":"INLINE"}`, string(out))
	out, err = json.Marshal(diffs[3])
	require.NoError(t, err)
	assert.JSONEq(t, `{"path":"segments[1]","kind":"removed","a":{"used_by":["methods[forward].delegates[0]"]}}`, string(out))
}

func TestFormatKey(t *testing.T) {
	for in, want := range map[string]string{
		"forward":        "forward",
		"aten::add.out":  "aten::add.out",
		"":               `""`,
		"a b":            `"a b"`,
		"x]":             `"x]"`,
		"\xff":           `"\xff"`,
		"weight#2":       "weight#2",
		"ünïcode":        "ünïcode",
		"new\nline":      `"new\nline"`,
		`quote"d`:        `"quote\"d"`,
		"tab\tseparated": `"tab\tseparated"`,
	} {
		assert.Equal(t, want, formatKey(in), "%q", in)
	}
}

// FuzzDiffDocuments compares whatever two inputs the reader accepts: no
// panic, a document equals itself, and no path is reported twice.
func FuzzDiffDocuments(f *testing.F) {
	addSharedSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		a, err := Build(pf, &Options{Hash: true})
		if _, ok := errors.AsType[*OverlapError](err); ok {
			return // hashing would read the overlapping bytes once for each
		}
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		for _, layout := range []bool{false, true} {
			if d, err := DiffDocuments(a, a, &DiffOptions{Layout: layout}); err != nil || len(d) != 0 {
				t.Fatalf("document differs from itself: %v %v", err, d)
			}
		}
		// The same program without hashes and with its first method renamed.
		b, err := Build(pf, nil)
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		if b.Program.NumPlans() > 0 && b.Program.Plan(0) != nil {
			// A copy: the document shares the File's plans with a.
			ep := *b.Program.Plan(0)
			ep.Name += "'"
			plans := testprog.Plans(b.Program.Program)
			plans[0] = &ep
			b.Program.SetPlans(plans)
		}
		diffs, err := DiffDocuments(a, b, &DiffOptions{Layout: true})
		if err != nil {
			t.Fatalf("DiffDocuments: %v", err)
		}
		seen := map[string]bool{}
		for _, d := range diffs {
			if seen[d.Path] {
				t.Fatalf("path %s reported twice in %v", d.Path, diffs)
			}
			seen[d.Path] = true
		}
	})
}

func TestSetUniqueKeys(t *testing.T) {
	n := newKeyed()
	var got []string
	for _, k := range []string{"a", "a", "a#2", "a", "b"} {
		got = append(got, n.setUnique(k, nil))
	}
	assert.Equal(t, []string{"a", "a#2", "a#2#2", "a#3", "b"}, got)
}

// BenchmarkDiffDocuments compares two builds of the same large program
// (the corpus program with the most methods), the common case of diff.
func BenchmarkDiffDocuments(b *testing.B) {
	f := mostMethods(b)
	x, err := Build(f, &Options{Hash: true})
	require.NoError(b, err)
	y, err := Build(f, &Options{Hash: true})
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if d, err := DiffDocuments(x, y, nil); err != nil || len(d) != 0 {
			b.Fatalf("%v %v", err, d)
		}
	}
}

// mostMethods opens the corpus program with the most methods (the largest
// on a tie), read from the tree rather than named, so that the benchmark
// runs on any corpus.
func mostMethods(b *testing.B) *pte.File {
	b.Helper()
	var best *pte.File
	var bestKey [2]int64
	for _, path := range testkit.Glob(b, testkit.SharedDir(b, "corpus"), "*.pte") {
		f, err := pte.Open(path)
		if err != nil {
			continue // damaged programs are not what this benchmark is about
		}
		st, err := os.Stat(path)
		require.NoError(b, err)
		key := [2]int64{int64(f.Program.NumPlans()), st.Size()}
		if best == nil || key[0] > bestKey[0] || key[0] == bestKey[0] && key[1] > bestKey[1] {
			if best != nil {
				best.Close()
			}
			best, bestKey = f, key
			continue
		}
		f.Close()
	}
	require.NotNil(b, best, "no corpus program opens")
	b.Cleanup(func() { best.Close() })
	return best
}

// fullDiff is DiffDocuments with every view opened in full before the
// walk, so without comparing model values by value: the reference the
// walk that opens them only where they differ must agree with.
func fullDiff(t *testing.T, a, b *Document) []Difference {
	t.Helper()
	va, err := newViewer(a, false)
	require.NoError(t, err)
	vb, err := newViewer(b, false)
	require.NoError(t, err)
	matchRenames(va, vb)
	var full func(n *node) *node
	full = func(n *node) *node {
		n = n.open()
		for k, m := range n.obj {
			n.obj[k] = full(m)
		}
		for i, e := range n.arr {
			n.arr[i] = full(e)
		}
		return n
	}
	d := differ{compact: true}
	d.walk("", full(va.root()), full(vb.root()))
	return d.out
}

// TestDiffDocumentsSamePlanShortcut: comparing the model values of two
// methods by value, and opening them only where they differ (for methods
// whose plans agree but for their delegates, the delegates alone), finds
// what the full comparison finds, in the same order, whether the
// delegates, the plans or both differ.
func TestDiffDocumentsSamePlanShortcut(t *testing.T) {
	const sub = "two_methods"
	budget := func() *Document {
		return variant(t, sub, func(p *pte.Program, segs []*io.SectionReader) []*io.SectionReader {
			for _, ep := range p.Plans() {
				ep.Delegates[0].CompileSpecs = append(ep.Delegates[0].CompileSpecs, &pte.CompileSpec{Key: "x", Value: []byte("1")})
			}
			return segs
		})
	}
	cases := map[string]func() (*Document, *Document){
		"compile specs": func() (*Document, *Document) { return buildShared(t, sub), budget() },
		"delegates gone": func() (*Document, *Document) {
			b := buildShared(t, sub)
			b.Program.Plan(0).Delegates = nil
			return buildShared(t, sub), b
		},
		"plan and delegates": func() (*Document, *Document) {
			b := budget()
			b.Program.Plan(1).Inputs = append(b.Program.Plan(1).Inputs, 0)
			return buildShared(t, sub), b
		},
	}
	for name, docs := range cases {
		t.Run(name, func(t *testing.T) {
			a, b := docs()
			got, err := DiffDocuments(a, b, nil)
			require.NoError(t, err)
			require.NotEmpty(t, got)
			assert.Equal(t, fullDiff(t, a, b), got)
			got, err = DiffDocuments(b, a, nil)
			require.NoError(t, err)
			assert.Equal(t, fullDiff(t, b, a), got)
		})
	}
}
