package compilespec

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/pte"
)

// decodeSpecs turns fuzz bytes into a spec list: entries separated by 0xff,
// each "key=value" split at the first '=', and a lone 0xfe as a nil entry.
// Keys may hold NUL bytes, which Find compares as C strings.
func decodeSpecs(b []byte) []*pte.CompileSpec {
	var out []*pte.CompileSpec
	for len(b) > 0 {
		var e []byte
		e, b, _ = bytes.Cut(b, []byte{0xff})
		if bytes.Equal(e, []byte{0xfe}) {
			out = append(out, nil)
			continue
		}
		k, v, _ := bytes.Cut(e, []byte{'='})
		out = append(out, &pte.CompileSpec{Key: string(k), Value: v})
	}
	return out
}

// others returns the entries of specs that do not match key, in order.
func others(specs []*pte.CompileSpec, key string) []*pte.CompileSpec {
	return slices.DeleteFunc(slices.Clone(specs), func(s *pte.CompileSpec) bool { return s != nil && CKeyEqual(s.Key, key) })
}

// FuzzSetGetDelete checks the properties of the compile spec list API on
// arbitrary lists and keys (NUL bytes included): after Set, Get returns the
// value once and every other entry keeps its place and order; the key
// replaces its first occurrence in place or goes where upstream puts a new
// key; Delete removes exactly the matching entries; the input list is never
// modified.
func FuzzSetGetDelete(f *testing.F) {
	f.Add([]byte("a=1\xffweight_streaming_budget=1024\xfftarget_device=cuda:0\xffweight_streaming_budget=2048"), KeyWeightStreamingBudget, []byte("7"))
	f.Add([]byte("a=1\xff\xfe\xfftarget_device\x00x=cuda:1"), KeyWeightStreamingBudget+"\x00y", []byte(nil))
	f.Add([]byte("k\x00=1\xffk=2\xff\xfe"), "k\x00\x00z", []byte("v"))
	f.Add([]byte(""), "", []byte(""))
	f.Fuzz(func(t *testing.T, list []byte, key string, value []byte) {
		specs := decodeSpecs(list)
		before := slices.Clone(specs)
		vals := make([][]byte, len(specs))
		for i, s := range specs {
			if s != nil {
				vals[i] = slices.Clone(s.Value)
			}
		}
		unchanged := func(op string) {
			t.Helper()
			if !slices.Equal(specs, before) {
				t.Fatalf("%s modified the input list", op)
			}
			for i, s := range specs {
				if s != nil && (!bytes.Equal(s.Value, vals[i]) || s.Key != before[i].Key) {
					t.Fatalf("%s modified entry %d", op, i)
				}
			}
		}
		found := Find(specs, key)
		rest := others(specs, key)

		out := Set(specs, key, value)
		unchanged("Set")
		got, ok, err := Get(out, key)
		if !ok || err != nil || !bytes.Equal(got, value) || got == nil {
			t.Fatalf("Get after Set(%q, %q) = %q, %v, %v", key, value, got, ok, err)
		}
		if len(value) > 0 && &got[0] == &value[0] {
			t.Fatal("Set stored the caller's slice, not a copy")
		}
		idx := Find(out, key)
		if len(idx) != 1 || !slices.Equal(others(out, key), rest) {
			t.Fatalf("Set(%q): matches at %v, other entries %v, were %v", key, idx, others(out, key), rest)
		}
		want := len(rest) // a new key other than the budget goes at the end
		switch {
		case len(found) > 0:
			want = found[0] // replaced in place: everything before it is kept
		case CKeyEqual(key, KeyWeightStreamingBudget):
			if i := slices.IndexFunc(rest, func(s *pte.CompileSpec) bool { return s != nil && CKeyEqual(s.Key, KeyTargetDevice) }); i >= 0 {
				want = i
			}
		}
		if idx[0] != want {
			t.Fatalf("Set(%q) placed the entry at %d, want %d (found at %v)", key, idx[0], want, found)
		}

		del, n := Delete(specs, key)
		unchanged("Delete")
		if n != len(found) || len(Find(del, key)) != 0 || !slices.Equal(del, rest) || (del == nil) != (specs == nil) {
			t.Fatalf("Delete(%q) = %v, %d; want %v, %d", key, del, n, rest, len(found))
		}
		// A key compared as a C string matches whatever follows its NUL.
		if c, _, _ := strings.Cut(key, "\x00"); !slices.Equal(Find(specs, c), found) {
			t.Fatalf("Find(%q) = %v, Find(%q) = %v", key, found, c, Find(specs, c))
		}
	})
}
