package executor

import "testing"

// ExecuTorch compares backend ids as C strings, so an id with an embedded
// NUL reaches the backend named by its prefix; without the NUL rule this
// lookup fails.
func TestRegistryBackendIDIsACString(t *testing.T) {
	var r Registry
	be := NewTensorRTBackend(nil)
	if err := r.RegisterBackend(TensorRTBackendID, be); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"TensorRTBackend", "TensorRTBackend\x00x", "TensorRTBackend\x00"} {
		if got, ok := r.Backend(id); !ok || got != be {
			t.Errorf("Backend(%q) = %v, %v; want the TensorRT backend", id, got, ok)
		}
	}
	if _, ok := r.Backend("TensorRTBackendX"); ok {
		t.Error(`Backend("TensorRTBackendX") found a backend`)
	}
}
