package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/ptekit/ptekit/check"
	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/cli"
	"github.com/ptekit/ptekit/internal/input"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// isPTD reports whether the input starts like a .ptd file (FlatBuffers
// identifier "FT01"), so that FILE may be either kind without a flag. A
// URL is not read for this (it would cost a request before the program's
// own); its path must end in ".ptd".
func isPTD(ctx context.Context, opener *input.Opener, name string) bool {
	switch {
	case name == "-":
		return false
	case input.IsURL(name):
		u, err := url.Parse(name)
		return err == nil && strings.HasSuffix(u.Path, ".ptd")
	}
	src, err := opener.Open(ctx, name)
	if err != nil {
		return false
	}
	defer src.Close()
	var head [8]byte
	if _, err := src.ReadAt(head[:], 0); err != nil {
		return false
	}
	return string(head[4:8]) == ptd.Identifier
}

// openPTD opens a .ptd input (a path or a URL) through the commands' one
// opener.
func openPTD(ctx context.Context, opener *input.Opener, name string) (*ptd.File, io.Closer, error) {
	src, err := opener.Open(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	f, err := ptd.NewFile(src, src.Size)
	if err != nil {
		src.Close()
		return nil, nil, fmt.Errorf("%s: %w", src.Name, err)
	}
	return f, src, nil
}

// openData opens the --data files in order; a file that fails to open is
// kept with its error, as ExecuTorch reports its load failure. The caller
// must call closeAll.
func openData(ctx context.Context, opener *input.Opener, names []string) (srcs []ptd.Source, closeAll func()) {
	var closers []io.Closer
	for _, n := range names {
		f, c, err := openPTD(ctx, opener, n)
		if c != nil {
			closers = append(closers, c)
		}
		srcs = append(srcs, ptd.Source{Name: input.Display(n), File: f, Err: err})
	}
	return srcs, func() {
		for _, c := range closers {
			c.Close()
		}
	}
}

// runPTD shows a .ptd file: the summary, --json (with --hash digests) or
// --verify (the reader's findings).
func runPTD(ctx context.Context, opener *input.Opener, name string, stdout, stderr io.Writer, o *options) int {
	switch {
	case o.plan || o.compileSpecs || o.extract != "" || o.method != "" || o.backend != "" || len(o.data) > 0:
		return usageErr(stderr, "%s is a .ptd data file: only --json, --hash, --verify, --long and --size apply (inspect a program with --data %s)", esc(name), esc(name))
	}
	f, c, err := openPTD(ctx, opener, name)
	if err != nil {
		if fe, ok := errors.AsType[*ptd.FormatError](err); ok && o.verify {
			return printVerify(stdout, stderr, name, nil, []inspect.Problem{inspect.PTDFormatProblem(fe)}, o)
		}
		return failure(stdout, stderr, name, o, err)
	}
	defer c.Close()
	doc, err := inspect.BuildPTD(f, o.hash)
	if err != nil {
		return failErr(stderr, name, err)
	}
	if o.verify {
		return printVerify(stdout, stderr, name, &doc.File, doc.Findings, o)
	}
	code := exitOK
	if _, _, bad := check.FirstError(doc.Findings); bad {
		code = exitFail
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	if o.json {
		if err := inspect.Encode(w, doc); err != nil {
			return failErr(stderr, name, err)
		}
		return code
	}
	printPTD(w, name, doc)
	return code
}

// printPTD prints the summary view of a .ptd file.
func printPTD(w io.Writer, name string, doc *inspect.PTDDocument) {
	t := newTable(w, "")
	t.row("file", esc(name))
	t.row("size", fmt.Sprintf("%s (%d bytes)", compilespec.FormatSizeApprox(doc.File.Size), doc.File.Size))
	if doc.File.SHA256.Hex != "" {
		t.row("sha256", doc.File.SHA256.Hex)
	}
	t.row("identifier", fmt.Sprintf("%s (external data), root table at byte %d", doc.File.FileIdentifier, doc.File.RootOffset))
	h := doc.Header
	t.row("header", fmt.Sprintf("%s length %d: flatbuffer %d bytes at %d, segment base %d, segment data %s",
		h.Magic, h.Length, h.FlatbufferSize, h.FlatbufferOffset, h.SegmentBaseOffset, compilespec.FormatSizeApprox(h.SegmentDataSize)))
	if doc.FlatTensor != nil {
		t.row("version", strconv.FormatUint(uint64(doc.FlatTensor.Version), 10))
	}
	t.flush()
	if doc.Legacy != nil {
		fmt.Fprintf(w, "\nolder layout: %s\n", escText(*doc.FlatTensorError))
		fmt.Fprintf(w, "\ntensors (%d), tensor alignment %d\n", len(doc.Legacy.Tensors), doc.Legacy.TensorAlignment)
		t := newTable(w, "  ")
		t.row("NAME", "TYPE", "SIZES", "DIM ORDER", "SEGMENT", "OFFSET")
		for _, x := range doc.Legacy.Tensors {
			l := x.TensorLayout
			t.row(esc(x.FullyQualifiedName), l.ScalarType.String(), ints(l.Sizes, " "), ints(l.DimOrder, " "),
				strconv.FormatUint(uint64(x.SegmentIndex), 10), strconv.FormatUint(x.Offset, 10))
		}
		t.flush()
	} else {
		printSegmentTable(w, len(doc.Segments), func(i int) segmentRow {
			s := doc.Segments[i]
			r := segmentRow{s.Index, s.FileOffset, s.Size, s.Resolvable, "", s.UsedBy, s.SHA256}
			if !s.EndWithinSegmentData {
				r.note = "(past segment data)"
			}
			return r
		})
		fmt.Fprintf(w, "\nkeys (%d)\n", len(doc.NamedData))
		if len(doc.NamedData) > 0 {
			t := newTable(w, "  ")
			t.row("KEY", "TYPE", "SIZES", "DIM ORDER", "SEGMENT", "SIZE")
			for _, k := range doc.NamedData {
				typ, sizes, order := "(no layout)", "-", "-"
				if l := k.TensorLayout; l != nil {
					typ, sizes, order = l.ScalarType.String(), ints(l.Sizes, " "), ints(l.DimOrder, " ")
				}
				size := "-"
				if k.Size != nil {
					size = compilespec.FormatSizeApprox(*k.Size)
				}
				t.row(esc(k.Key), typ, sizes, order, strconv.FormatUint(uint64(k.SegmentIndex), 10), size)
			}
			t.flush()
		}
	}
	printProblems(w, doc.Findings)
}

// ints formats a list of integers as "[2 2]" (sep " ") or "[2, 2]".
func ints[T int32 | int | int64](s []T, sep string) string {
	return "[" + strings.Join(each(s, func(v T) string { return strconv.FormatInt(int64(v), 10) }), sep) + "]"
}

// printVerify prints findings as --verify does and returns its exit status.
//
// In the JSON form "file" has the shape of the --json document's (nil: the
// file does not open); the name as given is "name".
func printVerify(stdout, stderr io.Writer, name string, file *inspect.File, probs []inspect.Problem, o *options) int {
	_, errs, _ := check.FirstError(probs)
	if o.json {
		err := inspect.Encode(stdout, struct {
			Name     string            `json:"name"`
			File     *inspect.File     `json:"file"`
			OK       bool              `json:"ok"`
			Errors   int               `json:"errors"`
			Warnings int               `json:"warnings"`
			Findings []inspect.Problem `json:"findings"`
		}{input.Display(name), file, errs == 0, errs, len(probs) - errs, nonNil(probs)})
		if err != nil {
			return failErr(stderr, name, err)
		}
	} else {
		for _, p := range probs {
			fmt.Fprintln(stdout, escText(p.String()))
		}
		fmt.Fprintf(stdout, "%s: %d error(s), %d warning(s)\n", esc(input.Display(name)), errs, len(probs)-errs)
	}
	if errs > 0 {
		return exitFail
	}
	return exitOK
}

// printNeededKeys prints the keys of .ptd files a program needs when none
// is given; list formats them.
func printNeededKeys(w io.Writer, f *pte.File, list func([]string) string) {
	if keys := inspect.NeededKeys(f.Program); len(keys) > 0 {
		fmt.Fprintf(w, "\nexternal data: needs %d key(s) from .ptd files, none given (pass --data FILE.ptd): %s\n",
			len(keys), escText(list(keys)))
	}
}

// dataFileState says whether a data file loads.
func dataFileState(f *inspect.DataFile) string {
	if !f.OK {
		return "FAILS: " + statusText(f.DataStatus)
	}
	return fmt.Sprintf("loads, %d key(s)", len(f.Keys))
}

// printExternalData prints where each EXTERNAL tensor comes from (with
// --data) or, without data files, which keys the program needs.
func printExternalData(w io.Writer, f *pte.File, ext *inspect.ExternalData) {
	if ext == nil {
		printNeededKeys(w, f, quoteAll)
		return
	}
	fmt.Fprintf(w, "\nexternal data (%d file(s))\n", len(ext.Files))
	t := newTable(w, "  ")
	for i, f := range ext.Files {
		state := dataFileState(f)
		if f.OK && f.Legacy {
			state += " (older layout: ExecuTorch misreads it)"
		}
		t.row(fmt.Sprintf("[%d]", i), esc(f.Name), escText(state))
	}
	t.flush()
	if len(ext.Files) > 0 && !ext.Merge.OK {
		fmt.Fprintf(w, "  merge FAILS: %s\n", escText(statusText(ext.Merge)))
	}
	for _, m := range ext.Methods {
		state := "ok"
		if !m.OK {
			state = "FAILS: " + statusText(m.DataStatus)
		}
		fmt.Fprintf(w, "  method %s: %d external tensor(s), %s\n", esc(m.Name), len(m.Tensors), escText(state))
		if len(m.Tensors) == 0 {
			continue
		}
		t := newTable(w, "    ")
		t.row("VALUE", "KEY", "KIND", "FROM", "STATUS")
		for _, x := range m.Tensors {
			kind := "constant"
			if x.Planned {
				kind = "planned"
			}
			from := "missing"
			if x.File != nil {
				from = esc(*x.File)
				if x.Offset != nil {
					from += fmt.Sprintf(" @%d, %s", *x.Offset, compilespec.FormatSizeApprox(*x.Size))
				}
			}
			st := "ok"
			if !x.OK {
				st = statusText(x.DataStatus)
			}
			t.row(strconv.Itoa(x.Value), esc(x.Key), kind, from, escText(st))
		}
		t.flush()
	}
	if len(ext.Missing) > 0 {
		fmt.Fprintf(w, "  missing keys: %s\n", escText(quoteAll(ext.Missing)))
	}
}

func statusText(s inspect.DataStatus) string {
	if s.OK || s.Error == nil {
		return "ok"
	}
	return s.Error.Kind + ": " + cli.OneLine(s.Error.Message)
}

// runPTDDiff compares two .ptd files (diff with both sides .ptd).
func runPTDDiff(ctx context.Context, opener *input.Opener, names []string, asJSON, layout bool, stdout, stderr io.Writer, fail func(string, error) int) int {
	var docs [2]*inspect.PTDDocument
	for i, name := range names {
		f, c, err := openPTD(ctx, opener, name)
		if err != nil {
			return fail(name, err)
		}
		docs[i], err = inspect.BuildPTD(f, true)
		c.Close()
		if err != nil {
			return fail(name, err)
		}
	}
	diffs, err := inspect.DiffPTD(docs[0], docs[1], &inspect.DiffOptions{Layout: layout})
	if err != nil {
		return diffFail(stdout, stderr, err, asJSON)
	}
	return printDiffs(stdout, stderr, diffs, asJSON)
}
