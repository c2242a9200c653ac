package compilespec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ptekit/ptekit/pte"
)

// Well-known compile spec keys.
const (
	// KeyWeightStreamingBudget is the key of the per-engine weight streaming
	// budget read by the TensorRT delegate. Its value is an ASCII decimal
	// byte count; see Budget.Spec and ParseBudget.
	KeyWeightStreamingBudget = "weight_streaming_budget"
	// KeyTargetDevice is the key of the device pin ("cuda:N") read by
	// ExecuTorch's device propagation pass; see ParseTargetDevice.
	KeyTargetDevice = "target_device"
)

// DuplicateKeyError reports that a key occurs more than once in a compile
// spec list where at most one entry was expected.
type DuplicateKeyError struct {
	// Key is the duplicated key.
	Key string
	// Indices are the positions of every entry with the key, in order.
	Indices []int
}

// Error implements error.
func (e *DuplicateKeyError) Error() string {
	// fmt.Sprint(e.Indices) is "[1 4]": "compile_specs[1], [4]".
	return fmt.Sprintf("compilespec: key %q occurs %d times (at compile_specs%s)",
		e.Key, len(e.Indices), strings.ReplaceAll(fmt.Sprint(e.Indices), " ", "], ["))
}

// Find returns the positions of every spec whose key equals key as a C
// string (CKeyEqual: bytes from the first NUL on are ignored, as ExecuTorch's
// C++ backends compare keys with strcmp), in order. Nil entries are skipped.
func Find(specs []*pte.CompileSpec, key string) []int {
	var idx []int
	for i, s := range specs {
		if s != nil && CKeyEqual(s.Key, key) {
			idx = append(idx, i)
		}
	}
	return idx
}

// Get returns the value of the single spec with the given key (compared as
// by Find). ok is false when there is none. When the key occurs more than
// once, Get returns the first value and a *DuplicateKeyError listing every
// occurrence.
func Get(specs []*pte.CompileSpec, key string) (value []byte, ok bool, err error) {
	idx := Find(specs, key)
	switch len(idx) {
	case 0:
		return nil, false, nil
	case 1:
		return specs[idx[0]].Value, true, nil
	default:
		return specs[idx[0]].Value, true, &DuplicateKeyError{Key: key, Indices: idx}
	}
}

// Set returns a copy of specs in which key (compared as by Find) has the
// given value exactly once: the first entry with the key is replaced in
// place and later ones are dropped. An absent key is placed in upstream
// order: weight_streaming_budget goes before the first target_device entry,
// as the Torch-TensorRT exporter writes [caller specs, budget,
// target_device]; any other key (or a budget with no target_device) goes at
// the end. specs and its elements are not modified; the stored value is a
// copy, never nil.
func Set(specs []*pte.CompileSpec, key string, value []byte) []*pte.CompileSpec {
	entry := &pte.CompileSpec{Key: key, Value: append([]byte{}, value...)} // a copy, never nil
	out := make([]*pte.CompileSpec, 0, len(specs)+1)
	placed := false
	for _, s := range specs {
		if s != nil && CKeyEqual(s.Key, key) {
			if !placed {
				out = append(out, entry)
				placed = true
			}
			continue
		}
		out = append(out, s)
	}
	if placed {
		return out
	}
	if CKeyEqual(key, KeyWeightStreamingBudget) {
		if i := slices.IndexFunc(out, func(s *pte.CompileSpec) bool {
			return s != nil && CKeyEqual(s.Key, KeyTargetDevice)
		}); i >= 0 {
			return slices.Insert(out, i, entry)
		}
	}
	return append(out, entry)
}

// Delete returns a copy of specs without any entry whose key equals key
// (compared as by Find), and the number of entries removed. specs is not
// modified. The result is nil only when specs is nil.
func Delete(specs []*pte.CompileSpec, key string) ([]*pte.CompileSpec, int) {
	out := slices.DeleteFunc(slices.Clone(specs), func(s *pte.CompileSpec) bool {
		return s != nil && CKeyEqual(s.Key, key)
	})
	return out, len(specs) - len(out)
}

// CKeyEqual reports whether key equals want when both are compared as C
// strings (strcmp), which is how ExecuTorch backends written in C++ compare
// compile spec keys: bytes from the first NUL on are ignored. A key such as
// "weight_streaming_budget\x00x" therefore matches KeyWeightStreamingBudget,
// in the deployed runtime as in Find, Get, Set and Delete.
func CKeyEqual(key, want string) bool {
	return cString(key) == cString(want)
}

func cString(s string) string {
	s, _, _ = strings.Cut(s, "\x00")
	return s
}
