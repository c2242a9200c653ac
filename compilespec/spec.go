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
	// byte count; see FormatBudget and ParseBudget.
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
	idx := make([]string, len(e.Indices))
	for i, n := range e.Indices {
		idx[i] = fmt.Sprint(n)
	}
	return fmt.Sprintf("compilespec: key %q occurs %d times (at compile_specs[%s])",
		e.Key, len(e.Indices), strings.Join(idx, "], ["))
}

// Find returns the positions of every spec whose key equals key, in order.
// Nil entries are skipped. The comparison is exact (byte for byte).
func Find(specs []*pte.CompileSpec, key string) []int {
	var idx []int
	for i, s := range specs {
		if s != nil && s.Key == key {
			idx = append(idx, i)
		}
	}
	return idx
}

// Get returns the value of the single spec with the given key. ok is false
// when there is none. When the key occurs more than once, Get returns the
// first value and a *DuplicateKeyError listing every occurrence.
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

// Set returns a copy of specs in which the single entry with the given key
// has the given value, appending a new entry at the end when the key is
// absent. An existing entry keeps its position. specs and its elements are
// not modified. When the key occurs more than once Set changes nothing and
// returns a *DuplicateKeyError: the caller must decide which entries to keep
// (Delete removes all of them).
func Set(specs []*pte.CompileSpec, key string, value []byte) ([]*pte.CompileSpec, error) {
	idx := Find(specs, key)
	if len(idx) > 1 {
		return specs, &DuplicateKeyError{Key: key, Indices: idx}
	}
	out := slices.Clone(specs)
	entry := &pte.CompileSpec{Key: key, Value: slices.Clone(value)}
	if entry.Value == nil {
		entry.Value = []byte{}
	}
	if len(idx) == 1 {
		out[idx[0]] = entry
	} else {
		out = append(out, entry)
	}
	return out, nil
}

// Delete returns a copy of specs without any entry whose key equals key, and
// the number of entries removed. specs is not modified. The result is nil
// only when specs is nil.
func Delete(specs []*pte.CompileSpec, key string) ([]*pte.CompileSpec, int) {
	if specs == nil {
		return nil, 0
	}
	out := make([]*pte.CompileSpec, 0, len(specs))
	for _, s := range specs {
		if s != nil && s.Key == key {
			continue
		}
		out = append(out, s)
	}
	return out, len(specs) - len(out)
}

// CKeyEqual reports whether key equals want when both are compared as C
// strings (strcmp), which is how ExecuTorch backends written in C++ compare
// compile spec keys: bytes from the first NUL on are ignored. A key such as
// "weight_streaming_budget\x00x" therefore matches KeyWeightStreamingBudget
// in the deployed runtime although Find does not match it.
func CKeyEqual(key, want string) bool {
	return cString(key) == cString(want)
}

func cString(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}
