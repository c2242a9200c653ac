package executor

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/ptekit/ptekit/pte"
)

// Error codes used by this package; they are ExecuTorch's (see pte.Code).
const (
	CodeInternal        = pte.CodeInternal
	CodeInvalidState    = pte.CodeInvalidState
	CodeNotSupported    = pte.CodeNotSupported
	CodeInvalidArgument = pte.CodeInvalidArgument
	CodeNotFound        = pte.CodeNotFound
	CodeInvalidProgram  = pte.CodeInvalidProgram
)

// Error is a load failure. Code is the ExecuTorch error class
// the deployed runtime reports for the same failure, except when Err is
// ErrOutcomeUnknown (the failure is ptekit's, with CodeNotSupported, and the
// deployed runtime's verdict is unknown); Method, Delegate, Backend and
// Instruction say where it happened when known.
type Error struct {
	// Code is the ExecuTorch error code the failure maps to.
	Code        pte.Code
	Method      string // method name, "" when not method-specific
	Delegate    int    // delegate index in the method, -1 when not about a delegate
	Backend     string // backend id, "" when not about a backend
	Instruction int    // index of the instruction in its chain, -1 when not about one
	Msg         string // what went wrong, lower case
	Err         error  // underlying error, may be nil
	// Plans holds, for a LoadMethod failure, the plans the backends
	// reported before it (the failing delegate's included when its backend
	// reported one), so that a failed load still shows every decision.
	Plans []*Plan
}

// ErrOutcomeUnknown is wrapped by a load error (errors.Is) when ptekit
// stopped short of what the deployed runtime would do, so that whether the
// deployed runtime loads the method is unknown: the program is not known to
// be invalid. The TensorRT backend returns it, with CodeNotSupported, for a
// blob whose metadata is larger than delegate.MaxMetadataSize, which ptekit
// does not read and the deployed reader would scan.
var ErrOutcomeUnknown = errors.New("not read by ptekit, so the deployed load outcome is unknown")

// errorf returns an *Error with no location; callers fill it in.
func errorf(code pte.Code, format string, args ...any) *Error {
	return wrapError(code, fmt.Sprintf(format, args...), nil)
}

// wrapError returns an *Error with no location whose cause is err.
func wrapError(code pte.Code, msg string, err error) *Error {
	return &Error{Code: code, Delegate: -1, Instruction: -1, Msg: msg, Err: err}
}

// Errorf returns an *Error with the given code and message. Backends use it
// to report failures with an ExecuTorch error class; the loader adds the
// method, delegate and backend.
func Errorf(code pte.Code, format string, args ...any) error {
	return errorf(code, format, args...)
}

// Error formats the error as
// `runtime: method "forward" delegate 0 (TensorRTBackend): MSG: CODE`.
// The prefix is still "runtime:" (the package's former name) because these
// messages are part of what `pteinspect --plan --json` prints.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("runtime:")
	if e.Method != "" {
		fmt.Fprintf(&b, " method %q", e.Method)
	}
	if e.Instruction >= 0 {
		fmt.Fprintf(&b, " instruction %d", e.Instruction)
	}
	if e.Delegate >= 0 {
		fmt.Fprintf(&b, " delegate %d", e.Delegate)
	}
	if e.Backend != "" {
		fmt.Fprintf(&b, " (%s)", e.Backend)
	}
	if b.Len() > len("runtime:") {
		b.WriteString(":")
	}
	b.WriteString(" " + e.Msg)
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	b.WriteString(" [" + e.Code.String() + "]")
	return b.String()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Kind returns the code's name in snake case, as the JSON outputs spell it:
// "invalid_program", "invalid_argument", "not_found", ...
func (e *Error) Kind() string { return KindOf(e.Code) }

// KindOf converts an ExecuTorch error code to snake case: InvalidProgram
// becomes "invalid_program".
func KindOf(c pte.Code) string {
	var b strings.Builder
	for i, r := range c.String() {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// CodeOf returns the ExecuTorch error class of err: the Code of an *Error or
// *pte.FormatError in its chain, CodeOk for nil, and CodeInternal otherwise.
func CodeOf(err error) pte.Code {
	if err == nil {
		return pte.CodeOk
	}
	if re, ok := errors.AsType[*Error](err); ok {
		return re.Code
	}
	if fe, ok := errors.AsType[*pte.FormatError](err); ok {
		return fe.Code
	}
	return CodeInternal
}

// locate returns err as an *Error carrying the given location, keeping a
// backend-supplied code. Fields already set are kept.
func locate(err error, method string, delegate int, backend string) *Error {
	if re, ok := errors.AsType[*Error](err); ok {
		out := *re
		out.Method, out.Backend = cmp.Or(out.Method, method), cmp.Or(out.Backend, backend)
		if out.Delegate < 0 {
			out.Delegate = delegate
		}
		return &out
	}
	return &Error{Code: CodeOf(err), Method: method, Delegate: delegate, Backend: backend, Instruction: -1,
		Msg: "failed", Err: err}
}
