package export

import (
	"reflect"
	"testing"

	"github.com/ptekit/ptekit/delegate"
)

// TestSameMetadataComparesEveryField changes each field of a metadata
// value in turn, down to its bindings' and aliases' fields, and expects
// sameMetadata to tell the two apart: a field it skipped would give a call
// the blob prefix of another call's metadata (built.prefix).
func TestSameMetadataComparesEveryField(t *testing.T) {
	base := func() *delegate.Metadata {
		return &delegate.Metadata{
			IOBindings: []delegate.Binding{
				{Name: "x", DType: "float16", Shape: []int64{1, 4}, IsInput: true},
				{Name: "y", DType: "float16", Shape: []int64{1, 4}},
			},
			AliasedIO:          []delegate.AliasedIO{{Output: "y", Input: "x", Kind: delegate.KindUser}},
			DeviceID:           1,
			SerializedMetadata: "s",
			TargetPlatform:     "p",
		}
	}
	if !sameMetadata(base(), base()) {
		t.Fatal("two equal metadata values compare different")
	}
	// change sets a different value in v, a field (or element) of a
	// struct, and recurses into structs and slices of structs; path names
	// it.
	var fields int
	var change func(path string, get func(*delegate.Metadata) reflect.Value)
	change = func(path string, get func(*delegate.Metadata) reflect.Value) {
		v := get(base())
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				change(path+"."+v.Type().Field(i).Name, func(m *delegate.Metadata) reflect.Value { return get(m).Field(i) })
			}
			return
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.Struct {
				change(path+"[0]", func(m *delegate.Metadata) reflect.Value { return get(m).Index(0) })
			}
		}
		fields++
		m := base()
		f := get(m)
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Int64:
			f.SetInt(f.Int() + 1)
		case reflect.String:
			f.SetString(f.String() + "z")
		case reflect.Slice:
			if f.Type().Elem().Kind() == reflect.Int64 {
				f.Index(0).SetInt(f.Index(0).Int() + 1)
				if sameMetadata(m, base()) {
					t.Errorf("%s: a changed element compares equal", path)
				}
				m = base()
				f = get(m)
			}
			f.Set(f.Slice(0, f.Len()-1)) // one element fewer
		default:
			t.Fatalf("%s: field of kind %s: teach this test (and sameMetadata) about it", path, f.Kind())
		}
		if sameMetadata(m, base()) || sameMetadata(base(), m) {
			t.Errorf("%s: a changed value compares equal", path)
		}
	}
	change("Metadata", func(m *delegate.Metadata) reflect.Value { return reflect.ValueOf(m).Elem() })
	if fields < 10 {
		t.Errorf("%d fields changed, want every field of Metadata, Binding and AliasedIO", fields)
	}
}

// TestPrefixFollowsMetadataAndSize makes the prefixes of a run of calls
// whose metadata or engine size changes, and of calls that repeat the
// previous one, and compares each with delegate's own.
func TestPrefixFollowsMetadataAndSize(t *testing.T) {
	meta := func(name string) *delegate.Metadata {
		return &delegate.Metadata{IOBindings: []delegate.Binding{{Name: name, IsInput: true}, {Name: "y"}}}
	}
	var b built
	for i, c := range []struct {
		name string
		size int64
	}{{"x", 1024}, {"x", 1024}, {"x", 1025}, {"w", 1025}, {"w", 1025}, {"x", 1024}} {
		got, err := b.prefix(meta(c.name), c.size)
		if err != nil {
			t.Fatal(err)
		}
		want, err := (*delegate.EncodeOptions)(nil).Prefix(meta(c.name), c.size)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("call %d (%s, %d bytes): prefix differs from delegate's", i, c.name, c.size)
		}
	}
	if _, err := b.prefix(meta(""), 1); err == nil {
		t.Error("an empty binding name was not refused")
	}
}
