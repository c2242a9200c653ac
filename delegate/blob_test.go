package delegate

import "testing"

func TestIsTensorRT(t *testing.T) {
	for id, want := range map[string]bool{
		BackendID: true, BackendID + "\x00x": true, BackendID + "\x00": true,
		"TensorRTBackendX": false, "TensorRT": false, "": false, "XnnpackBackend": false,
	} {
		if got := IsTensorRT(id); got != want {
			t.Errorf("IsTensorRT(%q) = %v, want %v", id, got, want)
		}
	}
}
