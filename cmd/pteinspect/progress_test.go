package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/progress"
)

// fakeTerminal makes stderr a terminal and the clock run two seconds per
// reading, so that progress shows at once; it restores both at the end.
func fakeTerminal(t *testing.T) {
	savedTTY, savedNow := progress.IsTerminal, progress.Now
	t.Cleanup(func() { progress.IsTerminal, progress.Now = savedTTY, savedNow })
	progress.IsTerminal = func(io.Writer) bool { return true }
	clock := time.Unix(0, 0)
	progress.Now = func() time.Time { clock = clock.Add(2 * time.Second); return clock }
}

// TestProgressOnTerminal: the long reads (diff, --json --hash, --extract)
// show a progress line on a terminal and erase it at the end (issue 11
// item 8: they ran 3-30 s in silence); --quiet and a stderr that is not a
// terminal get nothing.
func TestProgressOnTerminal(t *testing.T) {
	path := trtPath(t, "large_engine")
	out := filepath.Join(t.TempDir(), "engine.bin")
	cases := map[string][]string{
		"hashing":    {"--json", "--hash", path},
		"reading":    {"diff", path, path},
		"extracting": {"--extract", "0:0", "-o", out, "--force", path},
	}
	plain := map[string]result{}
	for name, args := range cases {
		plain[name] = runArgs(nil, args...)
		assert.Empty(t, plain[name].stderr, "%s: not a terminal", name)
	}
	fakeTerminal(t)
	for name, args := range cases {
		r := runArgs(nil, args...)
		require.Equal(t, plain[name].code, r.code, r.stderr)
		assert.Equal(t, plain[name].stdout, r.stdout, "%s: stdout is the same", name)
		assert.True(t, strings.HasPrefix(r.stderr, "\r\x1b[Kpteinspect: "+name), "%s: %q", name, r.stderr)
		assert.Contains(t, r.stderr, "100% (")
		assert.True(t, strings.HasSuffix(r.stderr, "\r\x1b[K"), "%s: erased at the end: %q", name, r.stderr)

		quiet := runArgs(nil, append([]string{"--quiet"}, args...)...)
		if name == "reading" {
			quiet = runArgs(nil, append([]string{"diff", "--quiet"}, args[1:]...)...)
		}
		assert.Empty(t, quiet.stderr, "%s --quiet", name)
	}
}
