package delegate

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON parser that keeps the byte offset of every value, so
// metadata errors can say where they are. It accepts exactly what Python's
// json.loads accepts, including its two extensions of JSON: the NaN,
// Infinity and -Infinity literals, and unpaired UTF-16 surrogates in \u
// escapes (a Go string cannot carry them: they become U+FFFD). Each use of
// an extension is recorded, so the strict reading can refuse it. Input must
// already be valid UTF-8.

type jsonKind uint8

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

var jsonKindNames = [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}

// jsonValue is a parsed value. Object members keep their order and
// duplicates; lookups take the last (as Python's dict does).
type jsonValue struct {
	kind  jsonKind
	off   int    // offset of the value's first byte
	b     bool   // jsonBool
	text  string // jsonNumber: its literal; jsonString: the decoded string
	elems []*jsonValue
	keys  []string // jsonObject
}

// describe names the value for error messages, e.g. `the number 1.5`.
func (v *jsonValue) describe() string {
	switch v.kind {
	case jsonNull:
		return "null"
	case jsonBool:
		return fmt.Sprintf("the boolean %t", v.b)
	case jsonNumber:
		return "the number " + v.text
	case jsonString:
		return "the string " + fmt.Sprintf("%q", truncate(v.text, 40))
	}
	return jsonKindNames[v.kind]
}

// member returns the last value of key in an object, or nil.
func (v *jsonValue) member(key string) *jsonValue {
	for i := len(v.keys) - 1; i >= 0; i-- {
		if v.keys[i] == key {
			return v.elems[i]
		}
	}
	return nil
}

// jsonSyntaxError is a syntax error at an offset of the parsed text.
type jsonSyntaxError struct {
	off int
	msg string
}

func (e *jsonSyntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.msg, e.off) }

// jsonLimitError reports valid JSON that goes past one of ptekit's limits.
type jsonLimitError jsonSyntaxError

func (e *jsonLimitError) Error() string { return (*jsonSyntaxError)(e).Error() }

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

type jsonParser struct {
	s      []byte
	p      int
	depth  int
	values int                // values started so far, at most MaxMetadataValues
	ext    []*jsonSyntaxError // uses of Python's extensions of JSON
}

// parseJSON parses one JSON value surrounded by optional whitespace, and
// lists where it uses Python's extensions of JSON.
func parseJSON(s []byte) (*jsonValue, []*jsonSyntaxError, error) {
	d := &jsonParser{s: s}
	d.space()
	v, err := d.value()
	if err != nil {
		return nil, nil, err
	}
	d.space()
	if d.p != len(s) {
		return nil, nil, d.errf("extra data after the JSON value")
	}
	return v, d.ext, nil
}

// extension records a use of a Python extension at offset off.
func (d *jsonParser) extension(off int, format string, args ...any) {
	d.ext = append(d.ext, &jsonSyntaxError{off: off, msg: fmt.Sprintf(format, args...)})
}

func (d *jsonParser) errf(format string, args ...any) error {
	return &jsonSyntaxError{off: d.p, msg: fmt.Sprintf(format, args...)}
}

func (d *jsonParser) space() {
	for d.p < len(d.s) {
		switch d.s[d.p] {
		case ' ', '\t', '\n', '\r':
			d.p++
		default:
			return
		}
	}
}

func (d *jsonParser) value() (*jsonValue, error) {
	if d.p >= len(d.s) {
		return nil, d.errf("expecting a value, found the end of the text")
	}
	if d.values++; d.values > MaxMetadataValues {
		return nil, &jsonLimitError{off: d.p, msg: fmt.Sprintf("more than %d JSON values, the most ptekit reads", MaxMetadataValues)}
	}
	v := &jsonValue{off: d.p}
	switch c := d.s[d.p]; {
	case c == '{' || c == '[':
		if d.depth++; d.depth > maxJSONDepth {
			return nil, d.errf("nesting deeper than %d levels (Python's json.loads fails with RecursionError somewhat below 1000)", maxJSONDepth)
		}
		defer func() { d.depth-- }()
		if c == '{' {
			return v, d.object(v)
		}
		return v, d.array(v)
	case c == '"':
		v.kind = jsonString
		s, err := d.string()
		v.text = s
		return v, err
	case c == '-' || c >= '0' && c <= '9':
		v.kind = jsonNumber
		return v, d.number(v)
	}
	for _, lit := range [...]string{"NaN", "Infinity"} {
		if d.hasPrefix(lit) {
			d.extension(d.p, "%s is not JSON (Python's json module accepts it)", lit)
			d.p += len(lit)
			v.kind, v.text = jsonNumber, lit
			return v, nil
		}
	}
	for _, lit := range [...]struct {
		text string
		kind jsonKind
		b    bool
	}{{"true", jsonBool, true}, {"false", jsonBool, false}, {"null", jsonNull, false}} {
		if d.hasPrefix(lit.text) {
			d.p += len(lit.text)
			v.kind, v.b = lit.kind, lit.b
			return v, nil
		}
	}
	r, _ := utf8.DecodeRune(d.s[d.p:])
	return nil, d.errf("expecting a value, found %q", r)
}

func (d *jsonParser) hasPrefix(lit string) bool {
	return strings.HasPrefix(string(d.s[d.p:min(len(d.s), d.p+len(lit))]), lit)
}

