package quote

import (
	"strings"
	"testing"
)

func TestShortValuesQuotedWhole(t *testing.T) {
	for _, s := range []string{"", "8GiB", strings.Repeat("x", MaxBytes), "a\x00b"} {
		if got, want := String(s), Bytes([]byte(s)); got != want || !strings.HasPrefix(got, `"`) || strings.Contains(got, "...") {
			t.Errorf("String(%q) = %s, Bytes = %s", s, got, want)
		}
	}
}

func TestLongValuesCut(t *testing.T) {
	big := strings.Repeat("é", 1<<19) // 1 MiB, two bytes a rune
	for _, got := range []string{String(big), Bytes([]byte(big))} {
		if len(got) > 3*MaxBytes {
			t.Errorf("quote of 1 MiB is %d bytes", len(got))
		}
		if !strings.HasSuffix(got, "... (1048576 bytes)") || strings.Contains(got, `\x`) {
			t.Errorf("quote = %s; want a valid UTF-8 prefix and the length", got)
		}
	}
}
