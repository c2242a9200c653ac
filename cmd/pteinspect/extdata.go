package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// isPTD reports whether the file name starts like a .ptd file (FlatBuffers
// identifier "FT01"), so that FILE may be either kind without a flag.
func isPTD(name string) bool {
	if name == "-" {
		return false
	}
	fh, err := os.Open(name)
	if err != nil {
		return false
	}
	defer fh.Close()
	var head [8]byte
	if _, err := io.ReadFull(fh, head[:]); err != nil {
		return false
	}
	return string(head[4:8]) == ptd.Identifier
}

// openData opens the --data files in order; a file that fails to open is
// kept with its error, as ExecuTorch reports its load failure. The caller
// must call closeAll.
func openData(names []string) (srcs []ptd.Source, closeAll func()) {
	for _, n := range names {
		srcs = append(srcs, ptd.Load(n))
	}
	return srcs, func() {
		for _, s := range srcs {
			if s.File != nil {
				s.File.Close()
			}
		}
	}
}

// runPTD shows a .ptd file: the summary, --json (with --hash digests) or
// --verify (the reader's findings).
func runPTD(name string, stdout, stderr io.Writer, o *options) int {
	switch {
	case o.plan || o.compileSpecs || o.extract != "" || o.method != "" || o.backend != "" || len(o.data) > 0:
		return usageErr(stderr, "%s is a .ptd data file: only --json, --hash and --verify apply (inspect a program with --data %s)", esc(name), esc(name))
	}
	f, err := ptd.Open(name)
	if err != nil {
		var fe *ptd.FormatError
		if o.verify && errors.As(err, &fe) {
			return printVerify(stdout, stderr, name, []inspect.Problem{inspect.PTDFormatProblem(fe)}, o)
		}
		if o.json {
			writeFailure(stdout, err, false)
		}
		return failErr(stderr, name, err)
	}
	defer f.Close()
	doc, err := inspect.BuildPTD(f, o.hash)
	if err != nil {
		return failErr(stderr, name, err)
	}
	if o.verify {
		return printVerify(stdout, stderr, name, doc.Findings, o)
	}
	code := exitOK
	if countErrors(doc.Findings) > 0 {
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
	t.row("size", fmt.Sprintf("%s (%d bytes)", humanSize(doc.File.Size), doc.File.Size))
	if doc.File.SHA256.Hex != "" {
		t.row("sha256", doc.File.SHA256.Hex)
	}
	t.row("identifier", fmt.Sprintf("%s (external data), root table at byte %d", doc.File.FileIdentifier, doc.File.RootOffset))
	h := doc.Header
	t.row("header", fmt.Sprintf("%s length %d: flatbuffer %d bytes at %d, segment base %d, segment data %s",
		h.Magic, h.Length, h.FlatbufferSize, h.FlatbufferOffset, h.SegmentBaseOffset, humanSize(h.SegmentDataSize)))
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
			t.row(esc(x.FullyQualifiedName), l.ScalarType.String(), ints(l.Sizes), ints(l.DimOrder),
				strconv.FormatUint(uint64(x.SegmentIndex), 10), strconv.FormatUint(x.Offset, 10))
		}
		t.flush()
	} else {
		rows := make([]segmentRow, len(doc.Segments))
		for i, s := range doc.Segments {
			rows[i] = segmentRow{s.Index, s.FileOffset, s.Size, s.Resolvable, "", s.UsedBy, s.SHA256}
			if !s.EndWithinSegmentData {
				rows[i].note = "(past segment data)"
			}
		}
		printSegmentTable(w, rows)
		fmt.Fprintf(w, "\nkeys (%d)\n", len(doc.NamedData))
		if len(doc.NamedData) > 0 {
			t := newTable(w, "  ")
			t.row("KEY", "TYPE", "SIZES", "DIM ORDER", "SEGMENT", "SIZE")
			for _, k := range doc.NamedData {
				typ, sizes, order := "(no layout)", "-", "-"
				if l := k.TensorLayout; l != nil {
					typ, sizes, order = l.ScalarType.String(), ints(l.Sizes), ints(l.DimOrder)
				}
				size := "-"
				if k.Size != nil {
					size = humanSize(*k.Size)
				}
				t.row(esc(k.Key), typ, sizes, order, strconv.FormatUint(uint64(k.SegmentIndex), 10), size)
			}
			t.flush()
		}
	}
	printProblems(w, doc.Findings)
}

// ints formats a list of integers as "[2 2]".
func ints[T int32 | int](s []T) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.FormatInt(int64(v), 10)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// printVerify prints findings as --verify does and returns its exit status.
func printVerify(stdout, stderr io.Writer, name string, probs []inspect.Problem, o *options) int {
	errs := countErrors(probs)
	if o.json {
		err := inspect.Encode(stdout, struct {
			File     string            `json:"file"`
			OK       bool              `json:"ok"`
			Errors   int               `json:"errors"`
			Warnings int               `json:"warnings"`
			Findings []inspect.Problem `json:"findings"`
		}{name, errs == 0, errs, len(probs) - errs, nonNil(probs)})
		if err != nil {
			return failErr(stderr, name, err)
		}
	} else {
		for _, p := range probs {
			fmt.Fprintln(stdout, escText(p.String()))
		}
		fmt.Fprintf(stdout, "%s: %d error(s), %d warning(s)\n", esc(name), errs, len(probs)-errs)
	}
	if errs > 0 {
		return exitFail
	}
	return exitOK
}

// printExternalData prints where each EXTERNAL tensor comes from (with
// --data) or, without data files, which keys the program needs.
func printExternalData(w io.Writer, p *pte.Program, ext *inspect.ExternalData) {
	if ext == nil {
		if keys := inspect.NeededKeys(p); len(keys) > 0 {
			fmt.Fprintf(w, "\nexternal data: needs %d key(s) from .ptd files, none given (pass --data FILE.ptd): %s\n",
				len(keys), escText(quoteAll(keys)))
		}
		return
	}
	fmt.Fprintf(w, "\nexternal data (%d file(s))\n", len(ext.Files))
	t := newTable(w, "  ")
	for i, f := range ext.Files {
		state := fmt.Sprintf("loads, %d key(s)", len(f.Keys))
		if !f.OK {
			state = "FAILS: " + statusText(f.DataStatus)
		} else if f.Legacy {
			state += " (older layout: ExecuTorch misreads it)"
		}
		t.row(fmt.Sprintf("[%d]", i), esc(f.Name), state)
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
					from += fmt.Sprintf(" @%d, %s", *x.Offset, humanSize(*x.Size))
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
	return s.Error.Kind + ": " + oneLine(s.Error.Message)
}

// runPTDDiff compares two .ptd files (diff with both sides .ptd).
func runPTDDiff(names []string, asJSON, layout bool, stdout, stderr io.Writer) int {
	var docs [2]*inspect.PTDDocument
	for i, name := range names {
		f, err := ptd.Open(name)
		if err != nil {
			failErr(stderr, name, err)
			return exitUsage
		}
		docs[i], err = inspect.BuildPTD(f, true)
		f.Close()
		if err != nil {
			failErr(stderr, name, err)
			return exitUsage
		}
	}
	diffs, err := inspect.DiffPTD(docs[0], docs[1], &inspect.DiffOptions{Layout: layout})
	if err != nil {
		fmt.Fprintf(stderr, "pteinspect: diff: %v\n", err)
		return exitUsage
	}
	return printDiffs(stdout, stderr, diffs, asJSON)
}
