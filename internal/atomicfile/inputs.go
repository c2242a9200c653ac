package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// InputError refuses an output that is one of the command's inputs:
// writing it would replace a file the output is made from.
type InputError struct {
	Output string // the output path, as given
	Input  string // the input it names, as given
	// Via says how: "" when both name the same path, "symbolic link" when
	// one reaches the other through a symbolic link, "hard link" when they
	// are different names (hard links) of one file.
	Via string
}

// Error says which input the output is, e.g. "out.engine is the input
// file e1.engine (through a symbolic link)".
func (e *InputError) Error() string {
	s := e.Output + " is the input file"
	if e.Input != e.Output {
		s += " " + e.Input
	}
	switch e.Via {
	case "symbolic link":
		s += " (through a symbolic link)"
	case "hard link":
		s += " (another hard link to it)"
	}
	return s
}

// input is an input and the file it named when the output was created.
type input struct {
	path string
	st   fs.FileInfo
}

// checkInputs refuses output (whose FileInfo is out, nil when it does not
// exist) when it is one of inputs: the same path, a path that reaches it
// through symbolic links, or another hard link to it (same device and
// inode); inputs that do not exist are compared by path only. It returns
// the inputs that exist, for Commit to check again.
func checkInputs(output string, out fs.FileInfo, inputs []string) ([]input, error) {
	var ins []input
	for _, in := range inputs {
		st, err := os.Stat(in)
		if err != nil {
			if samePath(output, in) {
				return nil, &InputError{Output: output, Input: in}
			}
			continue
		}
		if out != nil && os.SameFile(out, st) {
			return nil, newInputError(output, in)
		}
		ins = append(ins, input{in, st})
	}
	return ins, nil
}

// newInputError refuses output, which is the same file as in, saying how.
func newInputError(output, in string) *InputError {
	e := &InputError{Output: output, Input: in}
	switch {
	case samePath(output, in):
	case sameResolved(output, in):
		e.Via = "symbolic link"
	default:
		e.Via = "hard link"
	}
	return e
}

// samePath reports whether a and b name the same path, symbolic links
// aside.
func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	ab, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == ab
}

// sameResolved reports whether a and b are the same path once symbolic
// links are resolved.
func sameResolved(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && samePath(ra, rb)
}
