// Package quote quotes values from users and files in messages, at most
// MaxBytes of them, so a hostile or mistaken 16 MB value cannot make a 16 MB
// error (issue 11). Every ptekit message that quotes such a value uses it.
package quote

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxBytes is how much of a value a message quotes.
const MaxBytes = 64

// String returns s as a Go-quoted string when it is at most MaxBytes long;
// a longer s is quoted up to MaxBytes (cut before a rune that would be
// split) and followed by "... (N bytes)".
func String(s string) string {
	if len(s) <= MaxBytes {
		return strconv.Quote(s)
	}
	return long([]byte(s[:min(len(s), MaxBytes+utf8.UTFMax)]), len(s))
}

// Bytes is String for a byte slice.
func Bytes(b []byte) string {
	if len(b) > MaxBytes {
		return long(b[:min(len(b), MaxBytes+utf8.UTFMax)], len(b))
	}
	return strconv.Quote(string(b))
}

// long quotes the start of a value of n bytes given its first bytes (more
// than MaxBytes of them, enough to decode a rune that starts before
// MaxBytes). The cut moves back only over a valid rune that it would split,
// so at most utf8.UTFMax-1 bytes: invalid bytes (binary data, continuation
// bytes) are quoted up to MaxBytes, not dropped.
func long(head []byte, n int) string {
	cut := MaxBytes
	for i := cut - 1; i >= 0 && i > cut-utf8.UTFMax; i-- {
		if !utf8.RuneStart(head[i]) {
			continue
		}
		if r, size := utf8.DecodeRune(head[i:]); !(r == utf8.RuneError && size == 1) && i+size > cut {
			cut = i
		}
		break
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(string(head[:cut])), n)
}
