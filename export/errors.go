package export

import (
	"fmt"
	"strings"
)

// Error reports a problem with a program description or its options. It
// names the method, engine call and tensor concerned when there is one.
type Error struct {
	Method string // method name, "" when not method-specific
	// CallIndex is the index of the engine call in Method.Calls, or -1 when
	// the error is not about one engine call.
	CallIndex int
	Call      string // the engine call's Name, "" when unnamed
	Tensor    string // tensor name
	Msg       string // what is wrong, lower case
	Err       error  // underlying cause, may be nil
}

// newError returns an Error that is not about one engine call.
func newError(method, tensor, msg string, err error) *Error {
	return &Error{Method: method, CallIndex: -1, Tensor: tensor, Msg: msg, Err: err}
}

// Error formats the error as
// `export: method "m", engine calls[i] ("name"), tensor "t": msg: cause`.
func (e *Error) Error() string {
	var where []string
	if e.Method != "" {
		where = append(where, fmt.Sprintf("method %q", e.Method))
	}
	if e.CallIndex >= 0 {
		where = append(where, "engine "+callLabel(e.CallIndex, e.Call))
	}
	if e.Tensor != "" {
		where = append(where, fmt.Sprintf("tensor %q", e.Tensor))
	}
	s := "export: "
	if len(where) > 0 {
		s += strings.Join(where, ", ") + ": "
	}
	s += e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// callLabel names engine call i in messages: `calls[i] ("name")`.
func callLabel(i int, name string) string {
	if name != "" {
		return fmt.Sprintf("calls[%d] (%q)", i, name)
	}
	return fmt.Sprintf("calls[%d]", i)
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// WarningKind classifies a Warning.
type WarningKind string

// Warning kinds.
const (
	// WarnMultipleEngines: a method calls more than one engine, and each
	// call pays the delegate boundary.
	WarnMultipleEngines WarningKind = "multiple-engines"
	// WarnBudgetPerEngine: a budget is set on a method with several
	// engines; it applies to each engine separately.
	WarnBudgetPerEngine WarningKind = "budget-per-engine"
	// WarnDeviceMismatch: a pinned target_device disagrees with an
	// engine's device id.
	WarnDeviceMismatch WarningKind = "device-mismatch"
	// WarnUnusedInput: a method input is neither consumed nor returned.
	WarnUnusedInput WarningKind = "unused-input"
	// WarnBadBudgetSpec: a re-baked program keeps a delegate's
	// weight_streaming_budget that the TensorRT delegate refuses (given
	// twice, or not a byte count).
	WarnBadBudgetSpec WarningKind = "bad-budget-spec"
	// WarnInput: the reader's verifier has a warning about a re-baked input
	// program.
	WarnInput WarningKind = "input"
	// WarnLayout: no segment alignment reproduces a re-baked input's
	// segment layout, so its segments are laid out anew at 128 bytes.
	WarnLayout WarningKind = "layout"
	// WarnInPlace: an in-place re-bake rewrote the whole file instead,
	// because the re-baked program does not fit before the segment base.
	WarnInPlace WarningKind = "in-place"
	// WarnCopyRefused: the object store refused a server-side copy, so an
	// in-store re-bake sent the input's bytes through ptekit instead.
	WarnCopyRefused WarningKind = "copy-refused"
	// WarnOrphanUpload: a multipart upload to the output key, left by a
	// writer that did not finish, is still in the store.
	WarnOrphanUpload WarningKind = "orphan-upload"
	// WarnReplacedVersion: the output replaced an object of a versioned
	// bucket, which keeps the replaced version (its id is in the message,
	// with how to restore it): the object store's counterpart of the
	// file a local --force replaces.
	WarnReplacedVersion WarningKind = "replaced-version"
	// WarnUndoRecord: an interrupted in-place re-bake left its undo record
	// beside the input, which a re-bake that is not in place does not
	// apply: the input was read as it is (RecoverInPlace applies it).
	WarnUndoRecord WarningKind = "undo-record"
)

// Warning is a condition that does not stop the export but deserves the
// user's attention. Warnings are returned in Result.Warnings.
type Warning struct {
	Kind   WarningKind
	Method string
	Msg    string
}

// String returns the warning as one line.
func (w Warning) String() string {
	if w.Method == "" {
		return "warning: " + w.Msg
	}
	return fmt.Sprintf("warning: method %q: %s", w.Method, w.Msg)
}
