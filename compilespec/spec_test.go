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
	if got := Find(append(s, nil), "a"); !reflect.DeepEqual(got, []int{0}) {
		t.Errorf("Find with nil entry = %v", got)
	}
}

func TestSetDelete(t *testing.T) {
	orig := specs("a", "1", KeyTargetDevice, "cuda:0")
	out, err := Set(orig, KeyTargetDevice, []byte("cuda:1"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out[1].Value); got != "cuda:1" || out[1].Key != KeyTargetDevice || len(out) != 2 {
		t.Errorf("Set replaced wrongly: %+v", out)
	}
	if string(orig[1].Value) != "cuda:0" {
		t.Errorf("Set modified its input")
	}
	out, err = Set(out, KeyWeightStreamingBudget, []byte("4096"))
	if err != nil || len(out) != 3 || out[2].Key != KeyWeightStreamingBudget || string(out[2].Value) != "4096" {
		t.Errorf("Set append = %+v, %v", out, err)
	}
	if out, err := Set(nil, "k", nil); err != nil || len(out) != 1 || out[0].Value == nil {
		t.Errorf("Set(nil, k, nil) = %+v, %v (value must be present, empty)", out, err)
	}
	dup := specs("k", "1", "k", "2")
	var de *DuplicateKeyError
	if got, err := Set(dup, "k", []byte("3")); !errors.As(err, &de) || string(got[0].Value) != "1" {
		t.Errorf("Set on duplicate = %v", err)
	}
	got, n := Delete(dup, "k")
	if n != 2 || got == nil || len(got) != 0 {
		t.Errorf("Delete = %v, %d", got, n)
	}
	if len(dup) != 2 {
		t.Errorf("Delete modified its input")
	}
	withNil := []*pte.CompileSpec{nil, {Key: "k", Value: []byte("1")}, nil, {Key: "j"}}
	if got, n := Delete(withNil, "k"); n != 1 || len(got) != 3 || got[0] != nil || got[1] != nil || got[2].Key != "j" {
		t.Errorf("Delete with nil entries = %v, %d; want the nil entries kept in place", got, n)
	}
	if got, n := Delete(nil, "k"); got != nil || n != 0 {
		t.Errorf("Delete(nil) = %v, %d", got, n)
	}
	if de.Error() == "" {
		t.Error("empty error text")
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
