package quote

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzQuote checks String and Bytes on arbitrary values: they agree; a short
// value reads back whole; a long one reads back as a prefix of at least
// MaxBytes-(utf8.UTFMax-1) bytes (never a split rune) followed by its
// length; and the result never grows with the value.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "8GiB", "a\x00b", strings.Repeat("x", MaxBytes+1), strings.Repeat("é", 40),
		strings.Repeat("\x80", 100), strings.Repeat("x", MaxBytes-1) + "€tail", "\xff\xfe" + strings.Repeat("\xbf", 70)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		got := String(string(v))
		if b := Bytes(v); b != got {
			t.Fatalf("String = %s, Bytes = %s", got, b)
		}
		if len(got) > 4*MaxBytes+2+len(fmt.Sprintf("... (%d bytes)", len(v))) {
			t.Fatalf("quote of %d bytes is %d bytes long", len(v), len(got))
		}
		if len(v) <= MaxBytes {
			if u, err := strconv.Unquote(got); err != nil || u != string(v) {
				t.Fatalf("short value %q quoted as %s", v, got)
			}
			return
		}
		head, ok := strings.CutSuffix(got, fmt.Sprintf("... (%d bytes)", len(v)))
		if !ok {
			t.Fatalf("long value quoted without its length: %s", got)
		}
		u, err := strconv.Unquote(head)
		if err != nil || !bytes.HasPrefix(v, []byte(u)) || len(u) > MaxBytes || len(u) < MaxBytes-(utf8.UTFMax-1) {
			t.Fatalf("long value %q: quoted head %s (%d bytes) is not a prefix of %d to %d bytes", v, head, len(u), MaxBytes-(utf8.UTFMax-1), MaxBytes)
		}
		// The cut never splits a rune that is valid in the value, and it
		// stops early only for one.
		for j := len(u) - 1; j >= 0 && j > len(u)-utf8.UTFMax; j-- {
			if utf8.RuneStart(v[j]) {
				if r, n := utf8.DecodeRune(v[j:]); !(r == utf8.RuneError && n == 1) && j+n > len(u) {
					t.Fatalf("cut at %d splits the rune at %d", len(u), j)
				}
				break
			}
		}
		if r, n := utf8.DecodeRune(v[len(u):]); len(u) < MaxBytes && ((r == utf8.RuneError && n == 1) || len(u)+n <= MaxBytes) {
			t.Fatalf("cut at %d, but the bytes after it fit within %d bytes", len(u), MaxBytes)
		}
	})
}
