package compilespec

import (
	"errors"
	"reflect"
	"testing"

	"github.com/ptekit/ptekit/pte"
)

func specs(kv ...string) []*pte.CompileSpec {
	var out []*pte.CompileSpec
	for i := 0; i < len(kv); i += 2 {
		out = append(out, &pte.CompileSpec{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return out
}

func TestGetFind(t *testing.T) {
	s := specs("a", "1", KeyWeightStreamingBudget, "1024", KeyTargetDevice, "cuda:0", KeyWeightStreamingBudget, "2048")
	if got := Find(s, KeyWeightStreamingBudget); !reflect.DeepEqual(got, []int{1, 3}) {
		t.Errorf("Find = %v", got)
	}
	v, ok, err := Get(s, KeyTargetDevice)
	if err != nil || !ok || string(v) != "cuda:0" {
		t.Errorf("Get(target_device) = %q, %v, %v", v, ok, err)
	}
	v, ok, err = Get(s, KeyWeightStreamingBudget)
	var de *DuplicateKeyError
	if !errors.As(err, &de) || !ok || string(v) != "1024" || !reflect.DeepEqual(de.Indices, []int{1, 3}) {
		t.Errorf("Get(duplicate) = %q, %v, %v", v, ok, err)
	}
	if _, ok, err := Get(s, "missing"); ok || err != nil {
		t.Errorf("Get(missing) = %v, %v", ok, err)
	}
	if got := Find(append(s, &pte.CompileSpec{Key: KeyTargetDevice + "\x00x"}), KeyTargetDevice); !reflect.DeepEqual(got, []int{2, 4}) {
		t.Errorf("Find must compare keys as C strings: %v", got)
	}
	if got := Find(append(s, nil), "a"); !reflect.DeepEqual(got, []int{0}) {
		t.Errorf("Find with nil entry = %v", got)
	}
}

func TestSetDelete(t *testing.T) {
	orig := specs("a", "1", KeyTargetDevice, "cuda:0")
	out := Set(orig, KeyTargetDevice, []byte("cuda:1"))
	if got := string(out[1].Value); got != "cuda:1" || out[1].Key != KeyTargetDevice || len(out) != 2 {
		t.Errorf("Set replaced wrongly: %+v", out)
	}
	if string(orig[1].Value) != "cuda:0" {
		t.Errorf("Set modified its input")
	}
	// Upstream order: the budget goes before target_device.
	out = Set(out, KeyWeightStreamingBudget, []byte("4096"))
	if len(out) != 3 || out[1].Key != KeyWeightStreamingBudget || string(out[1].Value) != "4096" || out[2].Key != KeyTargetDevice {
		t.Errorf("Set budget = %+v; want it before target_device", out)
	}
	if out := Set(specs("a", "1"), KeyWeightStreamingBudget, []byte("1")); len(out) != 2 || out[1].Key != KeyWeightStreamingBudget {
		t.Errorf("Set budget without target_device = %+v; want it at the end", out)
	}
	if out := Set(specs(KeyWeightStreamingBudget, "1"), KeyTargetDevice, []byte("cuda:0")); len(out) != 2 || out[1].Key != KeyTargetDevice {
		t.Errorf("Set target_device = %+v; want it at the end", out)
	}
	if out := Set(nil, "k", nil); len(out) != 1 || out[0].Value == nil {
		t.Errorf("Set(nil, k, nil) = %+v (value must be present, empty)", out)
	}
	// Duplicates, including one the runtime reads through a NUL, collapse
	// into the first position.
	dup := specs("k", "1", "x", "", "k\x00junk", "2")
	if got := Set(dup, "k", []byte("3")); len(got) != 2 || got[0].Key != "k" || string(got[0].Value) != "3" || got[1].Key != "x" {
		t.Errorf("Set on duplicate = %+v", got)
	}
	if len(dup) != 3 || string(dup[0].Value) != "1" {
		t.Errorf("Set modified its input")
	}
	got, n := Delete(dup, "k")
	if n != 2 || len(got) != 1 || got[0].Key != "x" {
		t.Errorf("Delete = %v, %d", got, n)
	}
	if len(dup) != 3 {
		t.Errorf("Delete modified its input")
	}
	withNil := []*pte.CompileSpec{nil, {Key: "k", Value: []byte("1")}, nil, {Key: "j"}}
	if got, n := Delete(withNil, "k"); n != 1 || len(got) != 3 || got[0] != nil || got[1] != nil || got[2].Key != "j" {
		t.Errorf("Delete with nil entries = %v, %d; want the nil entries kept in place", got, n)
	}
	if got, n := Delete(nil, "k"); got != nil || n != 0 {
		t.Errorf("Delete(nil) = %v, %d", got, n)
	}
}

func TestBudget(t *testing.T) {
	for _, tc := range []struct {
		specs []*pte.CompileSpec
		n     int64
		ok    bool
		err   any
	}{
		{specs("a", "1"), 0, false, nil},
		{specs(KeyWeightStreamingBudget, "1024"), 1024, true, nil},
		{specs(KeyWeightStreamingBudget+"\x00x", "7"), 7, true, nil},
		{specs(KeyWeightStreamingBudget, "1", KeyWeightStreamingBudget+"\x00", "2"), 0, true, new(*DuplicateKeyError)},
		{specs(KeyWeightStreamingBudget, "1x"), 0, true, new(*BudgetError)},
	} {
		b, err := SpecBudget(tc.specs)
		n, ok := b.Bytes()
		if err != nil {
			ok = true // present but refused
		}
		if n != tc.n || ok != tc.ok || (tc.err == nil) != (err == nil) || (tc.err != nil && !errors.As(err, tc.err)) {
			t.Errorf("SpecBudget(%v) = %v, %v", tc.specs, b, err)
		}
	}
}

func TestCKeyEqual(t *testing.T) {
	if !CKeyEqual(KeyWeightStreamingBudget+"\x00junk", KeyWeightStreamingBudget) {
		t.Error("NUL-terminated key should match as a C string")
	}
	if CKeyEqual("weight_streaming_budge", KeyWeightStreamingBudget) {
		t.Error("prefix must not match")
	}
}
