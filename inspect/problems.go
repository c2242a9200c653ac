package inspect

import (
	"github.com/ptekit/ptekit/check"
	"github.com/ptekit/ptekit/pte"
)

// Severities of a Problem (check.SeverityError, check.SeverityWarning).
const (
	SeverityError   = check.SeverityError   // ExecuTorch refuses the program, a method or a delegate, or misbehaves
	SeverityWarning = check.SeverityWarning // legal but suspicious or unportable
)

// Problem is one finding of Check (package check's verdict): what is
// wrong, where, and what ExecuTorch does about it.
type Problem = check.Problem

// UndoRecordProblem is the warning that an undo record of an interrupted
// in-place re-bake lies beside the file, with msg saying what to do
// (undorecord.Notice.Message): the file is shown as it is, not repaired.
// Its message starts with "undo-record: "; its path is "" (the file as a
// whole).
func UndoRecordProblem(msg string) Problem {
	return Problem{Severity: SeverityWarning, Message: "undo-record: " + msg}
}

// Check runs every check ptekit knows on an opened program: check.Program,
// the verdict `pteinspect --verify` prints and export.Rebake refuses an
// input on. The error is only for failures to read the file.
func Check(f *pte.File) ([]Problem, error) {
	return check.Program(f)
}
