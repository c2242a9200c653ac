package compilespec

import (
	"errors"
	"testing"
)

func TestTargetDevice(t *testing.T) {
	for _, i := range []int{0, 3, MaxDeviceIndex} {
		v, err := EncodeTargetDevice(i)
		if err != nil {
			t.Fatalf("EncodeTargetDevice(%d): %v", i, err)
		}
		if typ, back, err := ParseTargetDevice(v); err != nil || typ != DeviceCUDA || back != i {
			t.Errorf("ParseTargetDevice(EncodeTargetDevice(%d) = %q) = %q, %d, %v", i, v, typ, back, err)
		}
	}
	for _, i := range []int{-1, MaxDeviceIndex + 1, 256, -129} {
		var te *TargetDeviceError
		if v, err := EncodeTargetDevice(i); !errors.As(err, &te) || v != nil {
			t.Errorf("EncodeTargetDevice(%d) = %q, %v; want a *TargetDeviceError", i, v, err)
		}
	}
	tests := []struct {
		in    string
		typ   string
		index int
		bad   bool
	}{
		{"cuda:0", DeviceCUDA, 0, false},
		{"cuda:1", DeviceCUDA, 1, false},
		{" CUDA:2\n", DeviceCUDA, 2, false},
		{"cuda: 3 ", DeviceCUDA, 3, false},
		{"cuda:+4", DeviceCUDA, 4, false},
		{"cuda:1_0", DeviceCUDA, 10, false},
		{"cuda:127", DeviceCUDA, 127, false},
		{"cuda:-0", DeviceCUDA, 0, false},
		{"cuda:-1", "", 0, true},  // names no device
		{"cuda:128", "", 0, true}, // does not fit the int8 device_index
		{"cuda:256", "", 0, true},
		{"cpu:-1", "", 0, true},
		{"cuda:99999999999999999999", "", 0, true},
		{"cuda", DeviceCUDA, 0, false}, // the pass reads no ':' as index 0
		{"cpu", DeviceCPU, 0, false},
		{"\u00a0cpu:0", DeviceCPU, 0, false},
		{"gpu:0", "", 0, true},
		{"cuda :0", "", 0, true},
		{"cuda:", "", 0, true},
		{"cuda:x", "", 0, true},
		{"cuda:1:2", "", 0, true},
		{"cuda:1__0", "", 0, true},
		{"cuda:_1", "", 0, true},
		{"cuda:0x1", "", 0, true},
		{"cuda:\xff", "", 0, true},
		{"", "", 0, true},
	}
	for _, tc := range tests {
		typ, idx, err := ParseTargetDevice([]byte(tc.in))
		if tc.bad {
			var te *TargetDeviceError
			if !errors.As(err, &te) {
				t.Errorf("ParseTargetDevice(%q) = %q, %d, %v; want *TargetDeviceError", tc.in, typ, idx, err)
			}
			continue
		}
		if err != nil || typ != tc.typ || idx != tc.index {
			t.Errorf("ParseTargetDevice(%q) = %q, %d, %v; want %q, %d", tc.in, typ, idx, err, tc.typ, tc.index)
		}
	}
}

func TestCheckTargetDevice(t *testing.T) {
	if err := CheckTargetDevice([]byte("cuda:1"), 1); err != nil {
		t.Errorf("matching device: %v", err)
	}
	if err := CheckTargetDevice([]byte("cuda:0"), 0); err != nil {
		t.Errorf("matching device: %v", err)
	}
	var me *DeviceMismatchError
	if err := CheckTargetDevice([]byte("cuda:1"), 0); !errors.As(err, &me) || me.Index != 1 || me.BlobDeviceID != 0 {
		t.Errorf("cuda:1 vs 0: %v", err)
	}
	if err := CheckTargetDevice([]byte("cpu"), 0); !errors.As(err, &me) || me.DeviceType != DeviceCPU {
		t.Errorf("cpu vs 0: %v", err)
	}
	var te *TargetDeviceError
	if err := CheckTargetDevice([]byte("tpu:0"), 0); !errors.As(err, &te) {
		t.Errorf("tpu:0: %v", err)
	}
	// A negative blob device id matches no pin, not even "cuda:-1".
	if err := CheckTargetDevice([]byte("cuda:-1"), -1); !errors.As(err, &te) {
		t.Errorf("cuda:-1 vs -1: %v", err)
	}
	if err := CheckTargetDevice([]byte("cuda:0"), -1); !errors.As(err, &me) {
		t.Errorf("cuda:0 vs -1: %v", err)
	}
}
