package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// TestHumanViewsEscapeNames: names from the file (method, backend id,
// compile spec key, operator) holding newlines, ESC or invalid UTF-8 are
// shown Go-quoted, so they can neither forge output lines nor reach the
// terminal as control sequences.
func TestHumanViewsEscapeNames(t *testing.T) {
	const (
		method  = "for\nward\x1b[31m"
		backend = "Evil\rBackend\xff"
		key     = "k\x1b]0;title\x07"
		op      = "aten::add\u2028"
	)
	data := testprog.Rewrite(t, seedPrograms(t)["two_methods"], func(p *pte.Program) {
		p.Plan(0).Name = method
		p.Plan(0).Delegates[0].CompileSpecs = append(p.Plan(0).Delegates[0].CompileSpecs,
			&pte.CompileSpec{Key: key, Value: []byte("v\n")},
			&pte.CompileSpec{Key: "weight_streaming_budget", Value: []byte("1\x1b[2J")})
		p.Plan(0).Operators = append(p.Plan(0).Operators, &pte.Operator{Name: op})
		p.Plan(1).Delegates[0].ID = backend
	})
	for _, args := range [][]string{{"-"}, {"--long", "-"}, {"--compile-specs", "-"}, {"--plan", "-"}, {"--verify", "-"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := runArgs(data, args...)
			require.NotEmpty(t, r.stdout, r.stderr)
			for i, c := range []byte(r.stdout + r.stderr) {
				if c < 0x20 && c != '\n' || c == 0x7f {
					t.Fatalf("control byte %#x at %d in output:\n%s", c, i, r.stdout)
				}
			}
			assert.NotContains(t, r.stdout, "\u2028")
			assert.NotContains(t, r.stdout, "\xff")
			for _, line := range strings.Split(r.stdout, "\n") {
				assert.False(t, strings.HasPrefix(line, "ward"), "forged line %q", line)
			}
			assert.Contains(t, r.stdout, `for\nward\x1b[31m`)
		})
	}
	r := runArgs(data, "--long", "-")
	assert.Contains(t, r.stdout, `"Evil\rBackend\xff"`)
	assert.Contains(t, r.stdout, `"k\x1b]0;title\a"`)
	assert.Contains(t, r.stdout, `"aten::add\u2028"`)
}

func TestEsc(t *testing.T) {
	for in, want := range map[string]string{
		"forward":      "forward",
		"":             `""`,
		`"x"`:          `"\"x\""`,
		"a b":          "a b",
		"a\tb":         `"a\tb"`,
		"\xffx":        `"\xffx"`,
		"naïve":        "naïve",
		"x\u200by":     `"x\u200by"`,
		"k\x1b[31m":    `"k\x1b[31m"`,
		"line\u2028ab": `"line\u2028ab"`,
	} {
		assert.Equal(t, want, esc(in), "esc(%q)", in)
	}
	assert.Equal(t, `bad \n name \x1b[0m \xff ok`, escText("bad \n name \x1b[0m \xff ok"))
	assert.Equal(t, "plain text", escText("plain text"))
}
