package size

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in     string
		want   int64
		auto   bool
		errSub string
	}{
		{"8589934592", 8589934592, false, ""},
		{"0", 0, false, ""},
		{"8GiB", 8 << 30, false, ""},
		{"8 GiB", 8 << 30, false, ""},
		{"  512MiB ", 512 << 20, false, ""},
		{"1.5GiB", 3 << 29, false, ""},
		{"1.5 GiB", 3 << 29, false, ""},
		{"8GB", 8e9, false, ""},
		{"8kB", 8000, false, ""},
		{"8KB", 8000, false, ""},
		{"2KiB", 2048, false, ""},
		{"3TiB", 3 << 40, false, ""},
		{"2TB", 2e12, false, ""},
		{"1PiB", 1 << 50, false, ""},
		{"7B", 7, false, ""},
		{"0.5KiB", 512, false, ""},
		{"1.000GiB", 1 << 30, false, ""},
		{"auto", 0, true, ""},
		{"AUTO", 0, true, ""},
		{"9223372036854775807", math.MaxInt64, false, ""},
		{"9223372036854775808", 0, false, "too large"},
		{"8192PiB", 0, false, "too large"},
		{"8191.99PiB", 0, false, ""}, // whole bytes? checked below
		{"-1", 0, false, "negative"},
		{"-1GiB", 0, false, "negative"},
		{"+1", 0, false, "sign"},
		{"1.5", 0, false, "whole number of bytes"},
		{"1.5B", 0, false, "whole number of bytes"},
		{"0.1KiB", 0, false, "whole number of bytes"},
		{"8Gb", 0, false, `ambiguous unit "Gb": did you mean 8GiB or 8GB?`},
		{"8gb", 0, false, `ambiguous unit "gb": did you mean 8GiB or 8GB?`},
		{"8G", 0, false, `ambiguous unit "G": did you mean 8GiB or 8GB?`},
		{"8g", 0, false, `ambiguous unit "g": did you mean 8GiB or 8GB?`},
		{"8 G", 0, false, `ambiguous unit "G": did you mean 8GiB or 8GB?`},
		{"1.5m", 0, false, `did you mean 1.5MiB or 1.5MB?`},
		{"8b", 0, false, `did you mean 8B?`},
		{"8gib", 8 << 30, false, ""},
		{"8GIB", 8 << 30, false, ""},
		{"8 gIb", 8 << 30, false, ""},
		{"8Gi", 8 << 30, false, ""},
		{"512mi", 512 << 20, false, ""},
		{"1Ki", 1024, false, ""},
		{"2Pi", 2 << 50, false, ""},
		{"8i", 0, false, `unknown unit "i"`},
		{"1e3", 0, false, `unknown unit "e3"`},
		{"1.2.3", 0, false, `unknown unit ".3"`},
		{"", 0, false, "empty"},
		{"GiB", 0, false, "no number"},
		{".5GiB", 0, false, "decimal point"},
		{"5.GiB", 0, false, "decimal point"},
		{"8 GiB x", 0, false, "unknown unit"},
	}
	for _, tc := range tests {
		got, auto, err := Parse(tc.in)
		if tc.in == "8191.99PiB" {
			// 8191.99 PiB = 819199 * 2^50 / 100: 2^50 is divisible by 4 but
			// not by 25, so this is a fraction of a byte.
			if err == nil || !strings.Contains(err.Error(), "whole number") {
				t.Errorf("Parse(%q) = %d, %v; want fractional-byte error", tc.in, got, err)
			}
			continue
		}
		if tc.errSub != "" {
			var se *Error
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.errSub) {
				t.Errorf("Parse(%q) = %d, %v, %v; want error containing %q", tc.in, got, auto, err, tc.errSub)
			} else if !strings.Contains(err.Error(), "accepted:") {
				t.Errorf("Parse(%q) error does not say what is accepted: %v", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want || auto != tc.auto {
			t.Errorf("Parse(%q) = %d, %v, %v; want %d, %v", tc.in, got, auto, err, tc.want, tc.auto)
		}
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{123, "123 B"},
		{1000, "1 KB"},
		{1024, "1 KiB"},
		{1536, "1.5 KiB"},
		{8 << 30, "8 GiB"},
		{3 << 29, "1.5 GiB"},
		{1e9, "1 GB"},
		{1.5e9, "1.5 GB"},
		{1234567, "1234567 B"},
		{1<<30 + 1<<20, "1025 MiB"},
		{(1 << 30) / 8 * 9, "1.125 GiB"},
		{math.MaxInt64, "9223372036854775807 B"},
		{-2048, "-2 KiB"},
	}
	for _, tc := range tests {
		if got := Format(tc.n); got != tc.want {
			t.Errorf("Format(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"8589934592", "8GiB", "512MiB", "1.5GiB", "8GB", "0", "auto", "-1", "1.5",
		"9223372036854775808", "8 Gb", ".5", "1..5KiB", "99999999999999999999999PiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, auto, err := Parse(s)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q): error %T is not *Error", s, err)
			}
			return
		}
		if auto {
			if n != 0 {
				t.Fatalf("Parse(%q): auto with %d bytes", s, n)
			}
			return
		}
		if n < 0 {
			t.Fatalf("Parse(%q) = %d", s, n)
		}
		// The display form reads back as the same number of bytes.
		disp := Format(n)
		back, auto, err := Parse(disp)
		if err != nil || auto || back != n {
			t.Fatalf("Parse(Format(%d) = %q) = %d, %v, %v", n, disp, back, auto, err)
		}
	})
}

