package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/export"
	"github.com/ptekit/ptekit/internal/testprog"
)

// chromium returns the path of Debian's chromium (scripts/test installs
// it): a test that needs it fails when CI is set and it is missing, and
// is skipped, saying why, otherwise.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is missing (CI is set): scripts/test installs it with apt-get install chromium")
	}
	t.Skip("chromium is missing: apt-get install chromium to render the --size --html page in a browser")
	return ""
}

// renderDOM loads page in headless chromium and returns the DOM after its
// scripts ran; with shot set it also saves a screenshot there.
func renderDOM(t *testing.T, browser, page, shot string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	profile := t.TempDir() // no state shared with other runs
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + profile,
		"--no-first-run", "--disable-extensions", "--window-size=1280,1100"}
	url := "file://" + page
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, browser, append(base, "--dump-dom", url)...)
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	require.NoError(t, err, "chromium --dump-dom: %s", stderr.String())
	if shot != "" {
		cmd := exec.CommandContext(ctx, browser, append(base, "--screenshot="+shot, url)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "chromium --screenshot: %s", out)
		fi, err := os.Stat(shot)
		require.NoError(t, err)
		require.Positive(t, fi.Size())
	}
	return string(dom)
}

var (
	rectTag = regexp.MustCompile(`<rect [^>]*>`)
	attr    = regexp.MustCompile(`([a-z-]+)="([^"]*)"`)
)

// renderedBlock is a block of the rendered treemap, with the size the
// browser measured.
type renderedBlock struct {
	group      bool
	size       int64
	w, h       float64 // rendered
	x, y       float64
	label, grp string
}

// renderedBlocks reads the blocks and their measured sizes from a DOM.
func renderedBlocks(t *testing.T, dom string) []renderedBlock {
	t.Helper()
	var out []renderedBlock
	group := ""
	for _, tag := range rectTag.FindAllString(dom, -1) {
		a := map[string]string{}
		for _, m := range attr.FindAllStringSubmatch(tag, -1) {
			a[m[1]] = m[2]
		}
		if a["data-size"] == "" {
			continue
		}
		num := func(k string) float64 {
			v, err := strconv.ParseFloat(a[k], 64)
			require.NoError(t, err, "%s of %s", k, tag)
			return v
		}
		b := renderedBlock{group: a["class"] == "group", size: int64(num("data-size")),
			w: num("data-rendered-w"), h: num("data-rendered-h"), x: num("x"), y: num("y"), label: a["data-label"]}
		if b.group {
			group = b.label
		}
		b.grp = group
		out = append(out, b)
	}
	return out
}

// requireProportional checks that the rendered areas of blocks are
// proportional to their sizes, within what rounding to hundredths of a
// pixel allows.
func requireProportional(t *testing.T, what string, blocks []renderedBlock, area float64) {
	t.Helper()
	var total int64
	for _, b := range blocks {
		total += b.size
	}
	for _, b := range blocks {
		want := area * float64(b.size) / float64(total)
		got := b.w * b.h
		tol := 0.01*(b.w+b.h) + 1e-6*area
		require.InDelta(t, want, got, tol, "%s: block %q of %d bytes is %.2f x %.2f", what, b.label, b.size, b.w, b.h)
	}
}

// TestSizeHTMLBrowser renders --size --html pages in headless chromium
// and checks, from the DOM the browser leaves after laying the page out,
// that every block is drawn and that the areas are proportional to the
// sizes: groups in the whole map, blocks in their group. One program has
// 300 delegates (more than a group shows: its small ones are summed), one
// has none. PTEKIT_SIZE_SHOTS=DIR keeps screenshots there to look at.
func TestSizeHTMLBrowser(t *testing.T) {
	browser := chromium(t)
	var many bytes.Buffer
	_, err := export.Write(&many, &export.Program{Methods: []*export.Method{testprog.DistinctEngines(300, 512)}},
		&export.Options{SegmentAlignment: 64, HeadRoom: export.NoHeadRoom})
	require.NoError(t, err)
	progs := map[string][]byte{"many_delegates": many.Bytes(), "no_delegates": builtPrograms(t)["kernel_only"]}
	shots := os.Getenv("PTEKIT_SIZE_SHOTS")
	for name, data := range progs {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, name+".pte")
			require.NoError(t, os.WriteFile(in, data, 0o644))
			page := filepath.Join(dir, name+".html")
			r := runArgs(nil, "--size", in, "--html", page)
			require.Equal(t, exitOK, r.code, r.stderr)
			require.Contains(t, r.stdout, "wrote ")
			src, err := os.ReadFile(page)
			require.NoError(t, err)
			require.False(t, regexp.MustCompile(`(?i)(src|href|url)\s*[=(]`).Match(src), "the page loads nothing")
			shot := ""
			if shots != "" {
				shot, err = filepath.Abs(filepath.Join(shots, name+".png"))
				require.NoError(t, err)
			}
			dom := renderDOM(t, browser, page, shot)
			m := regexp.MustCompile(`<body[^>]*data-rendered="(\d+)"`).FindStringSubmatch(dom)
			require.NotNil(t, m, "the page's script did not run")
			blocks := renderedBlocks(t, dom)
			require.Equal(t, m[1], strconv.Itoa(len(blocks)))
			var groups []renderedBlock
			var sum int64
			for _, b := range blocks {
				require.Positive(t, b.w*b.h, "block %q is not drawn", b.label)
				if b.group {
					groups = append(groups, b)
					sum += b.size
				}
			}
			require.EqualValues(t, len(data), sum, "the groups cover the file")
			require.Greater(t, len(groups), 2)
			requireProportional(t, "groups", groups, 1200*800)
			for _, g := range groups {
				var leaves []renderedBlock
				var area float64
				for _, b := range blocks {
					if !b.group && b.grp == g.label {
						leaves = append(leaves, b)
						area += b.w * b.h
					}
				}
				require.NotEmpty(t, leaves, g.label)
				requireProportional(t, g.label, leaves, area)
				require.LessOrEqual(t, len(leaves), 48, "small blocks are summed")
				// Below the group's 16-unit label band when it has room
				// for one (inspect.TreemapOptions.Band).
				inner := g.w * g.h
				if g.h > 3*16 && g.w > 2*16 {
					inner = (g.w - 2) * (g.h - 16 - 1)
				}
				require.InDelta(t, inner, area, math.Max(1, 0.01*inner), "%s: the blocks fill their group", g.label)
			}
			if name == "many_delegates" {
				require.True(t, strings.Contains(dom, `data-label="267 more: TensorRTBackend delegate payload"`),
					"the smaller payloads are summed into one block")
			}
		})
	}
}
