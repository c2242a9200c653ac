package testkit

import (
	"math"
	"reflect"
)

// DeepEqual is reflect.DeepEqual except that a NaN equals a NaN. A decoded
// program keeps the NaNs its file holds (a Double value, a scalar), and
// reflect.DeepEqual, which compares floats with ==, finds two decodes of
// the same bytes different. Like reflect.DeepEqual it tells a nil slice or
// map from an empty one, and reads unexported fields.
func DeepEqual(a, b any) bool {
	return deepEqual(reflect.ValueOf(a), reflect.ValueOf(b))
}

func deepEqual(a, b reflect.Value) bool {
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid()
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		return sameFloat(a.Float(), b.Float())
	case reflect.Complex64, reflect.Complex128:
		x, y := a.Complex(), b.Complex()
		return sameFloat(real(x), real(y)) && sameFloat(imag(x), imag(y))
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		if a.Kind() == reflect.Pointer && a.Pointer() == b.Pointer() {
			return true
		}
		return deepEqual(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !deepEqual(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice, reflect.Array:
		if a.Kind() == reflect.Slice && a.IsNil() != b.IsNil() {
			return false
		}
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !deepEqual(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for it := a.MapRange(); it.Next(); {
			w := b.MapIndex(it.Key())
			if !w.IsValid() || !deepEqual(it.Value(), w) {
				return false
			}
		}
		return true
	case reflect.Func:
		return a.IsNil() && b.IsNil() // as reflect.DeepEqual: only nil funcs are equal
	default: // booleans, numbers and strings by value; channels and unsafe pointers: the same one
		return a.Equal(b)
	}
}

// sameFloat is == with a NaN equal to a NaN.
func sameFloat(x, y float64) bool {
	return x == y || (math.IsNaN(x) && math.IsNaN(y))
}
