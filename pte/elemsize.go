package pte

// ElementSize returns the size in bytes of one element of type st, as
// ExecuTorch's elementSize does for every type its runtime knows (including
// the codes the schema leaves out); ok is false for a code it does not know.
// Package ptd uses it for TensorLayout::nbytes.
func ElementSize(st ScalarType) (size uint64, ok bool) {
	if !validScalarType(st) {
		return 0, false
	}
	return elementSizes[st], true
}
