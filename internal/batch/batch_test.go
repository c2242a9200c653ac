package batch

import "testing"

func TestSet(t *testing.T) {
	if Enabled() {
		t.Fatal("enabled before any Set")
	}
	if was := Set(true); was || !Enabled() {
		t.Fatalf("Set(true) returned %v, Enabled %v", was, Enabled())
	}
	if was := Set(false); !was || Enabled() {
		t.Fatalf("Set(false) returned %v, Enabled %v", was, Enabled())
	}
}
