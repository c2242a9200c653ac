package pte

import (
	"fmt"
	"strconv"
)

// Code is an ExecuTorch runtime error code (runtime/core/error.h). It says
// which class of failure ExecuTorch's loader would report for the same
// problem, so tools can predict the deployed behaviour.
type Code uint8

// ExecuTorch error codes used by this module.
const (
	CodeOk               Code = 0x00
	CodeInternal         Code = 0x01
	CodeInvalidState     Code = 0x02
	CodeNotSupported     Code = 0x10
	CodeNotImplemented   Code = 0x11
	CodeInvalidArgument  Code = 0x12
	CodeInvalidType      Code = 0x13
	CodeOperatorMissing  Code = 0x14
	CodeNotFound         Code = 0x20
	CodeMemoryAllocation Code = 0x21
	CodeAccessFailed     Code = 0x22
	CodeInvalidProgram   Code = 0x23
	CodeInvalidExternal  Code = 0x24
	CodeOutOfResources   Code = 0x25
	CodeDelegateIncompat Code = 0x30
)

var codeNames = map[Code]string{
	CodeOk:               "Ok",
	CodeInternal:         "Internal",
	CodeInvalidState:     "InvalidState",
	CodeNotSupported:     "NotSupported",
	CodeNotImplemented:   "NotImplemented",
	CodeInvalidArgument:  "InvalidArgument",
	CodeInvalidType:      "InvalidType",
	CodeOperatorMissing:  "OperatorMissing",
	CodeNotFound:         "NotFound",
	CodeMemoryAllocation: "MemoryAllocationFailed",
	CodeAccessFailed:     "AccessFailed",
	CodeInvalidProgram:   "InvalidProgram",
	CodeInvalidExternal:  "InvalidExternalData",
	CodeOutOfResources:   "OutOfResources",
	CodeDelegateIncompat: "DelegateInvalidCompatibility",
}

// String returns ExecuTorch's name for the code, e.g. "InvalidProgram".
func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("Code(0x%02x)", uint8(c))
}

// FormatError reports malformed or unloadable input. It says where the
// problem is (a byte offset in the file and, when known, the path of the
// field in the program) and which ExecuTorch error class the deployed
// runtime would report for it. Errors returned by this package wrap a
// *FormatError whenever the input is at fault; use errors.As to get it.
type FormatError struct {
	// Off is the absolute byte offset in the file, or -1 when the problem has
	// no single location.
	Off int64
	// Path names the field, e.g. "execution_plan[2].delegates[0].processed.index";
	// empty for file-level problems.
	Path string
	// Msg says what is wrong, in lower case without trailing punctuation.
	Msg string
	// Code is the error class ExecuTorch's loader would report.
	Code Code
}

// Error formats the error as "pte: <path>: <msg> (at byte <off>)".
func (e *FormatError) Error() string {
	s := "pte: "
	if e.Path != "" {
		s += e.Path + ": "
	}
	s += e.Msg
	if e.Off >= 0 {
		s += " (at byte " + strconv.FormatInt(e.Off, 10) + ")"
	}
	return s
}
