package main

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestErrorsEscapeManifestPaths is an attack: an engine path in a manifest
// is the manifest author's, and the error naming a missing one printed it
// as it is, after the quoted call name: ESC drove the terminal (a path
// "x\x1b[2J" cleared the screen of whoever ran the build) and NUL or
// other control bytes went out raw; pteinspect already escaped its
// messages. pteexport's error and warning lines now escape every
// non-printable character (cli.EscText), as pteinspect's do.
func TestErrorsEscapeManifestPaths(t *testing.T) {
	for _, path := range []string{`x\u001b[2Jcleared`, `a\u0000b`, `c\u0007\u009bd`, `line\u2028sep`} {
		m := writeManifest(t, strings.ReplaceAll(twoEngines, `"b.engine"`, `"`+path+`"`), map[string]string{"a.engine": "engine A"})
		r := runCmd("--manifest", m, "-o", filepath.Join(t.TempDir(), "out.pte"))
		require.Equal(t, 1, r.code, r.stderr)
		line, ok := strings.CutSuffix(r.stderr, "\n")
		require.True(t, ok, "%q", r.stderr)
		assert.False(t, strings.ContainsFunc(line, func(r rune) bool { return !unicode.IsPrint(r) }),
			"%s: the error line holds a character that is not printable: %q", path, r.stderr)
		assert.Contains(t, line, "cannot read the engine source", path)
	}
}
