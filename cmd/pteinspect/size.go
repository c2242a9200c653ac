package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/cli"
	"github.com/ptekit/ptekit/internal/input"
	"github.com/ptekit/ptekit/ptd"
)

// The default --size view fits a screen: at most sizeGroups groups of at
// most sizeLines lines each; --long lists every item.
const (
	sizeGroups = 10
	sizeLines  = 6
)

// runSize answers --size for a program or a data file: the breakdown as a
// person reads it, as JSON, or (--html) as a treemap page written to a
// file.
func runSize(ctx context.Context, opener *input.Opener, name string, stdout, stderr io.Writer, o *options) int {
	var r *inspect.SizeReport
	if isPTD(ctx, opener, name) {
		if len(o.data) > 0 {
			return usageErr(stderr, "%s is a .ptd data file: --data goes with a program", esc(name))
		}
		f, c, err := openPTD(ctx, opener, name)
		if err != nil {
			return failure(stdout, stderr, name, o, err)
		}
		defer c.Close()
		if r, err = inspect.SizePTD(f); err != nil {
			return failure(stdout, stderr, name, o, err)
		}
	} else {
		// A viewer never applies an undo record; --size lists no
		// problems, so it reports one on standard error.
		warnUndo(stderr, o.undo, o.quiet)
		srcs, closeData := openData(ctx, opener, o.data)
		defer closeData()
		f, err := opener.Program(ctx, name)
		if err != nil {
			return failure(stdout, stderr, name, o, err)
		}
		defer f.Close()
		so := &inspect.SizeOptions{}
		if len(srcs) > 0 {
			so.Data = ptd.Resolve(f.Program, srcs)
		}
		if r, err = inspect.Size(f, so); err != nil {
			return failure(stdout, stderr, name, o, err)
		}
	}
	if o.html != "" {
		return writeSizeHTML(ctx, name, r, stdout, stderr, o)
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	if o.json {
		if err := inspect.WriteSizeJSON(w, r); err != nil {
			return failErr(stderr, name, err)
		}
		return exitOK
	}
	printSize(w, name, r, o.long)
	return exitOK
}

// writeSizeHTML writes the treemap page of r to o.html, atomically and
// never over an input.
func writeSizeHTML(ctx context.Context, name string, r *inspect.SizeReport, stdout, stderr io.Writer, o *options) int {
	out, code := createOutput(ctx, stderr, name, append([]string{name}, o.data...), "--html", "page", o.html, true)
	if out == nil {
		return code
	}
	defer out.Abort()
	// The page is small (Treemap bounds it): made in memory, it is
	// written in one go and its size is known.
	var page bytes.Buffer
	if err := inspect.WriteSizeHTML(&page, input.Display(name), r, inspect.Treemap(r, nil)); err != nil {
		return failErr(stderr, name, err)
	}
	_, err := out.Write(page.Bytes())
	if err == nil {
		err = out.Commit()
	}
	if err != nil {
		return writeFailed(ctx, stderr, name, o.html, esc(o.html), err)
	}
	if !o.quiet {
		fmt.Fprintf(stdout, "wrote %s (treemap of %s) to %s\n", compilespec.FormatSizeApprox(page.Len()), esc(input.Display(name)), esc(o.html))
	}
	return exitOK
}

// printSize prints the breakdown by group, largest first: in the default
// view each group's lines (items of one part and backend summed), at most
// sizeGroups groups of sizeLines lines; with long every item.
func printSize(w io.Writer, name string, r *inspect.SizeReport, long bool) {
	fmt.Fprintf(w, "file  %s\n", esc(input.Display(name)))
	fmt.Fprintf(w, "size  %s, %d parts\n", compilespec.DescribeSize(r.Size), len(r.Items))
	if r.DedupSaved > 0 {
		users := 0
		for _, s := range r.Shared {
			users += s.Users
		}
		fmt.Fprintf(w, "dedup %s saved: %d users share %s\n", compilespec.DescribeSize(r.DedupSaved), users, cli.Count(len(r.Shared), "payload"))
	}
	for _, b := range r.Backends() {
		fmt.Fprintf(w, "%-5s %s: %s in %s\n", "data", esc(b.Backend), compilespec.DescribeSize(b.Size), cli.Count(b.Count, "payload"))
	}
	groups := r.Groups()
	width := len(strconv.FormatInt(r.Size, 10))
	row := func(n int64, indent, what string) {
		fmt.Fprintf(w, "  %*d %6s%%  %s%s\n", width, n, inspect.Percent(n, r.Size), indent, what)
	}
	fmt.Fprintf(w, "\n  %*s %7s  %s\n", width, "bytes", "%", "where")
	shown := groups
	if !long && len(groups) > sizeGroups {
		shown = groups[:sizeGroups-1]
	}
	for _, g := range shown {
		row(g.Size, "", esc(g.Name))
		if long {
			for _, it := range g.Items {
				row(it.Size, "  ", escText(it.Label()))
			}
			continue
		}
		lines := g.Lines()
		if len(lines) == 1 && lines[0].Count == 1 && g.Items[0].Label() == g.Name {
			continue
		}
		for i, l := range lines {
			if i == sizeLines-1 && len(lines) > sizeLines {
				var rest int64
				for _, l := range lines[i:] {
					rest += l.Size
				}
				row(rest, "  ", fmt.Sprintf("%d more lines (--long lists every item)", len(lines)-i))
				break
			}
			row(l.Size, "  ", escText(l.Label()))
		}
	}
	if len(shown) < len(groups) {
		var rest int64
		for _, g := range groups[len(shown):] {
			rest += g.Size
		}
		names := each(groups[len(shown):min(len(groups), len(shown)+3)], func(g inspect.SizeGroup) string { return esc(g.Name) })
		if len(groups)-len(shown) > 3 {
			names = append(names, "...")
		}
		row(rest, "", fmt.Sprintf("%d more groups: %s", len(groups)-len(shown), strings.Join(names, ", ")))
	}
	if r.External != nil {
		fmt.Fprintf(w, "\nexternal data the methods need (not in this file):\n")
		if len(r.External) == 0 {
			fmt.Fprintf(w, "  none\n")
		}
		for _, e := range r.External {
			from := "no data file holds them"
			if e.File != "" {
				from = "from " + esc(e.File)
			}
			fmt.Fprintf(w, "  %s: %d tensors, %s %s\n", esc(e.Method), e.Tensors, compilespec.FormatSizeApprox(e.Size), from)
		}
	}
}
