package inspect

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"

	"github.com/ptekit/ptekit/compilespec"
)

// sizePageScript records each block's rendered size (data-rendered-w,
// data-rendered-h) and the number measured (the body's data-rendered), so
// a headless browser's DOM dump shows what it drew.
const sizePageScript = `(function () {
  var n = 0;
  document.querySelectorAll("rect[data-size]").forEach(function (r) {
    var b = r.getBBox();
    r.setAttribute("data-rendered-w", b.width.toFixed(2));
    r.setAttribute("data-rendered-h", b.height.toFixed(2));
    n++;
  });
  document.body.setAttribute("data-rendered", String(n));
})();`

const sizePageStyle = `body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:18px;margin:0 0 4px}
p{margin:0 0 12px}
svg{display:block;border:1px solid #888}
svg text{font-size:11px;pointer-events:none;fill:#111}
svg text.g{font-weight:bold}
rect.leaf{stroke:#fff;stroke-width:1}
rect.leaf:hover{stroke:#000}
rect.group{stroke:#333;stroke-width:1}
table{border-collapse:collapse;margin-top:12px}
td{padding:1px 8px}
td.n{text-align:right;font-variant-numeric:tabular-nums}`

// WriteSizeHTML writes a self-contained HTML page showing blocks, the
// treemap of r (Treemap): an inline SVG whose blocks carry a hover title
// naming them and their size and, where they have room, a label; and a
// table of the groups. It loads nothing from the network. title heads the
// page (the file's name, escaped here).
func WriteSizeHTML(w io.Writer, title string, r *SizeReport, blocks []TreemapBlock) error {
	bw := bufio.NewWriter(w)
	var width, height float64
	for _, b := range blocks {
		width, height = max(width, b.X+b.W), max(height, b.Y+b.H)
	}
	t := html.EscapeString(title)
	fmt.Fprintf(bw, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Where the bytes go: %s</title>\n<style>\n%s\n</style>\n</head>\n<body>\n", t, sizePageStyle)
	fmt.Fprintf(bw, "<h1>Where the bytes go: %s</h1>\n<p>%s in %d parts", t, html.EscapeString(compilespec.DescribeSize(r.Size)), len(r.Items))
	if r.DedupSaved > 0 {
		fmt.Fprintf(bw, "; de-duplication saved %s", html.EscapeString(compilespec.FormatSizeApprox(r.DedupSaved)))
	}
	fmt.Fprintf(bw, ". Hover over a block for its name and size.</p>\n")
	fmt.Fprintf(bw, "<svg width=\"%s\" height=\"%s\" viewBox=\"0 0 %s %s\" data-size=\"%d\">\n",
		num(width), num(height), num(width), num(height), r.Size)
	group := -1
	for _, b := range blocks {
		if !b.Leaf {
			if group >= 0 {
				bw.WriteString("</g>\n")
			}
			group++
			fmt.Fprintf(bw, "<g data-group=\"%s\">\n", html.EscapeString(b.Group))
		}
		hue := (group * 137) % 360
		light := 80
		class := "leaf"
		if !b.Leaf {
			light, class = 92, "group"
		}
		fmt.Fprintf(bw, "<rect class=\"%s\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"hsl(%d,55%%,%d%%)\" data-size=\"%d\" data-items=\"%d\" data-label=\"%s\"><title>%s: %s</title></rect>\n",
			class, num(b.X), num(b.Y), num(b.W), num(b.H), hue, light, b.Size, b.Items,
			html.EscapeString(b.Label), html.EscapeString(b.Label), html.EscapeString(compilespec.DescribeSize(b.Size)))
		full := b.Label + " " + compilespec.FormatSizeApprox(b.Size)
		text := fitText(full, b.W)
		if text != full && len([]rune(text)) < 12 {
			// Too cut to name the block: its size says more.
			text = fitText(compilespec.FormatSizeApprox(b.Size), b.W)
		}
		if text != "" && b.H >= 14 {
			cls := ""
			if !b.Leaf {
				cls = " class=\"g\""
			}
			fmt.Fprintf(bw, "<text%s x=\"%s\" y=\"%s\">%s</text>\n", cls, num(b.X+3), num(b.Y+12), html.EscapeString(text))
		}
	}
	if group >= 0 {
		bw.WriteString("</g>\n")
	}
	bw.WriteString("</svg>\n<table>\n<tr><th>group</th><th>bytes</th><th>%</th></tr>\n")
	for _, g := range r.Groups() {
		fmt.Fprintf(bw, "<tr><td>%s</td><td class=\"n\">%d</td><td class=\"n\">%s</td></tr>\n",
			html.EscapeString(g.Name), g.Size, Percent(g.Size, r.Size))
	}
	fmt.Fprintf(bw, "</table>\n<script>\n%s\n</script>\n</body>\n</html>\n", sizePageScript)
	return bw.Flush()
}

// fitText cuts s to what a block w units wide shows at about 6.5 units
// a character, "" when not even a few characters fit.
func fitText(s string, w float64) string {
	n := int((w - 6) / 6.5)
	rs := []rune(s)
	switch {
	case n < 4:
		return ""
	case len(rs) > n:
		return string(rs[:n-1]) + "…"
	}
	return s
}

// num formats a coordinate with at most two decimals.
func num(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

// Percent is part of whole in percent with one decimal ("12.5"), as the
// size views show shares; "0.0" when whole is not positive.
func Percent(part, whole int64) string {
	if whole <= 0 {
		return "0.0"
	}
	return strconv.FormatFloat(100*float64(part)/float64(whole), 'f', 1, 64)
}
