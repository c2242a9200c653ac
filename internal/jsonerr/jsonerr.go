// Package jsonerr is the failure object of docs/json.md, which both
// commands print with --json when there is no result: what went wrong, as
// an ExecuTorch error class, a message, and where in the file. It sits
// above the format packages and executor (whose error classes it names)
// and below inspect and the commands, so that pteexport needs no view
// package to print it.
package jsonerr

import (
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/ptekit/ptekit/executor"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// Object says why a --json run has no result to print; it is the "error"
// member of the failure object (docs/json.md).
type Object struct {
	// Kind is the ExecuTorch error class in snake case ("invalid_program",
	// "invalid_argument", "not_found", ...), "access_failed" when the
	// file cannot be read, or "usage" for a command line that cannot run.
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Offset is the file offset of the damage, nil when there is none.
	Offset *int64 `json:"offset"`
	// Path locates the damage in the program, in the names of the
	// problems' paths; "" when it is about the file as a whole.
	Path string `json:"path"`
}

// UsageError is a command line that asks for something impossible; its
// failure object has kind "usage".
type UsageError struct{ Msg string }

// Error returns the message as given.
func (e *UsageError) Error() string { return e.Msg }

// NotFound returns an error with the given text whose failure object has
// kind "not_found": a name (a method, a backend) that names nothing in the
// file. Compare it with errors.Is, as a sentinel.
func NotFound(text string) error { return &notFound{text} }

type notFound struct{ text string }

func (e *notFound) Error() string { return e.text }

// New describes err, a failure to read, open or narrow a program.
func New(err error) *Object {
	out := &Object{Message: strings.Join(strings.Fields(err.Error()), " ")}
	code := pte.CodeAccessFailed
	if fe, ok := errors.AsType[*pte.FormatError](err); ok {
		code, out.Path, out.Offset = fe.Code, fe.Path, offset(fe.Off)
	} else if pe, ok := errors.AsType[*ptd.FormatError](err); ok {
		code, out.Path, out.Offset = pe.Code, pe.Path, offset(pe.Off)
	} else if re, ok := errors.AsType[*executor.Error](err); ok {
		code = re.Code
	} else if _, ok := errors.AsType[*notFound](err); ok {
		code = pte.CodeNotFound
	}
	out.Kind = executor.KindOf(code)
	if _, ok := errors.AsType[*UsageError](err); ok {
		out.Kind = "usage"
	}
	return out
}

// offset is a byte offset for Object.Offset: nil for -1, no single place.
func offset(off int64) *int64 {
	if off < 0 {
		return nil
	}
	return &off
}

// Write prints the failure object {"error": o}, indented by two spaces and
// with no HTML escaping, as every --json document is.
func Write(w io.Writer, o *Object) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Error *Object `json:"error"`
	}{o})
}
