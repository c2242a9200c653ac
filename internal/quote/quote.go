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
// a longer s is quoted up to MaxBytes (cut at a UTF-8 boundary) and followed
// by "... (N bytes)".
func String(s string) string {
	if len(s) <= MaxBytes {
		return strconv.Quote(s)
	}
	return long([]byte(s[:MaxBytes+1]), len(s))
}

// Bytes is String for a byte slice.
func Bytes(b []byte) string {
	if len(b) > MaxBytes {
		return long(b[:MaxBytes+1], len(b))
	}
	return strconv.Quote(string(b))
}

// long quotes head, the first MaxBytes+1 bytes of a value of n bytes, up to
// the last rune start at or before MaxBytes.
func long(head []byte, n int) string {
	b := head
	cut := MaxBytes
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(string(b[:cut])), n)
}
