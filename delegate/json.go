package delegate

import (
	"fmt"
	"sync"

	"github.com/ptekit/ptekit/internal/jsontree"
)

// The metadata is read by internal/jsontree, which keeps the byte offset
// of every value so that metadata errors can say where they are, with
// Python's extensions of JSON on: it accepts exactly what Python's
// json.loads accepts, the NaN, Infinity and -Infinity literals and
// unpaired UTF-16 surrogates in \u escapes (a Go string cannot carry them:
// they become U+FFFD) included, and reports each use of an extension so
// the strict reading can refuse it. Input must already be valid UTF-8.

// arenas holds the memory of metadata trees between blobs: a tree is read
// into a PyMetadata, which keeps nothing of it, and dropped, once per
// delegate.
var arenas = sync.Pool{New: func() any { return new(jsontree.Arena) }}

// maxPooledMetadata bounds the metadata whose tree's memory is kept for
// the next blob: real metadata is a few hundred bytes.
const maxPooledMetadata = 64 << 10

// jsonValue is a parsed value. Object members keep their order and
// duplicates; lookups (Member) take the last, as Python's dict does.
type jsonValue = jsontree.Value

// describe names the value for error messages, e.g. `the number 1.5`.
func describe(v *jsonValue) string {
	switch v.Kind {
	case jsontree.Null:
		return "null"
	case jsontree.Bool:
		return fmt.Sprintf("the boolean %t", v.Bool)
	case jsontree.Number:
		return "the number " + v.Text
	case jsontree.String:
		return "the string " + fmt.Sprintf("%q", truncate(v.Text, 40))
	}
	return v.Kind.String()
}

// maxJSONDepth is the deepest nesting of arrays and objects read. Python's
// json.loads has no limit of its own: its C scanner counts each level
// against the interpreter's recursion limit (1000 by default), together
// with the frames of whatever called it on CPython 3.11 and earlier, or
// against a separate C recursion limit on 3.12 and later, and fails with
// RecursionError past it. So the depth at which upstream's reader fails
// depends on the Python version and on the call stack around
// deserialize_engine: somewhere below 1000 with default settings, not a
// fixed number (no vector probes it). ptekit stops at 900, leaving 100
// levels for the caller's frames, so that what it reads Python reads too;
// between 900 and Python's actual limit it refuses nesting Python may
// read. Real metadata nests four levels.
const maxJSONDepth = 900

// maxIntDigits is the most digits Python's int() converts from text (its
// default int_max_str_digits); json.loads fails on a longer integer.
const maxIntDigits = 4300

// parseJSON parses metadata found at blob offset base, one JSON value
// surrounded by optional white space, into a, and lists where it uses
// Python's extensions of JSON. Its errors are *BlobErrors. The tree is
// a's: valid until a parses again.
func parseJSON(a *jsontree.Arena, md []byte, base int64) (*jsonValue, []jsontree.Extension, error) {
	v, ext, err := a.Parse(md, jsontree.Options{
		MaxDepth: maxJSONDepth, MaxValues: MaxMetadataValues, MaxIntDigits: maxIntDigits, Python: true,
	})
	if err == nil {
		return v, ext, nil
	}
	be := &BlobError{Field: "metadata"}
	switch e := err.(type) {
	case *jsontree.SyntaxError:
		be.Off, be.Msg = base+int64(e.Off), "invalid JSON: "+e.Msg
	case *jsontree.LimitError:
		be.Off = base + int64(e.Off)
		switch e.Limit {
		case jsontree.LimitValues:
			be.Msg = fmt.Sprintf("more than %d JSON values, the most ptekit reads", e.Max)
		case jsontree.LimitDepth:
			be.Msg = fmt.Sprintf("invalid JSON: nesting deeper than %d levels (Python's json.loads fails with RecursionError somewhat below 1000)", e.Max)
		default:
			be.Msg = fmt.Sprintf("invalid JSON: integer with %d digits, more than the %d Python's int() reads", e.N, e.Max)
		}
	default:
		return nil, nil, err
	}
	return nil, nil, be
}
