package main

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The human views print strings read from the file (method, backend,
// operator and tensor names, compile spec keys, metadata strings), which an
// attacker controls. A name with a newline would forge output lines and
// one with ESC would drive the terminal, so every such string goes through
// esc (a name) or escText (a sentence that may quote names).

// esc returns a name from the file for one terminal line: as is when it is
// valid UTF-8 made only of printable characters (and does not start with a
// double quote, which would read as a quoted name), else Go-quoted. The
// empty name shows as "".
func esc(s string) string {
	if s != "" && s[0] != '"' && printable(s) {
		return s
	}
	return strconv.Quote(s)
}

// each returns f of every element of s, for a list to join: each(names,
// esc) escapes every name.
func each[T any](s []T, f func(T) string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = f(x)
	}
	return out
}

// printable reports whether s is valid UTF-8 of printable characters
// (unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the
// ASCII space).
func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r == utf8.RuneError || !unicode.IsPrint(r) })
}

// escText returns a sentence for one terminal line: printable characters
// as they are, every other character (control characters, invalid UTF-8
// bytes, other non-printables) as its Go escape (\n, \x1b, \u2028, ...).
func escText(s string) string {
	if printable(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i])>>4, 16) + strconv.FormatUint(uint64(s[i])&15, 16))
		case unicode.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}