func (d *jsonParser) object(v *jsonValue) error {
	v.kind = jsonObject
	v.keys, v.elems = []string{}, []*jsonValue{}
	d.p++
	d.space()
	if d.p < len(d.s) && d.s[d.p] == '}' {
		d.p++
		return nil
	}
	for {
		d.space()
		if d.p >= len(d.s) || d.s[d.p] != '"' {
			return d.errf("expecting a property name in double quotes")
		}
		k, err := d.string()
		if err != nil {
			return err
		}
		d.space()
		if d.p >= len(d.s) || d.s[d.p] != ':' {
			return d.errf("expecting ':' after property name %q", k)
		}
		d.p++
		d.space()
		e, err := d.value()
		if err != nil {
			return err
		}
		v.keys, v.elems = append(v.keys, k), append(v.elems, e)
		d.space()
		if d.p >= len(d.s) {
			return d.errf("unterminated object")
		}
		switch d.s[d.p] {
		case ',':
			d.p++
		case '}':
			d.p++
			return nil
		default:
			return d.errf("expecting ',' or '}' in object")
		}
	}
}

func (d *jsonParser) array(v *jsonValue) error {
	v.kind = jsonArray
	v.elems = []*jsonValue{}
	d.p++
	d.space()
	if d.p < len(d.s) && d.s[d.p] == ']' {
		d.p++
		return nil
	}
	for {
		d.space()
		e, err := d.value()
		if err != nil {
			return err
		}
		v.elems = append(v.elems, e)
		d.space()
		if d.p >= len(d.s) {
			return d.errf("unterminated array")
		}
		switch d.s[d.p] {
		case ',':
			d.p++
		case ']':
			d.p++
			return nil
		default:
			return d.errf("expecting ',' or ']' in array")
		}
	}
}

// number checks the JSON number grammar and keeps the literal.
func (d *jsonParser) number(v *jsonValue) error {
	start := d.p
	if d.hasPrefix("-Infinity") {
		d.extension(d.p, "-Infinity is not JSON (Python's json module accepts it)")
		d.p += len("-Infinity")
		v.text = "-Infinity"
		return nil
	}
	digits := func() int {
		n := 0
		for d.p < len(d.s) && d.s[d.p] >= '0' && d.s[d.p] <= '9' {
			d.p++
			n++
		}
		return n
	}
	if d.s[d.p] == '-' {
		d.p++
	}
	intDigits := 1
	if d.p < len(d.s) && d.s[d.p] == '0' {
		d.p++
	} else if intDigits = digits(); intDigits == 0 {
		return d.errf("expecting a digit")
	}
	if d.p < len(d.s) && d.s[d.p] == '.' {
		d.p++
		if digits() == 0 {
			return d.errf("expecting a digit after '.'")
		}
	}
	if d.p < len(d.s) && (d.s[d.p] == 'e' || d.s[d.p] == 'E') {
		d.p++
		if d.p < len(d.s) && (d.s[d.p] == '+' || d.s[d.p] == '-') {
			d.p++
		}
		if digits() == 0 {
			return d.errf("expecting a digit in the exponent")
		}
	}
	v.text = string(d.s[start:d.p])
	if intDigits > maxIntDigits && !strings.ContainsAny(v.text, ".eE") {
		d.p = start
		return d.errf("integer with %d digits, more than the %d Python's int() reads", intDigits, maxIntDigits)
	}
	return nil
}

// string decodes a string starting at its opening quote.
func (d *jsonParser) string() (string, error) {
	d.p++
	var b strings.Builder
	for {
		start := d.p
		for d.p < len(d.s) && d.s[d.p] != '"' && d.s[d.p] != '\\' && d.s[d.p] >= 0x20 {
			d.p++
		}
		b.Write(d.s[start:d.p])
		if d.p >= len(d.s) {
			return "", d.errf("unterminated string")
		}
		switch c := d.s[d.p]; {
		case c == '"':
			d.p++
			return b.String(), nil
		case c < 0x20:
			return "", d.errf("invalid control character %q in string", rune(c))
		}
		// A backslash escape.
		if d.p+1 >= len(d.s) {
			return "", d.errf("unterminated string")
		}
		e := d.s[d.p+1]
		if r, ok := simpleEscapes[e]; ok {
			b.WriteByte(r)
			d.p += 2
			continue
		}
		if e != 'u' {
			return "", d.errf("invalid escape \\%c", e)
		}
		r, ok := d.hex4(d.p + 2)
		if !ok {
			return "", d.errf("invalid \\u escape")
		}
		d.p += 6
		if utf16.IsSurrogate(r) {
			lo, ok := rune(-1), false
			if r < 0xdc00 && d.p+1 < len(d.s) && d.s[d.p] == '\\' && d.s[d.p+1] == 'u' {
				lo, ok = d.hex4(d.p + 2)
			}
			if ok && lo >= 0xdc00 && lo <= 0xdfff {
				r = utf16.DecodeRune(r, lo)
				d.p += 6
			} else {
				d.extension(d.p-6, "unpaired UTF-16 surrogate \\u%04x (Python's json module accepts it; ptekit reads it as U+FFFD)", r)
				r = utf8.RuneError
			}
		}
		b.WriteRune(r)
	}
}

var simpleEscapes = map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

func (d *jsonParser) hex4(p int) (rune, bool) {
	if p+4 > len(d.s) {
		return 0, false
	}
	var r rune
	for _, c := range d.s[p : p+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
