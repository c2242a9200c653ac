package quote

import (
	"fmt"
	"strconv"
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

// TestLongInvalidBytesQuotedUpToMax: a long value of bytes that are not
// UTF-8 (continuation bytes, binary data) is quoted up to MaxBytes. The cut
// used to walk back to the previous rune start however far that was, so 100
// continuation bytes were quoted as "" (found by FuzzQuote).
func TestLongInvalidBytesQuotedUpToMax(t *testing.T) {
	for _, v := range []string{strings.Repeat("\x80", 100), "\xff\xfe" + strings.Repeat("\xbf", 70)} {
		want := strconv.Quote(v[:MaxBytes]) + fmt.Sprintf("... (%d bytes)", len(v))
		if got := String(v); got != want {
			t.Errorf("String(%d invalid bytes) = %s, want %s", len(v), got, want)
		}
	}
	// A valid rune across the cut is still left out whole.
	v := strings.Repeat("x", MaxBytes-1) + "€tail"
	if got, want := String(v), strconv.Quote(v[:MaxBytes-1])+fmt.Sprintf("... (%d bytes)", len(v)); got != want {
		t.Errorf("String = %s, want %s", got, want)
	}
}