// TestParseSizeLongInput: text longer than 64 characters is refused
// without being converted, and the error quotes only its start.
func TestParseLongInput(t *testing.T) {
	ok := "  " + strings.Repeat("0", 62) + "1B  " // 64 characters once trimmed
	if n, _, err := Parse(ok); err != nil || n != 1 {
		t.Fatalf("Parse(%q) = %d, %v; want 1", ok, n, err)
	}
	for _, in := range []string{strings.Repeat("9", 65), strings.Repeat("1", 1<<20) + "GiB", "1" + strings.Repeat("é", 40)} {
		_, _, err := Parse(in)
		var se *Error
		if !errors.As(err, &se) || se.Input != in || !strings.Contains(se.Reason, "longer than 64") {
			t.Fatalf("Parse of %d bytes: %v, want a *Error for length", len(in), err)
		}
		if msg := err.Error(); len(msg) > 600 || !strings.Contains(msg, fmt.Sprintf("(%d bytes)", len(in))) || !utf8.ValidString(msg) {
			t.Errorf("error message of %d bytes does not quote a valid prefix with the length: %.200s", len(msg), msg)
		}
	}
}

func BenchmarkParseSizeLongInput(b *testing.B) {
	in := strings.Repeat("1", 1<<20) + "GiB"
	for b.Loop() {
		Parse(in)
	}
}

func TestFormatApprox(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1536, "1.5 KiB"}, {3 << 30, "3.0 GiB"},
		{math.MaxInt64, "8.0 EiB"}, {-5, "-5 B"},
	} {
		if got := FormatApprox(tc.n); got != tc.want {
			t.Errorf("FormatApprox(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := FormatApprox(uint64(math.MaxUint64)); got != "16.0 EiB" {
		t.Errorf("FormatApprox(MaxUint64) = %q", got)
	}
}

func TestAddSaturates(t *testing.T) {
	for _, tc := range []struct {
		in   []int64
		want int64
	}{
		{nil, 0}, {[]int64{1, 2, 3}, 6},
		{[]int64{5000000000000000000, 5000000000000000000}, math.MaxInt64},
		{[]int64{math.MaxInt64, 1, -1}, math.MaxInt64 - 1},
		{[]int64{math.MinInt64, -1}, math.MinInt64},
	} {
		if got := Add(tc.in...); got != tc.want {
			t.Errorf("Add(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	for n, want := range map[int64]string{
		0:             "0 bytes (0 B)",
		1 << 30:       "1073741824 bytes (1 GiB)",
		1536:          "1536 bytes (1.5 KiB)",
		math.MaxInt64: "9223372036854775807 bytes (about 8.0 EiB)",
		1234567:       "1234567 bytes (about 1.2 MiB)",
	} {
		if got := Describe(n); got != want {
			t.Errorf("Describe(%d) = %q, want %q", n, got, want)
		}
	}
}
