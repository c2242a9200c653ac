package ptd

import (
	"fmt"
	"strconv"

	"github.com/ptekit/ptekit/pte"
)

// FormatError reports a malformed or unloadable .ptd file, or a lookup that
// ExecuTorch would fail. It says where (a byte offset and, when known, the
// field path in the FlatTensor table) and which ExecuTorch error class the
// runtime returns for it. Errors returned by this package wrap a
// *FormatError whenever the input is at fault; use errors.As to get it.
type FormatError struct {
	// Off is the absolute byte offset in the file, or -1 when the problem
	// has no single location.
	Off int64
	// Path names the field, e.g. "named_data[1].segment_index"; empty for
	// file-level problems.
	Path string
	// Msg says what is wrong, in lower case without trailing punctuation.
	Msg string
	// Code is the error ExecuTorch returns for it (FlatTensorDataMap::load,
	// its lookups, or the method load that uses them).
	Code pte.Code
	// Undefined is set when ExecuTorch has no check for the problem: it
	// reads outside its buffer or misinterprets bytes, so its behaviour is
	// undefined (recorded runs crash with SIGSEGV). Code is then the error
	// ptekit reports, CodeInvalidExternalData, not an upstream result.
	Undefined bool
}

// Error formats the error as "ptd: <path>: <msg> (at byte <off>)".
func (e *FormatError) Error() string {
	s := "ptd: "
	if e.Path != "" {
		s += e.Path + ": "
	}
	s += e.Msg
	if e.Off >= 0 {
		s += " (at byte " + strconv.FormatInt(e.Off, 10) + ")"
	}
	return s
}

// Finding is something a reader accepted but reports: a warning about the
// file, or the older-layout notice.
type Finding struct {
	// Severity is pte.SeverityError or pte.SeverityWarning.
	Severity pte.Severity
	// Err says what and where; Err.Code is what ExecuTorch returns when the
	// problem matters (CodeOk for warnings it never notices).
	Err *FormatError
}

// String formats the finding as "warning: ptd: path: msg (at byte N) [Code]".
func (fd Finding) String() string {
	return fmt.Sprintf("%s: %v [%v]", fd.Severity, fd.Err, fd.Err.Code)
}
