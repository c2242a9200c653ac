package main

import (
	"strconv"

	"github.com/ptekit/ptekit/internal/cli"
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
	if s != "" && s[0] != '"' && cli.Printable(s) {
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

// escText is package cli's, which pteexport's messages use too.
var escText = cli.EscText
