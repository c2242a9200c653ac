package testkit

import (
	"math"
	"reflect"
	"testing"
)

type node struct {
	Name  string
	v     float64
	Kids  []*node
	Attrs map[string]any
	Val   any
}

// TestDeepEqual: DeepEqual agrees with reflect.DeepEqual on values without
// NaNs, equal and not, and finds values equal that differ only by holding
// NaNs where reflect.DeepEqual does not.
func TestDeepEqual(t *testing.T) {
	mk := func(f float64) *node {
		return &node{Name: "a", v: f, Kids: []*node{{Name: "b", Val: f}}, Attrs: map[string]any{"x": []float64{f, 1}}}
	}
	for _, c := range []struct {
		name string
		a, b any
	}{
		{"same tree", mk(1.5), mk(1.5)},
		{"unexported float differs", &node{v: 1}, &node{v: 2}},
		{"float in an interface differs", mk(1), mk(2)},
		{"nil and empty slice", &node{Kids: nil}, &node{Kids: []*node{}}},
		{"nil and empty map", &node{Attrs: nil}, &node{Attrs: map[string]any{}}},
		{"map key missing", map[string]int{"a": 1}, map[string]int{"b": 1}},
		{"types differ", any(int32(1)), any(int64(1))},
		{"nil pointer", (*node)(nil), &node{}},
		{"negative zero", math.Copysign(0, -1), 0.0},
		{"strings", []string{"a", "b"}, []string{"a", "c"}},
	} {
		if got, want := DeepEqual(c.a, c.b), reflect.DeepEqual(c.a, c.b); got != want {
			t.Errorf("%s: DeepEqual %v, reflect.DeepEqual %v", c.name, got, want)
		}
	}
	nan := math.NaN()
	if reflect.DeepEqual(mk(nan), mk(nan)) || !DeepEqual(mk(nan), mk(nan)) {
		t.Error("two trees holding NaNs in the same places: want reflect.DeepEqual false, DeepEqual true")
	}
	if DeepEqual(mk(nan), mk(1)) {
		t.Error("a NaN equals 1")
	}
	if !DeepEqual(complex(nan, 1), complex(nan, 1)) || DeepEqual(complex(nan, 1), complex(nan, 2)) {
		t.Error("complex numbers with NaN parts")
	}
}
